//! Layout of host sysmem as the device sees it through the PCIe endpoint
//! (`noc::PCIE`; NOC-local address = byte offset in sysmem).
//!
//! Each command queue owns one region: a header of device-written pointers,
//! then its issue-queue ring, then its completion-queue ring. Pointers the
//! device publishes live in sysmem so the host polls local memory, never the
//! slow BAR; pointers the host publishes go to device L1 (BAR writes are fast).

use crate::PCIE_ALIGNMENT;

/// Size of the per-CQ header; each pointer gets its own PCIe-aligned line.
pub const CQ_HEADER_SIZE: u32 = 256;
/// Device -> host: issue-queue read pointer (`ring::RingPtr`).
pub const ISSUE_RD_PTR: u32 = 0x00;
/// Device -> host: number of fetch-queue entries consumed (wrapping u32).
pub const FETCH_RD_COUNT: u32 = 0x40;
/// Device -> host: completion-queue write pointer (`ring::RingPtr`).
pub const COMPLETION_WR_PTR: u32 = 0x80;

/// Default issue-queue and completion-queue sizes per CQ.
pub const DEFAULT_ISSUE_QUEUE_SIZE: u32 = 1 << 20;
pub const DEFAULT_COMPLETION_QUEUE_SIZE: u32 = 256 << 10;

/// Where one CQ's pieces sit in sysmem.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CqSysmemLayout {
    /// Byte offset of the region in sysmem.
    pub base: u64,
    pub issue_size: u32,
    pub completion_size: u32,
}

impl CqSysmemLayout {
    /// Layout of queue `cq` when every queue uses the same sizes.
    pub const fn for_cq(cq: u8, issue_size: u32, completion_size: u32) -> Self {
        let stride = CQ_HEADER_SIZE as u64 + issue_size as u64 + completion_size as u64;
        Self { base: cq as u64 * stride, issue_size, completion_size }
    }
    pub const fn header(&self) -> u64 {
        self.base
    }
    pub const fn issue_base(&self) -> u64 {
        self.base + CQ_HEADER_SIZE as u64
    }
    pub const fn completion_base(&self) -> u64 {
        self.issue_base() + self.issue_size as u64
    }
    pub const fn end(&self) -> u64 {
        self.completion_base() + self.completion_size as u64
    }
    /// Sizes must be non-zero multiples of the PCIe alignment.
    pub const fn is_valid(&self) -> bool {
        self.issue_size != 0
            && self.completion_size != 0
            && self.issue_size % PCIE_ALIGNMENT as u32 == 0
            && self.completion_size % PCIE_ALIGNMENT as u32 == 0
    }
}

const _: () = assert!(COMPLETION_WR_PTR + PCIE_ALIGNMENT as u32 <= CQ_HEADER_SIZE);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cq_regions_are_back_to_back() {
        let a = CqSysmemLayout::for_cq(0, 4096, 1024);
        let b = CqSysmemLayout::for_cq(1, 4096, 1024);
        assert_eq!(a.issue_base(), 256);
        assert_eq!(a.completion_base(), 256 + 4096);
        assert_eq!(a.end(), b.base);
        assert!(a.is_valid());
        assert!(!CqSysmemLayout::for_cq(0, 100, 1024).is_valid());
    }
}
