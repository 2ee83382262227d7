//! The CSRs a core implements: the cycle and retired-instruction counters
//! and the hart id, all read-only. Any other CSR, and any write to these,
//! is an illegal instruction (the hart halts rather than guess).

pub const MCYCLE: u16 = 0xb00;
pub const MINSTRET: u16 = 0xb02;
pub const MCYCLEH: u16 = 0xb80;
pub const MINSTRETH: u16 = 0xb82;
pub const MHARTID: u16 = 0xf14;
/// Unprivileged read-only shadows of the machine counters (what
/// `rdcycle`/`rdinstret` assemble to).
pub const CYCLE: u16 = 0xc00;
pub const INSTRET: u16 = 0xc02;
pub const CYCLEH: u16 = 0xc80;
pub const INSTRETH: u16 = 0xc82;

/// Value of CSR `csr`, or `None` if the core does not implement it.
/// `cycle`/`instret` are the counts before the reading instruction.
#[inline]
pub fn read(csr: u32, cycle: u64, instret: u64, hartid: u32) -> Option<u32> {
    Some(match csr as u16 {
        MCYCLE | CYCLE => cycle as u32,
        MCYCLEH | CYCLEH => (cycle >> 32) as u32,
        MINSTRET | INSTRET => instret as u32,
        MINSTRETH | INSTRETH => (instret >> 32) as u32,
        MHARTID => hartid,
        _ => return None,
    })
}

/// Name of a CSR for traces and disassembly.
pub fn name(csr: u32) -> Option<&'static str> {
    Some(match csr as u16 {
        MCYCLE => "mcycle",
        MCYCLEH => "mcycleh",
        MINSTRET => "minstret",
        MINSTRETH => "minstreth",
        MHARTID => "mhartid",
        CYCLE => "cycle",
        CYCLEH => "cycleh",
        INSTRET => "instret",
        INSTRETH => "instreth",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_split_into_halves() {
        let c = 0x1_2345_6789u64;
        assert_eq!(read(MCYCLE as u32, c, 0, 0), Some(0x2345_6789));
        assert_eq!(read(MCYCLEH as u32, c, 0, 0), Some(1));
        assert_eq!(read(INSTRETH as u32, 0, c, 0), Some(1));
        assert_eq!(read(MHARTID as u32, 0, 0, 0x0302), Some(0x0302));
        assert_eq!(read(0x300, 0, 0, 0), None, "mstatus is not implemented");
    }
}
