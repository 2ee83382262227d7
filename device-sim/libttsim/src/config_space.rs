//! The chip's PCI configuration space, as `libttsim_pci_config_rd32`
//! answers it: one endpoint at bus 0, device 0, function 0 (the selected
//! chip, in multichip mode); every other BDF reads all ones, as an empty
//! slot does. tt-umd reads the ids at offset 0 (vendor 0x1E52, the chip's
//! device id) and the three 64-bit BARs at 0x10, 0x18, 0x20.

use crate::error::ApiError;
use cqlab_abi::arch::bar::config_space::{bar as bar_reg, IDS};
use cqlab_abi::arch::bar::{BarLayout, PCI_VENDOR_ID};

/// Where the BARs are in the simulated host's physical address space (the
/// simulator's choice: tt-umd reads them back and adds offsets).
pub const BAR0_BASE: u64 = 0x40_0000_0000;
pub const BAR2_BASE: u64 = 0x48_0000_0000;
pub const BAR4_BASE: u64 = 0x50_0000_0000;

/// BAR attribute bits: 64-bit memory BAR (bits 2:1 = 0b10), prefetchable (bit 3).
const MEM64: u32 = 0b0100;
const PREFETCHABLE: u32 = 0b1000;

/// Command register: memory space and bus mastering enabled.
const COMMAND: u32 = 0b110;
/// Class code 0x12 (processing accelerator), subclass 0, interface 0, revision 0.
const CLASS: u32 = 0x12 << 24;

/// Bytes of configuration space.
pub const SIZE: u32 = 0x1000;

/// The 32-bit register at `offset` of `bdf`'s configuration space.
pub fn read(bar: &BarLayout, bdf: u32, offset: u32) -> Result<u32, ApiError> {
    // The 64-bit BARs 0, 2 and 4: low half in register n, high in n + 1.
    const BAR0_LO: u32 = bar_reg(0);
    const BAR0_HI: u32 = bar_reg(1);
    const BAR2_LO: u32 = bar_reg(2);
    const BAR2_HI: u32 = bar_reg(3);
    const BAR4_LO: u32 = bar_reg(4);
    const BAR4_HI: u32 = bar_reg(5);
    if bdf != 0 {
        return Ok(u32::MAX);
    }
    if offset % 4 != 0 || offset >= SIZE {
        return Err(ApiError::ConfigOffset { offset });
    }
    let lo = |base: u64, attrs: u32| (base as u32) | attrs;
    let hi = |base: u64| (base >> 32) as u32;
    Ok(match offset {
        IDS => (bar.pci_device_id as u32) << 16 | PCI_VENDOR_ID as u32,
        0x04 => COMMAND,
        0x08 => CLASS,
        BAR0_LO => lo(BAR0_BASE, MEM64 | PREFETCHABLE),
        BAR0_HI => hi(BAR0_BASE),
        BAR2_LO => lo(BAR2_BASE, MEM64),
        BAR2_HI => hi(BAR2_BASE),
        BAR4_LO => lo(BAR4_BASE, MEM64 | PREFETCHABLE),
        BAR4_HI => hi(BAR4_BASE),
        0x2C => PCI_VENDOR_ID as u32,
        // Registers cqlab does not model read as zero, as reserved ones do.
        _ => 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use cqlab_abi::arch::bar::config_space::BAR_FLAGS;
    use cqlab_abi::arch::bar::{BLACKHOLE, WORMHOLE};

    #[test]
    fn ids_and_bars_as_tt_umd_reads_them() {
        assert_eq!(read(&WORMHOLE, 0, 0).unwrap(), 0x401E_1E52);
        assert_eq!(read(&BLACKHOLE, 0, 0).unwrap(), 0xB140_1E52);
        let bar = |n| {
            let (lo, hi) = (read(&WORMHOLE, 0, bar_reg(n)).unwrap(), read(&WORMHOLE, 0, bar_reg(n + 1)).unwrap());
            (hi as u64) << 32 | (lo & !BAR_FLAGS) as u64
        };
        assert_eq!((bar(0), bar(2), bar(4)), (BAR0_BASE, BAR2_BASE, BAR4_BASE));
        assert_eq!(read(&WORMHOLE, 8, 0).unwrap(), u32::MAX, "an empty slot");
        assert!(read(&WORMHOLE, 0, 2).is_err());
        assert!(read(&WORMHOLE, 0, 0x1000).is_err());
        // The BARs do not overlap (Blackhole's BAR4 is 32 GiB).
        for l in [WORMHOLE, BLACKHOLE] {
            assert!(BAR0_BASE + l.bar0_size <= BAR2_BASE && BAR2_BASE + l.bar2_size <= BAR4_BASE);
        }
    }
}
