//! Firmware identities reported in alive records.

/// Which firmware image a core runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum FirmwareId {
    Prefetch = 1,
    Dispatch = 2,
    /// The resident worker loop; kernels are separate images it calls
    /// (see `program`).
    Worker = 3,
}

impl FirmwareId {
    pub const ALL: [FirmwareId; 3] = [Self::Prefetch, Self::Dispatch, Self::Worker];

    pub const fn from_u32(v: u32) -> Option<Self> {
        match v {
            1 => Some(Self::Prefetch),
            2 => Some(Self::Dispatch),
            3 => Some(Self::Worker),
            _ => None,
        }
    }
    /// Name of the firmware binary (and of the ELF file).
    pub const fn name(self) -> &'static str {
        match self {
            Self::Prefetch => "prefetch",
            Self::Dispatch => "dispatch",
            Self::Worker => "worker",
        }
    }
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|f| f.name() == name)
    }
}
