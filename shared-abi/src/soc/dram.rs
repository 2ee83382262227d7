//! DRAM banks as tt-metal numbers them: the descriptor's `dram_views`, in
//! order, leaving out views of harvested channels.
//!
//! Wormhole: 12 banks of 1 GiB, two per channel (offsets 0 and 1 GiB).
//! Blackhole: one bank per channel, 4 GiB less the 16 MiB tt-metal keeps
//! (`dram_view_size` 0xFF00_0000); 8 banks, 7 on a p100a. Each bank names the
//! endpoint tile a worker uses on NOC0 and on NOC1 (tt-metal
//! `tt_metal/soc_descriptors/*_arch.yaml` `dram_views`).

use std::vec::Vec;

use crate::noc::Coord;

use super::descriptor::SocDescriptor;
use super::harvest::Harvesting;

/// One tt-metal DRAM bank.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DramBank {
    /// tt-metal's bank id (0..banks, after harvesting).
    pub index: u8,
    /// The DRAM channel (tt-umd bank) behind it.
    pub channel: u8,
    /// Where the bank starts in the channel's address space.
    pub offset: u64,
    /// Bytes in the bank.
    pub size: u64,
    /// NOC0 coordinates of the endpoint a worker uses, `[on NOC0, on NOC1]`.
    pub worker_endpoint: [Coord; 2],
    /// The same for Ethernet cores.
    pub eth_endpoint: [Coord; 2],
}

impl DramBank {
    /// The endpoint a worker addresses on `noc` (NOC0 coordinates).
    pub fn worker_endpoint_on(&self, noc: crate::arch::Noc) -> Coord {
        self.worker_endpoint[noc.index() as usize]
    }
}

/// The banks of `desc` with `h` applied. A descriptor without `dram_views`
/// gives one bank per channel at its first port.
pub(super) fn banks(desc: &SocDescriptor, h: &Harvesting) -> Vec<DramBank> {
    let size = desc.dram_view_size.unwrap_or(desc.dram_bank_size);
    let views: Vec<(u8, [u8; 2], [u8; 2], u64)> = if desc.dram_views.is_empty() {
        (0..desc.dram.len()).map(|ch| (ch as u8, [0, 0], [0, 0], 0)).collect()
    } else {
        desc.dram_views.iter().map(|v| (v.channel, v.worker_endpoint, v.eth_endpoint, v.address_offset)).collect()
    };
    views
        .into_iter()
        .filter(|(ch, ..)| !h.dram_harvested(*ch as usize))
        .enumerate()
        .map(|(index, (channel, worker, eth, offset))| {
            let ports = &desc.dram[channel as usize];
            DramBank {
                index: index as u8,
                channel,
                offset,
                size,
                worker_endpoint: [ports[worker[0] as usize], ports[worker[1] as usize]],
                eth_endpoint: [ports[eth[0] as usize], ports[eth[1] as usize]],
            }
        })
        .collect()
}
