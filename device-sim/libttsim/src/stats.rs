//! Per-chip counters of what the host did and what the device did to the
//! host: which path tt-umd's accesses took (TLB windows, tile access), and
//! the DMA traffic through the callbacks. Read by name through
//! `cqlab_ttsim_stat`; one table gives the fields and the names.

use std::sync::atomic::{AtomicU64, Ordering};

macro_rules! stats {
    ($($(#[doc = $doc:literal])* $name:ident,)*) => {
        /// The counters of one chip.
        #[derive(Debug, Default)]
        pub struct Stats {
            $($(#[doc = $doc])* pub $name: AtomicU64,)*
        }

        impl Stats {
            /// Every counter's name.
            pub const NAMES: &'static [&'static str] = &[$(stringify!($name)),*];

            /// The counter called `name`.
            pub fn get(&self, name: &str) -> Option<u64> {
                match name {
                    $(stringify!($name) => Some(self.$name.load(Ordering::Relaxed)),)*
                    _ => None,
                }
            }
        }
    };
}

stats! {
    /// `pci_config_rd32` calls.
    config_reads,
    /// `pci_mem` writes to a TLB configuration register.
    tlb_config_writes,
    /// `pci_mem` reads inside a TLB window (BAR0 or BAR4).
    tlb_window_reads,
    /// `pci_mem` writes inside a TLB window.
    tlb_window_writes,
    /// `pci_mem` accesses to BAR0 registers other than the TLBs' (the
    /// PCIe tile's NIU, ARC).
    bar_register_accesses,
    /// `pci_mem` accesses to the iATU in BAR2.
    iatu_accesses,
    /// `tile_rd_bytes` calls.
    tile_reads,
    /// `tile_wr_bytes` calls.
    tile_writes,
    /// `dram_*_by_id` reads.
    dram_reads,
    /// `dram_*_by_id` writes.
    dram_writes,
    /// `clock` / `clock_all_devices` calls reaching this chip.
    clocks,
    /// Cycles those calls asked for.
    clocked_cycles,
    /// Device reads of host memory handed to the read callback.
    dma_reads,
    /// Bytes they read.
    dma_read_bytes,
    /// Device writes to host memory handed to the write callback.
    dma_writes,
    /// Bytes they wrote.
    dma_write_bytes,
    /// Device accesses to host memory dropped: no callbacks registered.
    dma_dropped,
}

impl Stats {
    /// Adds `n` to `counter`.
    pub fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn counters_by_name() {
        let s = super::Stats::default();
        super::Stats::add(&s.dma_writes, 2);
        assert_eq!(s.get("dma_writes"), Some(2));
        assert_eq!(s.get("nope"), None);
        assert!(super::Stats::NAMES.contains(&"tlb_window_reads"));
    }
}
