//! The host side of a chip: PCI ids, the BARs, the TLB windows and their
//! configuration registers, the other regions of BAR0, and the address range
//! through which the chip's NOC reaches host memory.

use super::noc_id::Noc;
use super::tlb::{self, TlbWindowKind};

/// Tenstorrent's PCI vendor id (tt-umd `device/cpuset_lib.hpp`
/// TENSTORRENT_VENDOR_ID; tt-kmd `enumerate.h` PCI_VENDOR_ID_TENSTORRENT).
pub const PCI_VENDOR_ID: u16 = 0x1E52;

/// The PCI configuration-space registers a host reads to find a chip and
/// its BARs (PCI Local Bus Specification 3.0, 6.1 and 6.2.5.1: the type 0
/// header has the vendor id at 0x00 and the device id at 0x02, and Base
/// Address Register n at 0x10 + 4n; a 64-bit BAR n takes the registers of
/// n and n + 1, its high half in the second).
pub mod config_space {
    /// Vendor id (low half) and device id (high half).
    pub const IDS: u32 = 0x00;
    /// Base Address Register 0.
    pub const BAR0: u32 = 0x10;
    /// Bytes of one Base Address Register.
    pub const BAR_BYTES: u32 = 4;
    /// A memory BAR's low bits that are not address: space, type and
    /// prefetchable (bits 3:0).
    pub const BAR_FLAGS: u32 = 0xF;

    /// Offset of Base Address Register `n`.
    pub const fn bar(n: u32) -> u32 {
        BAR0 + BAR_BYTES * n
    }
}

/// What a fixed BAR0 region holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BarRegionKind {
    /// The TLB configuration registers.
    TlbConfig,
    /// The PCIe tile's own NIU registers for one NOC (`NOC_STATUS` at +0x200).
    PcieNiu(Noc),
    /// ARC's CSM (its RAM).
    ArcCsm,
    /// ARC's APB peripherals (reset unit at +0x30000, ARC's NIUs at +0x50000
    /// and +0x58000).
    ArcApb,
}

/// A fixed region of BAR0.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BarRegion {
    pub kind: BarRegionKind,
    pub offset: u32,
    pub size: u32,
}

/// The PCIe controller's outbound address translation unit (a DesignWare
/// iATU) in BAR2: it turns the NOC's accesses to host memory (an offset in
/// the range from [`BarLayout::host_mem_base`]) into host bus addresses.
/// Region `r`'s registers (32-bit, [`iatu`]) sit at `bar2_offset + r *
/// region_stride` of BAR2; an offset no enabled region matches goes out
/// untranslated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IatuLayout {
    /// BAR2 offset of outbound region 0.
    pub bar2_offset: u32,
    /// Outbound regions.
    pub regions: u32,
    /// Bytes from one outbound region's registers to the next (an inbound
    /// region's sit between them).
    pub region_stride: u32,
}

impl IatuLayout {
    /// The outbound region and register (byte offset within the region's
    /// block) at BAR2 offset `offset`.
    pub const fn register_at(&self, offset: u64) -> Option<(u32, u32)> {
        let base = self.bar2_offset as u64;
        if offset < base {
            return None;
        }
        let rel = offset - base;
        let region = rel / self.region_stride as u64;
        let reg = (rel % self.region_stride as u64) as u32;
        if region >= self.regions as u64 || reg > iatu::UPPER_LIMIT {
            return None;
        }
        Some((region as u32, reg))
    }
}

/// An outbound iATU region's registers (byte offsets in its block) and
/// fields: tt-kmd `blackhole.c` IATU_*_OUTBOUND, REGION_EN,
/// INCREASE_REGION_SIZE (the DesignWare PCIe controller's iATU).
pub mod iatu {
    pub const REGION_CTRL_1: u32 = 0x00;
    pub const REGION_CTRL_2: u32 = 0x04;
    pub const LOWER_BASE: u32 = 0x08;
    pub const UPPER_BASE: u32 = 0x0C;
    pub const LOWER_LIMIT: u32 = 0x10;
    pub const LOWER_TARGET: u32 = 0x14;
    pub const UPPER_TARGET: u32 = 0x18;
    pub const REGION_CTRL_3: u32 = 0x1C;
    pub const UPPER_LIMIT: u32 = 0x20;
    /// `REGION_CTRL_2`: the region translates.
    pub const REGION_EN: u32 = 1 << 31;
    /// `REGION_CTRL_1`: the limit's upper half is `UPPER_LIMIT` (otherwise
    /// it is the base's).
    pub const INCREASE_REGION_SIZE: u32 = 1 << 13;
}

/// A chip's BARs as the host sees them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BarLayout {
    pub pci_device_id: u16,
    /// BAR0, BAR2, BAR4 sizes in bytes.
    pub bar0_size: u64,
    pub bar2_size: u64,
    pub bar4_size: u64,
    /// The window kinds, in TLB-index order.
    pub windows: &'static [TlbWindowKind],
    /// BAR0 offset of TLB index 0's configuration register.
    pub tlb_config_base: u32,
    /// Bytes per configuration register (8 on Wormhole, 12 on Blackhole).
    pub tlb_config_entry_bytes: u32,
    /// The window the kernel driver keeps for itself.
    pub kernel_tlb_index: u32,
    /// Other fixed regions of BAR0.
    pub regions: &'static [BarRegion],
    /// The local address at which the PCIe tile's NOC endpoint forwards to
    /// host memory (OR-ed with the host offset; coordinates go above it).
    pub host_mem_base: u64,
    /// Bytes of host memory reachable from that base.
    pub host_mem_size: u64,
    /// The outbound iATU in BAR2.
    pub iatu: IatuLayout,
}

impl BarLayout {
    /// Total TLB windows.
    pub const fn tlb_count(&self) -> u32 {
        let mut n = 0;
        let mut i = 0;
        while i < self.windows.len() {
            n += self.windows[i].count;
            i += 1;
        }
        n
    }

    /// The kind of TLB window `index` and its BAR offset.
    pub const fn window(&self, index: u32) -> Option<(&TlbWindowKind, u64)> {
        let mut i = 0;
        while i < self.windows.len() {
            let k = &self.windows[i];
            if k.contains_index(index) {
                return Some((k, k.window_offset(index - k.first_index)));
            }
            i += 1;
        }
        None
    }

    /// The TLB window holding byte `offset` of BAR `bar`, and the offset
    /// inside that window.
    pub const fn window_at(&self, bar: u8, offset: u64) -> Option<(u32, u64)> {
        let mut i = 0;
        while i < self.windows.len() {
            let k = &self.windows[i];
            let end = k.bar_offset + k.count as u64 * k.size();
            if k.bar == bar && offset >= k.bar_offset && offset < end {
                let rel = offset - k.bar_offset;
                return Some((k.first_index + (rel >> k.size_log2) as u32, rel & (k.size() - 1)));
            }
            i += 1;
        }
        None
    }

    /// Windows of `2^size_log2` bytes the kernel driver hands out (ALLOCATE_TLB): every one of
    /// that kind but the one it keeps for itself (`kernel_tlb_index`), shared by every process
    /// with the card open.
    pub const fn driver_windows(&self, size_log2: u32) -> u32 {
        let mut i = 0;
        while i < self.windows.len() {
            let k = &self.windows[i];
            if k.size_log2 == size_log2 {
                return k.count - k.contains_index(self.kernel_tlb_index) as u32;
            }
            i += 1;
        }
        0
    }

    /// BAR0 offset of TLB `index`'s configuration register.
    pub const fn tlb_config_addr(&self, index: u32) -> u32 {
        self.tlb_config_base + index * self.tlb_config_entry_bytes
    }

    /// 32-bit words per configuration register.
    pub const fn tlb_config_words(&self) -> usize {
        (self.tlb_config_entry_bytes / 4) as usize
    }

    /// Which TLB's configuration register (and byte within it) BAR0 offset
    /// `offset` is.
    pub const fn tlb_config_at(&self, offset: u32) -> Option<(u32, u32)> {
        let end = self.tlb_config_base + self.tlb_count() * self.tlb_config_entry_bytes;
        if offset < self.tlb_config_base || offset >= end {
            return None;
        }
        let rel = offset - self.tlb_config_base;
        Some((rel / self.tlb_config_entry_bytes, rel % self.tlb_config_entry_bytes))
    }

    /// The fixed BAR0 region holding `offset`.
    pub const fn region_at(&self, offset: u32) -> Option<BarRegion> {
        let mut i = 0;
        while i < self.regions.len() {
            let r = self.regions[i];
            if offset >= r.offset && offset - r.offset < r.size {
                return Some(r);
            }
            i += 1;
        }
        None
    }
}

const MIB: u64 = 1 << 20;

/// log2 of the 2 MiB TLB window both chips have (tt-umd's TLB_COUNT_2M,
/// below): one covers a Tensix L1 of either chip, so the driver maps tiles
/// through it and the simulator's shared memory strides its L1s by it.
pub const WINDOW_2M_LOG2: u32 = 21;

/// Wormhole B0.
pub const WORMHOLE: BarLayout = BarLayout {
    // tt-umd `tt-kmd-lib/api/tt-kmd-lib/pci_ids.h`; tt-kmd `enumerate.h`.
    pci_device_id: 0x401E,
    // tt-isa `WormholeB0/PCIExpressTile/README.md` (bar 0 512 MiB, bar 2
    // 1 MiB, bar 4 32 MiB aliasing the top of bar 0).
    bar0_size: 512 * MIB,
    bar2_size: MIB,
    bar4_size: 32 * MIB,
    windows: &[
        // tt-umd `wormhole_implementation.hpp` TLB_COUNT_1M 156, TLB_BASE_1M 0;
        // tt-kmd `wormhole.c` TLB_1M_WINDOW_COUNT, TLB_1M_WINDOW_BASE.
        TlbWindowKind { size_log2: 20, count: 156, bar: 0, bar_offset: 0, first_index: 0, fields: tlb::WH_1M_FIELDS },
        // TLB_COUNT_2M 10, TLB_BASE_2M = 156 MiB = 0x09C00000.
        TlbWindowKind {
            size_log2: WINDOW_2M_LOG2,
            count: 10,
            bar: 0,
            bar_offset: 0x09C0_0000,
            first_index: 156,
            fields: tlb::WH_2M_FIELDS,
        },
        // TLB_COUNT_16M 20, TLB_BASE_16M = 0x09C00000 + 20 MiB = 0x0B000000.
        TlbWindowKind {
            size_log2: 24,
            count: 20,
            bar: 0,
            bar_offset: 0x0B00_0000,
            first_index: 166,
            fields: tlb::WH_16M_FIELDS,
        },
    ],
    // tt-umd `wormhole_implementation.hpp` STATIC_TLB_CFG_ADDR 0x1fc00000,
    // TLB_CFG_REG_SIZE_BYTES 8.
    tlb_config_base: 0x1FC0_0000,
    tlb_config_entry_bytes: 8,
    // tt-kmd `wormhole.c` KERNEL_TLB_INDEX = TLB_WINDOW_COUNT - 1 (the last
    // 16 MiB window, BAR0 0x1E000000).
    kernel_tlb_index: 185,
    regions: &[
        // 186 registers x 8 B (tt-isa `WormholeB0/PCIExpressTile/README.md`:
        // 0x1FC0_0000..0x1FC0_05CF).
        BarRegion { kind: BarRegionKind::TlbConfig, offset: 0x1FC0_0000, size: 186 * 8 },
        // tt-kmd `wormhole.c` NOC2AXI_START 0x1FD02000, NIU_NOC1_OFFSET 0x8000
        // (commit a5e0bc9 "direct BAR access for PCIe counters"). tt-isa
        // `WormholeB0/PCIExpressTile/README.md` lists 0x1FD2_0000 and
        // 0x1FDA_0000 instead; cqlab follows the driver that reads them.
        BarRegion { kind: BarRegionKind::PcieNiu(Noc::Noc0), offset: 0x1FD0_2000, size: 0x1000 },
        BarRegion { kind: BarRegionKind::PcieNiu(Noc::Noc1), offset: 0x1FD0_A000, size: 0x1000 },
        // tt-umd `wormhole_implementation.hpp` ARC_CSM_BAR0_XBAR_OFFSET_START
        // 0x1FE80000 .. _END 0x1FEFFFFF.
        BarRegion { kind: BarRegionKind::ArcCsm, offset: 0x1FE8_0000, size: 0x8_0000 },
        // ARC_APB_BAR0_XBAR_OFFSET_START 0x1FF00000 .. _END 0x1FFFFFFF.
        BarRegion { kind: BarRegionKind::ArcApb, offset: 0x1FF0_0000, size: 0x10_0000 },
    ],
    // tt-isa `WormholeB0/PCIExpressTile/README.md` "NoC to Host"; tt-umd
    // `device/chip_helpers/sysmem_manager.cpp` get_pcie_base_for_arch
    // 0x800000000; tt-metal wh `noc_parameters.h` NOC_XY_PCIE_ENCODING.
    host_mem_base: 0x8_0000_0000,
    // Same ISA page ("NoC to Host (64 GiB)"): 3.999 GiB from 0x8_0000_0000
    // go to the outbound iATU, then the PCIe controller's own configuration
    // (128 KiB at 0x8_FFFE_0000), then reserved space (0x9_0000_0000 up).
    // tt-kmd `wormhole.c` at ttkmd-2.10.0 places pinned buffers below the
    // same bound (noc_dma_limit 0xFFFE0000 - 1). The tile's 36-bit local
    // address would carry an offset of up to 32 GiB past the base before
    // wrapping, but only this much is host memory.
    host_mem_size: 0x1_0000_0000 - 0x2_0000,
    // tt-isa `WormholeB0/PCIExpressTile/README.md` (BAR2: DMA engines
    // 0x0-0x11FF, iATU 0x1200-0x31FF: 16 regions x 0x200); tt-umd
    // `tt_sim_tt_device.cpp` configure_iatu_region (0x1200, 0x200 per region).
    iatu: IatuLayout { bar2_offset: 0x1200, regions: 16, region_stride: 0x200 },
};

/// Blackhole.
pub const BLACKHOLE: BarLayout = BarLayout {
    // tt-kmd `enumerate.h` PCI_DEVICE_ID_BLACKHOLE.
    pci_device_id: 0xB140,
    // tt-isa `BlackholeA0/PCIExpressTile/README.md` (bar 0 512 MiB, bar 2
    // 1 MiB, bar 4 32 GiB).
    bar0_size: 512 * MIB,
    bar2_size: MIB,
    bar4_size: 32 << 30,
    windows: &[
        // tt-umd `blackhole_implementation.hpp` TLB_COUNT_2M 202, TLB_BASE_2M 0
        // (BAR0); tt-kmd `blackhole.c` TLB_2M_WINDOW_COUNT 202.
        TlbWindowKind {
            size_log2: WINDOW_2M_LOG2,
            count: 202,
            bar: 0,
            bar_offset: 0,
            first_index: 0,
            fields: tlb::BH_2M_FIELDS,
        },
        // TLB_COUNT_4G 8, TLB_BASE_4G 0 in BAR4, TLB_BASE_INDEX_4G 202;
        // tt-kmd `blackhole.c` TLB_4G_WINDOW_COUNT 8.
        TlbWindowKind { size_log2: 32, count: 8, bar: 4, bar_offset: 0, first_index: 202, fields: tlb::BH_4G_FIELDS },
    ],
    // tt-umd STATIC_TLB_CFG_ADDR 0x1fc00000, TLB_CFG_REG_SIZE_BYTES 12;
    // tt-kmd `blackhole.c` TLB_REGS_START, TLB_REG_SIZE.
    tlb_config_base: 0x1FC0_0000,
    tlb_config_entry_bytes: 12,
    // tt-kmd `blackhole.c` KERNEL_TLB_INDEX = TLB_2M_WINDOW_COUNT - 1.
    kernel_tlb_index: 201,
    regions: &[
        // 210 registers x 12 B, then 32 strided-multicast registers x 4 B
        // (tt-kmd `blackhole.c` TLB_STRIDED_REGS_OFFSET; end 0x1FC00A57).
        BarRegion { kind: BarRegionKind::TlbConfig, offset: 0x1FC0_0000, size: 210 * 12 + 32 * 4 },
        // tt-umd `blackhole_implementation.hpp` NIU_CFG_NOC0_BAR_PCIE_ADDR
        // 0x1FD04000, NIU_CFG_NOC1_BAR_PCIE_ADDR 0x1FD14000; tt-kmd
        // `blackhole.c` NOC2AXI_CFG_START + NOC_STATUS_OFFSET 0x4200.
        BarRegion { kind: BarRegionKind::PcieNiu(Noc::Noc0), offset: 0x1FD0_4000, size: 0x2000 },
        BarRegion { kind: BarRegionKind::PcieNiu(Noc::Noc1), offset: 0x1FD1_4000, size: 0x2000 },
        // tt-umd `blackhole_implementation.hpp` ARC_APB_BAR0_XBAR_OFFSET_START
        // 0x1FF00000, usable only when the card is attached through PCIe 1
        // (tt-isa `BlackholeA0/PCIExpressTile/README.md`: 0x1FE0_0000 and up
        // is ARC on PCIe 1, reserved on PCIe 0; tt-umd is_arc_available_over_axi).
        BarRegion { kind: BarRegionKind::ArcApb, offset: 0x1FF0_0000, size: 0x10_0000 },
    ],
    // tt-umd `Cluster::get_pcie_base_addr_from_device` 1ULL << 60; tt-metal bh
    // `noc_parameters.h` NOC_XY_PCIE_ENCODING; tt-kmd `memory.c` setup_noc_dma
    // adds `noc_pcie_offset`, which `blackhole.c` sets to 4ULL << 58.
    host_mem_base: 1 << 60,
    // tt-metal reaches host offsets in bits 35:0 only (tt-metal bh
    // `noc_nonblocking_api.h` NOC_PCIE_MASK 0x1000000F, applied to an
    // address's upper word, keeps bit 60 and bits 35:32).
    host_mem_size: 1 << 36,
    // tt-kmd `blackhole.c` IATU_BASE 0x1000, IATU_OUTBOUND_REGIONS 16,
    // offset (2 x region + direction) x IATU_REGION_STRIDE 0x100.
    iatu: IatuLayout { bar2_offset: 0x1000, regions: 16, region_stride: 0x200 },
};

#[cfg(test)]
mod tests {
    use super::*;

    /// tt-kmd's pools of 2 MiB windows (ttkmd-2.10.0): Wormhole's 10 (`wormhole.c`
    /// TLB_2M_WINDOW_COUNT; its own window is a 16 MiB one), Blackhole's 202 but the last,
    /// which it keeps (`blackhole.h` TLB_2M_WINDOW_COUNT, `blackhole.c` KERNEL_TLB_INDEX).
    #[test]
    fn the_driver_hands_out_its_2_mib_windows_but_its_own() {
        assert_eq!(WORMHOLE.driver_windows(WINDOW_2M_LOG2), 10);
        assert_eq!(BLACKHOLE.driver_windows(WINDOW_2M_LOG2), 201);
        assert_eq!(WORMHOLE.driver_windows(24), 19);
        assert_eq!(WORMHOLE.driver_windows(12), 0);
    }

    #[test]
    fn iatu_registers_decode_per_region() {
        let wh = WORMHOLE.iatu;
        assert_eq!(wh.register_at(0x1200), Some((0, iatu::REGION_CTRL_1)));
        assert_eq!(wh.register_at(0x1200 + 5 * 0x200 + 0x18), Some((5, iatu::UPPER_TARGET)));
        assert_eq!(wh.register_at(0x1200 + 0x24), None, "past the outbound registers");
        assert_eq!(wh.register_at(0x11FC), None, "a DMA engine register");
        assert_eq!(wh.register_at(0x3200), None, "past region 15");
        assert_eq!(BLACKHOLE.iatu.register_at(0x1000 + 0x204), Some((1, iatu::REGION_CTRL_2)));
        // Within BAR2.
        for l in [WORMHOLE, BLACKHOLE] {
            assert!(l.iatu.bar2_offset as u64 + l.iatu.regions as u64 * l.iatu.region_stride as u64 <= l.bar2_size);
        }
    }
}
