//! Rust mirror of tt-kmd's user-space ABI (`ioctl.h`).
//!
//! Mirrored from Tenstorrent's kernel driver, repository `tenstorrent/tt-kmd`, file `ioctl.h`
//! at commit `0d2a53be41ad40e40749d913ba325971cf7d3888` (the version that has UNPIN_PAGES and
//! the TLB ioctls). Only the facts are taken (request numbers, field order, widths); the code is
//! ours. Every struct is `#[repr(C)]` with its size and field offsets asserted at compile time
//! against the header's layout (64-bit Linux C ABI: x86-64, AArch64, RISC-V64; every `__u*`
//! field is naturally aligned there).
//!
//! Every tt-kmd request number is `_IO(TENSTORRENT_IOCTL_MAGIC, n)`: direction NONE and size 0
//! are encoded, yet the argument is a pointer to an in/out struct (`{ in; out; }`). nix's
//! `ioctl_readwrite_bad!` takes an explicit request number and passes `*mut T`, which is exactly
//! that convention; the numbers come from `nix::request_code_none!`, i.e. the header's `_IO`.
//!
//! Legacy conventions worth knowing (tt-kmd `docs/ioctl-design.md`): GET_DEVICE_INFO,
//! GET_DRIVER_INFO, RESET_DEVICE, PIN_PAGES and LOCK_CTL carry `output_size_bytes` in `in`
//! (the caller's `out` size; the kernel writes at most that much and reports its own size back
//! in `out.output_size_bytes`). QUERY_MAPPINGS takes a count of `Mapping` slots instead. The
//! TLB ioctls and UNPIN_PAGES are fixed-size structs.

use nix::sys::ioctl::ioctl_num_type;

/// `TENSTORRENT_DRIVER_VERSION` in the mirrored header.
pub const TENSTORRENT_DRIVER_VERSION: u32 = 1;

/// `TENSTORRENT_IOCTL_MAGIC`.
pub const TENSTORRENT_IOCTL_MAGIC: u8 = 0xFA;

/// Sequence numbers `n` of `_IO(TENSTORRENT_IOCTL_MAGIC, n)`.
pub mod nr {
    pub const GET_DEVICE_INFO: u8 = 0;
    pub const GET_HARVESTING: u8 = 1;
    pub const QUERY_MAPPINGS: u8 = 2;
    pub const ALLOCATE_DMA_BUF: u8 = 3;
    pub const FREE_DMA_BUF: u8 = 4;
    pub const GET_DRIVER_INFO: u8 = 5;
    pub const RESET_DEVICE: u8 = 6;
    pub const PIN_PAGES: u8 = 7;
    pub const LOCK_CTL: u8 = 8;
    pub const MAP_PEER_BAR: u8 = 9;
    pub const UNPIN_PAGES: u8 = 10;
    pub const ALLOCATE_TLB: u8 = 11;
    pub const FREE_TLB: u8 = 12;
    pub const CONFIGURE_TLB: u8 = 13;
}

/// Request numbers (`TENSTORRENT_IOCTL_*`), computed like the header's `_IO(...)`.
pub mod req {
    use super::{ioctl_num_type, nr, TENSTORRENT_IOCTL_MAGIC as M};

    pub const GET_DEVICE_INFO: ioctl_num_type = nix::request_code_none!(M, nr::GET_DEVICE_INFO);
    pub const QUERY_MAPPINGS: ioctl_num_type = nix::request_code_none!(M, nr::QUERY_MAPPINGS);
    pub const GET_DRIVER_INFO: ioctl_num_type = nix::request_code_none!(M, nr::GET_DRIVER_INFO);
    pub const RESET_DEVICE: ioctl_num_type = nix::request_code_none!(M, nr::RESET_DEVICE);
    pub const PIN_PAGES: ioctl_num_type = nix::request_code_none!(M, nr::PIN_PAGES);
    pub const LOCK_CTL: ioctl_num_type = nix::request_code_none!(M, nr::LOCK_CTL);
    pub const UNPIN_PAGES: ioctl_num_type = nix::request_code_none!(M, nr::UNPIN_PAGES);
    pub const ALLOCATE_TLB: ioctl_num_type = nix::request_code_none!(M, nr::ALLOCATE_TLB);
    pub const FREE_TLB: ioctl_num_type = nix::request_code_none!(M, nr::FREE_TLB);
    pub const CONFIGURE_TLB: ioctl_num_type = nix::request_code_none!(M, nr::CONFIGURE_TLB);
}

// `tenstorrent_mapping.mapping_id` values (not array indices).
pub const MAPPING_UNUSED: u32 = 0;
pub const MAPPING_RESOURCE0_UC: u32 = 1;
pub const MAPPING_RESOURCE0_WC: u32 = 2;
pub const MAPPING_RESOURCE1_UC: u32 = 3;
pub const MAPPING_RESOURCE1_WC: u32 = 4;
pub const MAPPING_RESOURCE2_UC: u32 = 5;
pub const MAPPING_RESOURCE2_WC: u32 = 6;

pub const MAX_DMA_BUFS: u32 = 256;
pub const MAX_INBOUND_TLBS: u32 = 256;
/// Number of LOCK_CTL resource locks (`TENSTORRENT_RESOURCE_LOCK_COUNT`); valid indices are below it.
pub const RESOURCE_LOCK_COUNT: u8 = 64;

// `tenstorrent_reset_device_in.flags` (values, not bits).
pub const RESET_DEVICE_RESTORE_STATE: u32 = 0;
pub const RESET_DEVICE_RESET_PCIE_LINK: u32 = 1;
pub const RESET_DEVICE_CONFIG_WRITE: u32 = 2;

// `tenstorrent_pin_pages_in.flags` (bits).
/// The caller attests the pages are physically contiguous (needed without an IOMMU).
pub const PIN_PAGES_CONTIGUOUS: u32 = 1;
/// Also map the pages for NOC DMA; the kernel then returns `noc_address` (extended out).
pub const PIN_PAGES_NOC_DMA: u32 = 2;
/// NOC DMA window allocated top-down instead of bottom-up.
pub const PIN_PAGES_NOC_TOP_DOWN: u32 = 4;

// `tenstorrent_lock_ctl_in.flags` (values).
pub const LOCK_CTL_ACQUIRE: u32 = 0;
pub const LOCK_CTL_RELEASE: u32 = 1;
pub const LOCK_CTL_TEST: u32 = 2;

/// Asserts a struct's size and each listed field's offset at compile time.
macro_rules! assert_layout {
    ($t:ty, size = $size:expr $(, $field:ident @ $off:expr)* $(,)?) => {
        const _: () = assert!(core::mem::size_of::<$t>() == $size);
        $(const _: () = assert!(core::mem::offset_of!($t, $field) == $off);)*
    };
}

// ---- GET_DEVICE_INFO -------------------------------------------------------------------------

/// `struct tenstorrent_get_device_info_in`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GetDeviceInfoIn {
    pub output_size_bytes: u32,
}
assert_layout!(GetDeviceInfoIn, size = 4, output_size_bytes @ 0);

/// `struct tenstorrent_get_device_info_out`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GetDeviceInfoOut {
    pub output_size_bytes: u32,
    pub vendor_id: u16,
    pub device_id: u16,
    pub subsystem_vendor_id: u16,
    pub subsystem_id: u16,
    /// Bits [0:2] function, [3:7] device, [8:15] bus.
    pub bus_dev_fn: u16,
    /// Since driver 1.0.
    pub max_dma_buf_size_log2: u16,
    /// Since driver 1.23; older drivers leave it zero and report a smaller `output_size_bytes`.
    pub pci_domain: u16,
}
assert_layout!(GetDeviceInfoOut, size = 20,
    output_size_bytes @ 0, vendor_id @ 4, device_id @ 6, subsystem_vendor_id @ 8, subsystem_id @ 10,
    bus_dev_fn @ 12, max_dma_buf_size_log2 @ 14, pci_domain @ 16);

/// `struct tenstorrent_get_device_info`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GetDeviceInfo {
    pub input: GetDeviceInfoIn,
    pub output: GetDeviceInfoOut,
}
assert_layout!(GetDeviceInfo, size = 24, input @ 0, output @ 4);

// ---- GET_DRIVER_INFO -------------------------------------------------------------------------

/// `struct tenstorrent_get_driver_info_in`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GetDriverInfoIn {
    pub output_size_bytes: u32,
}
assert_layout!(GetDriverInfoIn, size = 4, output_size_bytes @ 0);

/// `struct tenstorrent_get_driver_info_out`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GetDriverInfoOut {
    pub output_size_bytes: u32,
    pub driver_version: u32,
}
assert_layout!(GetDriverInfoOut, size = 8, output_size_bytes @ 0, driver_version @ 4);

/// `struct tenstorrent_get_driver_info`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GetDriverInfo {
    pub input: GetDriverInfoIn,
    pub output: GetDriverInfoOut,
}
assert_layout!(GetDriverInfo, size = 12, input @ 0, output @ 4);

// ---- QUERY_MAPPINGS --------------------------------------------------------------------------

/// `struct tenstorrent_query_mappings_in`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueryMappingsIn {
    /// Number of `Mapping` slots following the header; the kernel fills or zeroes exactly these.
    pub output_mapping_count: u32,
    pub reserved: u32,
}
assert_layout!(QueryMappingsIn, size = 8, output_mapping_count @ 0, reserved @ 4);

/// `struct tenstorrent_mapping`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Mapping {
    pub mapping_id: u32,
    pub reserved: u32,
    /// mmap offset on the device fd.
    pub mapping_base: u64,
    pub mapping_size: u64,
}
assert_layout!(Mapping, size = 24, mapping_id @ 0, reserved @ 4, mapping_base @ 8, mapping_size @ 16);

/// `struct tenstorrent_query_mappings_out`: a flexible array `mappings[0]`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueryMappingsOut {
    pub mappings: [Mapping; 0],
}
assert_layout!(QueryMappingsOut, size = 0, mappings @ 0);
const _: () = assert!(core::mem::align_of::<QueryMappingsOut>() == 8);

/// `struct tenstorrent_query_mappings` (header only; the mappings follow it).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueryMappings {
    pub input: QueryMappingsIn,
    pub output: QueryMappingsOut,
}
assert_layout!(QueryMappings, size = 8, input @ 0, output @ 8);

/// How many mapping slots we offer. The mirrored driver reports at most 6 (3 resources x UC/WC).
pub const QUERY_MAPPINGS_CAPACITY: usize = 16;

/// `struct tenstorrent_query_mappings` with its flexible array sized to
/// [`QUERY_MAPPINGS_CAPACITY`]; same prefix layout as [`QueryMappings`].
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueryMappingsBuf {
    pub input: QueryMappingsIn,
    pub mappings: [Mapping; QUERY_MAPPINGS_CAPACITY],
}
assert_layout!(QueryMappingsBuf, size = 8 + 24 * QUERY_MAPPINGS_CAPACITY, input @ 0, mappings @ 8);
const _: () =
    assert!(core::mem::offset_of!(QueryMappingsBuf, mappings) == core::mem::offset_of!(QueryMappings, output));

// ---- RESET_DEVICE ----------------------------------------------------------------------------

/// `struct tenstorrent_reset_device_in`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ResetDeviceIn {
    pub output_size_bytes: u32,
    pub flags: u32,
}
assert_layout!(ResetDeviceIn, size = 8, output_size_bytes @ 0, flags @ 4);

/// `struct tenstorrent_reset_device_out`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ResetDeviceOut {
    pub output_size_bytes: u32,
    /// 0 on success.
    pub result: u32,
}
assert_layout!(ResetDeviceOut, size = 8, output_size_bytes @ 0, result @ 4);

/// `struct tenstorrent_reset_device`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ResetDevice {
    pub input: ResetDeviceIn,
    pub output: ResetDeviceOut,
}
assert_layout!(ResetDevice, size = 16, input @ 0, output @ 8);

// ---- PIN_PAGES / UNPIN_PAGES -----------------------------------------------------------------

/// `struct tenstorrent_pin_pages_in`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PinPagesIn {
    pub output_size_bytes: u32,
    pub flags: u32,
    pub virtual_address: u64,
    pub size: u64,
}
assert_layout!(PinPagesIn, size = 24, output_size_bytes @ 0, flags @ 4, virtual_address @ 8, size @ 16);

/// `struct tenstorrent_pin_pages_out`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PinPagesOut {
    /// Physical address or IOVA.
    pub physical_address: u64,
}
assert_layout!(PinPagesOut, size = 8, physical_address @ 0);

/// `struct tenstorrent_pin_pages_out_extended` (written when `output_size_bytes` allows it).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PinPagesOutExtended {
    pub physical_address: u64,
    /// Set with [`PIN_PAGES_NOC_DMA`].
    pub noc_address: u64,
}
assert_layout!(PinPagesOutExtended, size = 16, physical_address @ 0, noc_address @ 8);

/// `struct tenstorrent_pin_pages`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PinPages {
    pub input: PinPagesIn,
    pub output: PinPagesOut,
}
assert_layout!(PinPages, size = 32, input @ 0, output @ 24);

/// `{ tenstorrent_pin_pages_in; tenstorrent_pin_pages_out_extended; }`: the header has no
/// named struct for it, but the kernel writes `min(output_size_bytes, its out size)` bytes at
/// `&arg->out`, so this is the same call with room for `noc_address`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PinPagesExtended {
    pub input: PinPagesIn,
    pub output: PinPagesOutExtended,
}
assert_layout!(PinPagesExtended, size = 40, input @ 0, output @ 24);

/// `struct tenstorrent_unpin_pages_in`. Unpinning a subset of a pinned range is not supported.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UnpinPagesIn {
    /// The VA used to pin (not a later remapped VA).
    pub virtual_address: u64,
    pub size: u64,
    pub reserved: u64,
}
assert_layout!(UnpinPagesIn, size = 24, virtual_address @ 0, size @ 8, reserved @ 16);

/// `struct tenstorrent_unpin_pages_out` (empty).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UnpinPagesOut {}
assert_layout!(UnpinPagesOut, size = 0);

/// `struct tenstorrent_unpin_pages`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UnpinPages {
    pub input: UnpinPagesIn,
    pub output: UnpinPagesOut,
}
assert_layout!(UnpinPages, size = 24, input @ 0, output @ 24);

// ---- LOCK_CTL --------------------------------------------------------------------------------

/// `struct tenstorrent_lock_ctl_in`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LockCtlIn {
    pub output_size_bytes: u32,
    pub flags: u32,
    /// Below [`RESOURCE_LOCK_COUNT`].
    pub index: u8,
}
assert_layout!(LockCtlIn, size = 12, output_size_bytes @ 0, flags @ 4, index @ 8);

/// `struct tenstorrent_lock_ctl_out`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LockCtlOut {
    /// ACQUIRE/RELEASE: 1 done, 0 not. TEST: bit 0 held by this fd, bit 1 held by anyone.
    pub value: u8,
}
assert_layout!(LockCtlOut, size = 1, value @ 0);

/// `struct tenstorrent_lock_ctl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LockCtl {
    pub input: LockCtlIn,
    pub output: LockCtlOut,
}
assert_layout!(LockCtl, size = 16, input @ 0, output @ 12);

// ---- ALLOCATE_TLB / FREE_TLB / CONFIGURE_TLB -------------------------------------------------

/// `struct tenstorrent_allocate_tlb_in`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AllocateTlbIn {
    pub size: u64,
    pub reserved: u64,
}
assert_layout!(AllocateTlbIn, size = 16, size @ 0, reserved @ 8);

/// `struct tenstorrent_allocate_tlb_out`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AllocateTlbOut {
    pub id: u32,
    pub reserved0: u32,
    pub mmap_offset_uc: u64,
    pub mmap_offset_wc: u64,
    pub reserved1: u64,
}
assert_layout!(AllocateTlbOut, size = 32, id @ 0, reserved0 @ 4, mmap_offset_uc @ 8, mmap_offset_wc @ 16,
    reserved1 @ 24);

/// `struct tenstorrent_allocate_tlb`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AllocateTlb {
    pub input: AllocateTlbIn,
    pub output: AllocateTlbOut,
}
assert_layout!(AllocateTlb, size = 48, input @ 0, output @ 16);

/// `struct tenstorrent_free_tlb_in`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FreeTlbIn {
    pub id: u32,
}
assert_layout!(FreeTlbIn, size = 4, id @ 0);

/// `struct tenstorrent_free_tlb_out` (empty).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FreeTlbOut {}
assert_layout!(FreeTlbOut, size = 0);

/// `struct tenstorrent_free_tlb`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FreeTlb {
    pub input: FreeTlbIn,
    pub output: FreeTlbOut,
}
assert_layout!(FreeTlb, size = 4, input @ 0, output @ 4);

/// `struct tenstorrent_noc_tlb_config`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NocTlbConfig {
    /// NOC address the window's offset 0 maps to.
    pub addr: u64,
    pub x_end: u16,
    pub y_end: u16,
    /// Multicast rectangle start (ignored for unicast).
    pub x_start: u16,
    pub y_start: u16,
    /// Which NOC (0 or 1).
    pub noc: u8,
    /// Non-zero: multicast to the rectangle start..end.
    pub mcast: u8,
    /// Transaction ordering mode, passed through to the chip's TLB register.
    pub ordering: u8,
    pub linked: u8,
    pub static_vc: u8,
    pub reserved0: [u8; 3],
    pub reserved1: [u32; 2],
}
assert_layout!(NocTlbConfig, size = 32,
    addr @ 0, x_end @ 8, y_end @ 10, x_start @ 12, y_start @ 14, noc @ 16, mcast @ 17, ordering @ 18,
    linked @ 19, static_vc @ 20, reserved0 @ 21, reserved1 @ 24);

impl NocTlbConfig {
    /// A unicast window onto core (`x`, `y`) at NOC address `addr` on NOC `noc`.
    pub fn unicast(x: u16, y: u16, addr: u64, noc: u8) -> Self {
        Self { addr, x_end: x, y_end: y, noc, ..Self::default() }
    }
}

/// `struct tenstorrent_configure_tlb_in`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ConfigureTlbIn {
    pub id: u32,
    pub config: NocTlbConfig,
}
assert_layout!(ConfigureTlbIn, size = 40, id @ 0, config @ 8);

/// `struct tenstorrent_configure_tlb_out`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ConfigureTlbOut {
    pub reserved: u64,
}
assert_layout!(ConfigureTlbOut, size = 8, reserved @ 0);

/// `struct tenstorrent_configure_tlb`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ConfigureTlb {
    pub input: ConfigureTlbIn,
    pub output: ConfigureTlbOut,
}
assert_layout!(ConfigureTlb, size = 48, input @ 0, output @ 40);

// ---- raw calls -------------------------------------------------------------------------------
//
// Each is `unsafe fn(fd, *mut T) -> nix::Result<c_int>`: the caller must pass an open fd and a
// pointer to a live, writable `T` (plus any room the kernel may write beyond it).

nix::ioctl_readwrite_bad!(get_device_info, req::GET_DEVICE_INFO, GetDeviceInfo);
nix::ioctl_readwrite_bad!(get_driver_info, req::GET_DRIVER_INFO, GetDriverInfo);
nix::ioctl_readwrite_bad!(query_mappings, req::QUERY_MAPPINGS, QueryMappingsBuf);
nix::ioctl_readwrite_bad!(reset_device, req::RESET_DEVICE, ResetDevice);
nix::ioctl_readwrite_bad!(pin_pages, req::PIN_PAGES, PinPagesExtended);
nix::ioctl_readwrite_bad!(unpin_pages, req::UNPIN_PAGES, UnpinPages);
nix::ioctl_readwrite_bad!(lock_ctl, req::LOCK_CTL, LockCtl);
nix::ioctl_readwrite_bad!(allocate_tlb, req::ALLOCATE_TLB, AllocateTlb);
nix::ioctl_readwrite_bad!(free_tlb, req::FREE_TLB, FreeTlb);
nix::ioctl_readwrite_bad!(configure_tlb, req::CONFIGURE_TLB, ConfigureTlb);

#[cfg(test)]
mod tests {
    use super::*;

    /// `_IOC(dir, type, nr, size)` of the asm-generic ioctl encoding (x86-64, AArch64,
    /// RISC-V64): dir in bits 30..31, size in 16..29, type in 8..15, nr in 0..7.
    const fn ioc(dir: u32, ty: u32, nr: u32, size: u32) -> u32 {
        (dir << 30) | (size << 16) | (ty << 8) | nr
    }

    /// `_IO(type, nr)` = `_IOC(_IOC_NONE, type, nr, 0)` with `_IOC_NONE` = 0.
    const fn io(ty: u32, nr: u32) -> u32 {
        const IOC_NONE: u32 = 0;
        ioc(IOC_NONE, ty, nr, 0)
    }

    #[test]
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64", target_arch = "riscv64"))]
    fn request_numbers_match_the_header() {
        // (name, computed through nix, n in `_IO(0xFA, n)` as in ioctl.h, value worked out by hand)
        let cases: [(&str, ioctl_num_type, u32, u32); 10] = [
            ("GET_DEVICE_INFO", req::GET_DEVICE_INFO, 0, 0xFA00),
            ("QUERY_MAPPINGS", req::QUERY_MAPPINGS, 2, 0xFA02),
            ("GET_DRIVER_INFO", req::GET_DRIVER_INFO, 5, 0xFA05),
            ("RESET_DEVICE", req::RESET_DEVICE, 6, 0xFA06),
            ("PIN_PAGES", req::PIN_PAGES, 7, 0xFA07),
            ("LOCK_CTL", req::LOCK_CTL, 8, 0xFA08),
            ("UNPIN_PAGES", req::UNPIN_PAGES, 10, 0xFA0A),
            ("ALLOCATE_TLB", req::ALLOCATE_TLB, 11, 0xFA0B),
            ("FREE_TLB", req::FREE_TLB, 12, 0xFA0C),
            ("CONFIGURE_TLB", req::CONFIGURE_TLB, 13, 0xFA0D),
        ];
        for (name, computed, n, by_hand) in cases {
            assert_eq!(io(0xFA, n), by_hand, "_IO(0xFA, {n}) for TENSTORRENT_IOCTL_{name}");
            assert_eq!(computed, by_hand as ioctl_num_type, "TENSTORRENT_IOCTL_{name}");
        }
        assert_eq!(u32::from(TENSTORRENT_IOCTL_MAGIC), 0xFA);
    }

    #[test]
    fn structs_are_naturally_aligned() {
        // The header's structs hold only fixed-width integers (no pointers, longs or enums), so on
        // 64-bit Linux targets (where u64 is 8-aligned, as tt-kmd requires) C and Rust agree.
        assert_eq!(core::mem::align_of::<GetDeviceInfo>(), 4);
        assert_eq!(core::mem::align_of::<LockCtl>(), 4);
        assert_eq!(core::mem::align_of::<PinPages>(), 8);
        assert_eq!(core::mem::align_of::<ConfigureTlb>(), 8);
        assert_eq!(core::mem::align_of::<QueryMappingsBuf>(), 8);
    }

    #[test]
    fn unicast_config_targets_one_core() {
        let c = NocTlbConfig::unicast(3, 4, 0x1000, 1);
        assert_eq!((c.x_end, c.y_end, c.x_start, c.y_start, c.mcast, c.noc), (3, 4, 0, 0, 0, 1));
        assert_eq!(c.addr, 0x1000);
    }
}
