//! Which of a chip's two NOCs: a leaf the register modules share, so none
//! of them depends on the `arch` module that gathers them.

/// One of the two NOCs of a chip.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Noc {
    /// Routes X first then Y, towards +x and +y (right and down), wrapping.
    Noc0,
    /// Routes Y first then X, towards -x and -y (left and up), wrapping.
    Noc1,
}

impl Noc {
    pub const ALL: [Noc; 2] = [Noc::Noc0, Noc::Noc1];

    /// 0 or 1, as in `NOC_CMD_BUF_INSTANCE_OFFSET(noc, buf)` and the TLB
    /// `noc_sel` field.
    pub const fn index(self) -> u32 {
        match self {
            Noc::Noc0 => 0,
            Noc::Noc1 => 1,
        }
    }

    pub const fn from_index(i: u32) -> Option<Noc> {
        match i {
            0 => Some(Noc::Noc0),
            1 => Some(Noc::Noc1),
            _ => None,
        }
    }
}
