//! The little of ARC a host reads when it opens a card (`arch::arc`): the
//! ready word, the telemetry pointers and the telemetry table (board id,
//! harvesting, AICLK, NOC translation), and on Wormhole the ARC tile's NIU
//! registers a host reads through BAR0 (its hang probe, the translation
//! flag). Everything else of ARC (messages, the reset unit, PLLs, ...) is
//! not modelled: an access to it is an error naming the ARC address.
//!
//! Where the telemetry table lives is the simulator's choice (a host finds
//! it through the pointers, as tt-umd does): 256 bytes at ARC address
//! [`TELEMETRY_TABLE`] (inside Wormhole's CSM, at the same address on
//! Blackhole), the data array right after.

use cqlab_abi::arch::arc::{telemetry_table as table, ArcParams};
use cqlab_abi::arch::niu::node_id;
use cqlab_abi::arch::Noc;
use cqlab_abi::soc::ChipLayout;
use std::collections::BTreeMap;

/// ARC address of the telemetry table (the simulator's choice, module docs):
/// the start of Wormhole's CSM ([`ArcParams::csm`]), where a host reads it
/// through BAR0. Blackhole models no CSM; the same address serves there.
pub const TELEMETRY_TABLE: u32 = match cqlab_abi::arch::arc::WORMHOLE.csm {
    Some((_, arc)) => arc,
    None => panic!("Wormhole's ARC has a CSM"),
};
/// The table's version word.
const TABLE_VERSION: u32 = 1;

/// ARC as the host reaches it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Arc {
    params: ArcParams,
    /// Every word cqlab models, by ARC address.
    words: BTreeMap<u32, u32>,
}

impl Arc {
    /// ARC of `layout`'s chip, up and running.
    pub fn new(layout: &ChipLayout) -> Self {
        let p = layout.params().arc;
        let mut words = BTreeMap::new();
        words.insert(p.ready.status, p.ready.up_value());
        let entries = cqlab_abi::soc::telemetry::entries(layout);
        let data_at = TELEMETRY_TABLE + table::entry_offset(entries.len() as u32);
        words.insert(p.telemetry_table_ptr, TELEMETRY_TABLE);
        words.insert(p.telemetry_data_ptr, data_at);
        words.insert(TELEMETRY_TABLE + table::VERSION_OFFSET, TABLE_VERSION);
        words.insert(TELEMETRY_TABLE + table::COUNT_OFFSET, entries.len() as u32);
        for (i, (t, v)) in entries.iter().enumerate() {
            words.insert(TELEMETRY_TABLE + table::entry_offset(i as u32), table::entry(*t, i as u16));
            words.insert(data_at + 4 * i as u32, *v);
        }
        // Wormhole: the ARC tile's NIUs, as a host reads them through BAR0.
        if let Some(nius) = p.niu_apb {
            let chip = layout.params();
            let arc = layout.tile(layout.arc_tile()).expect("the ARC tile");
            for noc in Noc::ALL {
                let base = cqlab_abi::arch::arc::APB_BASE + nius[noc.index() as usize];
                let own = if noc == Noc::Noc0 { arc.noc0 } else { arc.noc1 };
                let g = chip.grid;
                words.insert(base + chip.niu.regs.node_id, node_id::encode(own.x, own.y, g.x, g.y, noc));
                words.insert(
                    base + chip.niu.cfg_base + 4 * chip.niu.cfg.niu_cfg_0,
                    cqlab_abi::arch::niu::niu_cfg_0::NOC_ID_TRANSLATE_EN,
                );
            }
        }
        Arc { params: p, words }
    }

    /// The ARC address of NOC address `addr` on the ARC tile, if any.
    pub fn arc_addr(&self, tile_addr: u64) -> Option<u32> {
        tile_addr.checked_sub(self.params.noc_offset).and_then(|a| u32::try_from(a).ok())
    }

    /// Reads `buf.len()` bytes (whole words) at ARC address `addr`.
    pub fn read(&self, addr: u32, buf: &mut [u8]) -> Result<(), String> {
        if addr % 4 != 0 || buf.len() % 4 != 0 {
            return Err(format!("ARC address {addr:#010x}: ARC is read in aligned 32-bit words"));
        }
        for (i, w) in buf.chunks_exact_mut(4).enumerate() {
            let a = addr + 4 * i as u32;
            let v = self.words.get(&a).ok_or_else(|| {
                format!(
                    "ARC address {a:#010x} is not modelled (cqlab models the ready word, the telemetry pointers and \
                     table{})",
                    if self.params.niu_apb.is_some() { ", and the ARC NIUs' NOC_NODE_ID and NIU_CFG_0" } else { "" }
                )
            })?;
            w.copy_from_slice(&v.to_le_bytes());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cqlab_abi::arch::arc::{tag, upi};
    use cqlab_abi::soc::Board;

    /// Reads the table as a host does: pointers, then tag -> value.
    fn read_telemetry(arc: &Arc, p: &ArcParams) -> BTreeMap<u16, u32> {
        let word = |a: u32| {
            let mut b = [0; 4];
            arc.read(a, &mut b).unwrap();
            u32::from_le_bytes(b)
        };
        let (table, data) = (word(p.telemetry_table_ptr), word(p.telemetry_data_ptr));
        let n = word(table + table::COUNT_OFFSET);
        let entries = (0..n).map(|i| table::split(word(table + table::entry_offset(i))));
        entries.map(|(t, index)| (t, word(data + 4 * index as u32))).collect()
    }

    #[test]
    fn a_host_reads_board_and_harvesting_from_the_telemetry() {
        let l = ChipLayout::for_board(Board::WormholeN300).unwrap();
        let arc = Arc::new(&l);
        let p = l.params().arc;
        let t = read_telemetry(&arc, &p);
        let board_id = (t[&tag::BOARD_ID_HIGH] as u64) << 32 | t[&tag::BOARD_ID_LOW] as u64;
        assert_eq!(upi::of_board_id(board_id), upi::N300);
        assert_eq!(Board::from_board_id(board_id), Some(Board::WormholeN300));
        // n300: rows 1 and 8 harvested = die-order bits 1 (y=1) and 6 (y=8).
        assert_eq!(t[&tag::HARVESTING_STATE], 1 << 1 | 1 << 6);
        assert_eq!((t[&tag::AICLK], t[&tag::NOC_TRANSLATION]), (1000, 1));
        let mut ready = [0; 4];
        arc.read(p.ready.status, &mut ready).unwrap();
        assert_eq!(u32::from_le_bytes(ready), p.ready.up_value());
        assert!(arc.read(0x8003_0100, &mut ready).unwrap_err().contains("0x80030100"));

        let l = ChipLayout::for_board(Board::BlackholeP100a).unwrap();
        let arc = Arc::new(&l);
        let t = read_telemetry(&arc, &l.params().arc);
        // Columns 7 and 10 are the last two in die order.
        assert_eq!(t[&tag::ENABLED_TENSIX_COL], 0x0FFF);
        assert_eq!(t[&tag::ENABLED_GDDR], 0xFF & !(1 << 3), "bank 3 harvested");
        assert_eq!((t[&tag::ENABLED_ETH], t[&tag::PCIE_USAGE], t[&tag::AICLK]), (0, 1, 1350));
    }
}
