//! Firmware identities reported in alive records.

/// Which firmware image a core runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum FirmwareId {
    Prefetch = 1,
    Dispatch = 2,
    Noop = 3,
    Spin = 4,
    Copy = 5,
    Matmul = 6,
}

impl FirmwareId {
    pub const ALL: [FirmwareId; 6] = [Self::Prefetch, Self::Dispatch, Self::Noop, Self::Spin, Self::Copy, Self::Matmul];

    pub const fn from_u32(v: u32) -> Option<Self> {
        match v {
            1 => Some(Self::Prefetch),
            2 => Some(Self::Dispatch),
            3 => Some(Self::Noop),
            4 => Some(Self::Spin),
            5 => Some(Self::Copy),
            6 => Some(Self::Matmul),
            _ => None,
        }
    }
    /// Name of the firmware binary (and of the ELF file).
    pub const fn name(self) -> &'static str {
        match self {
            Self::Prefetch => "prefetch",
            Self::Dispatch => "dispatch",
            Self::Noop => "noop",
            Self::Spin => "spin",
            Self::Copy => "copy",
            Self::Matmul => "matmul",
        }
    }
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|f| f.name() == name)
    }
}
