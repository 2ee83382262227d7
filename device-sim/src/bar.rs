//! What a host access through a BAR window costs in device time, charged by
//! the chip model itself ([`crate::chip::Chip::bar_write`],
//! [`crate::chip::Chip::bar_read`], [`crate::chip::Chip::host_poll`]), so
//! every front (the embedded backend, the daemon) charges the same device
//! time for the same host program.
//!
//! Figures from docs/design.md, "Timing" (1 cycle = 1 ns): host writes through a
//! write-combining window at ~22 GB/s, host reads of device memory at
//! ~0.1 GB/s after a PCIe round trip. The host is busy for that long and the
//! device runs meanwhile: a write's time is posted (charged at the host's
//! next read or poll), a read's is charged before the data is sampled.

/// Host BAR access costs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BarTiming {
    /// Host write bandwidth through a WC window. Default 22 B/cycle.
    pub write_bytes_per_cycle: u64,
    /// A host read's PCIe round trip. Default 300 cycles.
    pub read_latency_cycles: u64,
    /// Per byte read on top (0.1 GB/s). Default 10 cycles.
    pub read_cycles_per_byte: u64,
}

impl Default for BarTiming {
    fn default() -> Self {
        Self { write_bytes_per_cycle: 22, read_latency_cycles: 300, read_cycles_per_byte: 10 }
    }
}

impl BarTiming {
    /// Host time a write of `len` bytes occupies.
    pub fn write_cycles(&self, len: usize) -> u64 {
        (len as u64).div_ceil(self.write_bytes_per_cycle.max(1))
    }
    /// Host time a read of `len` bytes occupies.
    pub fn read_cycles(&self, len: usize) -> u64 {
        self.read_latency_cycles + len as u64 * self.read_cycles_per_byte
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn costs_follow_the_figures() {
        let t = super::BarTiming::default();
        assert_eq!(t.write_cycles(4), 1);
        assert_eq!(t.write_cycles(44), 2);
        assert_eq!(t.write_cycles(45), 3);
        assert_eq!(t.read_cycles(4), 340);
    }
}
