//! What a host reads from ARC when it opens a card (as tt-umd does in
//! `device/tt_device/*_tt_device.cpp` and `device/arc/*_arc_telemetry_reader.cpp`):
//! the ready word, then the telemetry table through its two pointers, then
//! the board and harvesting the table names (`cqlab_abi::soc::telemetry`).
//!
//! Where ARC is reached (`arch::arc::ArcParams`): on Wormhole through its
//! BAR0 regions (the APB peripherals at 0x1FF00000 for ARC addresses from
//! 0x8000_0000, the CSM at 0x1FE80000 for its RAM); on Blackhole, attached
//! through PCIe 0, through a TLB window onto the ARC tile (NOC0 8-0, an
//! untranslated row), where ARC addresses are NOC addresses.

use crate::error::{DriverError, Result};
use cqlab_abi::arch::arc::{telemetry_table, ArcState, APB_BASE};
use cqlab_abi::arch::{Arch, ArchParams};
use cqlab_abi::noc::NocAddr;
use cqlab_abi::soc::{telemetry, Board, Harvesting, SocDescriptor};
use std::collections::BTreeMap;

/// What reading ARC needs of a backend (every `Backend` is one: the
/// blanket impl beside the trait), so this module depends on no backend.
pub trait ArcBus {
    fn name(&self) -> String;
    fn params(&self) -> &'static ArchParams;
    /// A read through a TLB window.
    fn read(&mut self, addr: NocAddr, buf: &mut [u8]) -> Result<()>;
    /// A read of BAR0 outside the TLB windows.
    fn bar0_read(&mut self, offset: u32, buf: &mut [u8]) -> Result<()>;
}

/// Most telemetry entries a table may announce (tt-umd's tables have about 60).
const MAX_ENTRIES: u32 = 256;

/// Reads the 32-bit word at ARC address `addr` of `backend`'s chip.
pub fn read_word(backend: &mut (impl ArcBus + ?Sized), addr: u32) -> Result<u32> {
    let chip = backend.params();
    let mut b = [0u8; 4];
    match bar0_offset(chip, addr) {
        Some(offset) => backend.bar0_read(offset, &mut b)?,
        None => {
            let arc = SocDescriptor::builtin(chip.arch).arc[0];
            backend.read(NocAddr::unicast(arc, chip.arc.noc_offset + addr as u64), &mut b)?
        }
    }
    Ok(u32::from_le_bytes(b))
}

/// The BAR0 offset of ARC address `addr`, where the host sees ARC in BAR0:
/// Wormhole's APB and CSM windows. (Blackhole's APB window exists only on
/// a card attached through PCIe 1; the modelled boards use PCIe 0.)
fn bar0_offset(chip: &ArchParams, addr: u32) -> Option<u32> {
    if chip.arch != Arch::Wormhole {
        return None;
    }
    let region = |kind| chip.bar.regions.iter().find(move |r| r.kind == kind);
    use cqlab_abi::arch::bar::BarRegionKind;
    if let (Some(apb), true) = (chip.arc.bar0_apb, addr >= APB_BASE) {
        let size = region(BarRegionKind::ArcApb)?.size;
        return (addr - APB_BASE < size).then(|| apb + (addr - APB_BASE));
    }
    let (bar, arc) = chip.arc.csm?;
    let size = region(BarRegionKind::ArcCsm)?.size;
    (addr >= arc && addr - arc < size).then(|| bar + (addr - arc))
}

/// The board and harvesting of `backend`'s chip, from ARC's telemetry.
pub fn identify(backend: &mut (impl ArcBus + ?Sized)) -> Result<(Board, Harvesting)> {
    let chip = backend.params();
    let p = chip.arc;
    let status = read_word(backend, p.ready.status)?;
    match p.ready.judge(status, p.post_code, |addr| read_word(backend, addr))? {
        ArcState::Up => {}
        ArcState::NotUp(why) | ArcState::Failed(why) => {
            return Err(DriverError::Backend(format!(
                "{}: ARC is not up (status word {:#010x} reads {status:#x}: {why})",
                backend.name(),
                p.ready.status,
            )))
        }
    }
    let table = read_word(backend, p.telemetry_table_ptr)?;
    let data = read_word(backend, p.telemetry_data_ptr)?;
    let count = read_word(backend, table.wrapping_add(telemetry_table::COUNT_OFFSET))?;
    if count > MAX_ENTRIES {
        return Err(DriverError::Backend(format!(
            "{}: ARC telemetry table at {table:#010x} announces {count} entries (at most {MAX_ENTRIES})",
            backend.name()
        )));
    }
    let mut values = BTreeMap::new();
    for i in 0..count {
        let entry = read_word(backend, table.wrapping_add(telemetry_table::entry_offset(i)))?;
        let (tag, index) = telemetry_table::split(entry);
        let value = read_word(backend, data.wrapping_add(4 * u32::from(index)))?;
        values.insert(tag, value);
    }
    telemetry::identify(chip.arch, |tag| values.get(&tag).copied())
        .map_err(|e| DriverError::Backend(format!("{}: {e}", backend.name())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use cqlab_abi::arch::{BLACKHOLE, WORMHOLE};

    /// ARC's cited BAR0 windows (tt-umd `wormhole_implementation.hpp`
    /// ARC_APB_BAR0_XBAR_OFFSET_START 0x1FF00000, ARC_CSM_BAR0_XBAR_OFFSET_START
    /// 0x1FE80000 for CSM address 0x1000_0000).
    #[test]
    fn wormhole_arc_is_read_through_bar0_and_blackhole_arc_through_a_window() {
        // The ready word: reset unit + 0x74 = 0x8003_0074.
        assert_eq!(bar0_offset(&WORMHOLE, WORMHOLE.arc.ready.status), Some(0x1FF3_0074));
        // The telemetry pointers: reset unit + 0x1D0 / + 0x1D4.
        assert_eq!(bar0_offset(&WORMHOLE, 0x8003_01D0), Some(0x1FF3_01D0));
        assert_eq!(bar0_offset(&WORMHOLE, 0x1000_0100), Some(0x1FE8_0100));
        assert_eq!(bar0_offset(&WORMHOLE, 0x2000_0000), None, "outside CSM and APB");
        assert_eq!(bar0_offset(&BLACKHOLE, BLACKHOLE.arc.ready.status), None);
        assert_eq!(SocDescriptor::builtin(Arch::Blackhole).arc[0], cqlab_abi::noc::Coord::new(8, 0));
    }

    /// A Wormhole BAR0 holding one ARC status word and post code.
    struct Status {
        status: u32,
        post_code: u32,
    }

    impl ArcBus for Status {
        fn name(&self) -> String {
            "card".into()
        }
        fn params(&self) -> &'static ArchParams {
            &WORMHOLE
        }
        fn read(&mut self, _: NocAddr, _: &mut [u8]) -> Result<()> {
            unreachable!("Wormhole's ARC is read through BAR0")
        }
        fn bar0_read(&mut self, offset: u32, buf: &mut [u8]) -> Result<()> {
            let word = if Some(offset) == bar0_offset(&WORMHOLE, WORMHOLE.arc.ready.status) {
                self.status
            } else if Some(offset) == bar0_offset(&WORMHOLE, WORMHOLE.arc.post_code) {
                self.post_code
            } else {
                return Err(DriverError::Backend(format!("BAR0 {offset:#x}: this card holds no telemetry")));
            };
            buf.copy_from_slice(&word.to_le_bytes());
            Ok(())
        }
    }

    /// A card whose ARC is not up is refused before its telemetry is read,
    /// naming the status and what it means; one idle after a message (status
    /// 0, an idle post code) goes on to the telemetry, as tt-umd does.
    #[test]
    fn a_card_whose_arc_is_not_up_is_refused_naming_its_status() {
        let err = identify(&mut Status { status: 0x60, post_code: 0 }).unwrap_err().to_string();
        assert!(err.contains("card: ARC is not up (status word 0x80030074 reads 0x60: boot incomplete)"), "{err}");
        let err = identify(&mut Status { status: 0xDEAD_C0DE, post_code: 0 }).unwrap_err().to_string();
        assert!(err.contains("watchdog"), "{err}");
        let err = identify(&mut Status { status: 0, post_code: 0xC0DE_0040 }).unwrap_err().to_string();
        assert!(err.contains("holds no telemetry"), "up, so the telemetry pointer is read next: {err}");
    }
}
