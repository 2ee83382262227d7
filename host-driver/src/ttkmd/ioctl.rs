//! Rust mirror of tt-kmd's user-space ABI (`ioctl.h`).
//!
//! Mirrored from Tenstorrent's kernel driver, repository `tenstorrent/tt-kmd`, file `ioctl.h`
//! at commit `4af71921ac021e24859ae15d8438997a44dbbf58` (2026-07-16; driver 2.10.1,
//! `TENSTORRENT_DRIVER_VERSION` 2). Only the facts are taken (request numbers, field order,
//! widths, flag values); the code is ours. Every struct is `#[repr(C)]` with its size and field
//! offsets asserted at compile time against the header's layout (64-bit Linux C ABI: x86-64,
//! AArch64, RISC-V64; every `__u*` field is naturally aligned there), and the figures are listed
//! once more in the `layouts_match_ttkmd_4af71921` test, which names the commit.
//!
//! Which drivers (GET_DRIVER_INFO tells them apart; see [`DriverVersion`]). Each version below
//! is the first release tag of tt-kmd whose `ioctl.h` (or `chardev.c`, for open flags) has the
//! feature; tt-kmd bumps `module.h`'s version when it tags a release, so a feature merged after
//! tag X.Y arrives in the next one:
//! - API version 2 (`driver_version` 2: tt-kmd 2.0.0 and later): fully supported. The same
//!   release added the semantic version (`driver_version_major/minor/patch`, 12-byte `out`;
//!   `ioctl.h` and `module.h` at ttkmd-2.0.0); the ioctls added during 2.x are used only when
//!   the version has them ([`DriverVersion::has`]): SET_NOC_CLEANUP (ttkmd-2.2.0), USER/ASIC
//!   reset + POST_RESET (ttkmd-2.4.0), power-aware `O_APPEND` opens with SET_POWER_STATE
//!   (ttkmd-2.6.0), blocking LOCK_CTL (ttkmd-2.7.0), read-only pinning (ttkmd-2.9.0), TLB
//!   dma-buf export and exclusive `O_EXCL` opens (ttkmd-2.10.0; the ttkmd-2.9.99-testing tag,
//!   which reports 2.9.99, has neither).
//! - API version 1 (every 1.x, without a semantic version): open, lock, device info, mappings,
//!   pinning and the legacy resets work. ttkmd-1.34 fixed the TLB ioctls' layout yet still
//!   reports API 1 (`ioctl.h` at ttkmd-1.34), exactly as the broken ttkmd-1.33 does; the API
//!   break to 2 that tells them apart shipped in ttkmd-2.0.0 (tt-kmd commit 24401a3). So TLB
//!   windows (and with them command queues) need 2.0.0, and the backend says so.
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
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// `TENSTORRENT_DRIVER_VERSION` (the ioctl API version) in the mirrored header.
pub const TENSTORRENT_DRIVER_VERSION: u32 = 2;

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
    pub const SET_NOC_CLEANUP: u8 = 14;
    pub const SET_POWER_STATE: u8 = 15;
    pub const EXPORT_TLB_DMABUF: u8 = 16;
}

/// Request numbers (`TENSTORRENT_IOCTL_*`), computed like the header's `_IO(...)`.
pub mod req {
    use super::{ioctl_num_type, nr, TENSTORRENT_IOCTL_MAGIC as M};

    pub const GET_DEVICE_INFO: ioctl_num_type = nix::request_code_none!(M, nr::GET_DEVICE_INFO);
    pub const GET_HARVESTING: ioctl_num_type = nix::request_code_none!(M, nr::GET_HARVESTING);
    pub const QUERY_MAPPINGS: ioctl_num_type = nix::request_code_none!(M, nr::QUERY_MAPPINGS);
    pub const ALLOCATE_DMA_BUF: ioctl_num_type = nix::request_code_none!(M, nr::ALLOCATE_DMA_BUF);
    pub const FREE_DMA_BUF: ioctl_num_type = nix::request_code_none!(M, nr::FREE_DMA_BUF);
    pub const GET_DRIVER_INFO: ioctl_num_type = nix::request_code_none!(M, nr::GET_DRIVER_INFO);
    pub const RESET_DEVICE: ioctl_num_type = nix::request_code_none!(M, nr::RESET_DEVICE);
    pub const PIN_PAGES: ioctl_num_type = nix::request_code_none!(M, nr::PIN_PAGES);
    pub const LOCK_CTL: ioctl_num_type = nix::request_code_none!(M, nr::LOCK_CTL);
    pub const MAP_PEER_BAR: ioctl_num_type = nix::request_code_none!(M, nr::MAP_PEER_BAR);
    pub const UNPIN_PAGES: ioctl_num_type = nix::request_code_none!(M, nr::UNPIN_PAGES);
    pub const ALLOCATE_TLB: ioctl_num_type = nix::request_code_none!(M, nr::ALLOCATE_TLB);
    pub const FREE_TLB: ioctl_num_type = nix::request_code_none!(M, nr::FREE_TLB);
    pub const CONFIGURE_TLB: ioctl_num_type = nix::request_code_none!(M, nr::CONFIGURE_TLB);
    pub const SET_NOC_CLEANUP: ioctl_num_type = nix::request_code_none!(M, nr::SET_NOC_CLEANUP);
    pub const SET_POWER_STATE: ioctl_num_type = nix::request_code_none!(M, nr::SET_POWER_STATE);
    pub const EXPORT_TLB_DMABUF: ioctl_num_type = nix::request_code_none!(M, nr::EXPORT_TLB_DMABUF);
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

// `tenstorrent_reset_device_in.flags` (values, not bits). 0..=2 are the legacy resets.
pub const RESET_DEVICE_RESTORE_STATE: u32 = 0;
pub const RESET_DEVICE_RESET_PCIE_LINK: u32 = 1;
pub const RESET_DEVICE_CONFIG_WRITE: u32 = 2;
/// Since 2.4.0 (`ioctl.h` at ttkmd-2.4.0). After USER_RESET, ASIC_RESET or ASIC_DMC_RESET the kernel refuses every ioctl but
/// GET_DEVICE_INFO, GET_DRIVER_INFO and RESET_DEVICE (ENODEV) until POST_RESET; other fds and
/// every mapping made before the reset are invalid for good (the resetting fd stays usable).
pub const RESET_DEVICE_USER_RESET: u32 = 3;
pub const RESET_DEVICE_ASIC_RESET: u32 = 4;
pub const RESET_DEVICE_ASIC_DMC_RESET: u32 = 5;
/// Completes a reset sequence: re-initialises the hardware after 3, 4 or 5.
pub const RESET_DEVICE_POST_RESET: u32 = 6;

// `tenstorrent_pin_pages_in.flags` (bits).
/// The caller attests the pages are physically contiguous (needed without an IOMMU).
pub const PIN_PAGES_CONTIGUOUS: u32 = 1;
/// Also map the pages for NOC DMA; the kernel then returns `noc_address` (extended out).
pub const PIN_PAGES_NOC_DMA: u32 = 2;
/// NOC DMA window allocated top-down instead of bottom-up; implies NOC DMA (the kernel returns
/// `noc_address` for it too).
pub const PIN_PAGES_NOC_TOP_DOWN: u32 = 4;
/// Since 2.9.0 (`ioctl.h` at ttkmd-2.9.0): the device only reads the pages (needs IOMMU translation, else EOPNOTSUPP).
pub const PIN_PAGES_READ_ONLY: u32 = 8;

// `tenstorrent_allocate_dma_buf_in.flags` (bits).
/// Also map the buffer for NOC DMA; the kernel then fills `noc_address`.
pub const ALLOCATE_DMA_BUF_NOC_DMA: u8 = 2;

// `tenstorrent_lock_ctl_in.flags` (values).
pub const LOCK_CTL_ACQUIRE: u32 = 0;
pub const LOCK_CTL_RELEASE: u32 = 1;
pub const LOCK_CTL_TEST: u32 = 2;
/// Since 2.7.0 (`ioctl.h` at ttkmd-2.7.0): blocks until acquired (out.value 1); ENODEV if the device is reset meanwhile.
pub const LOCK_CTL_ACQUIRE_BLOCKING: u32 = 3;

// `tenstorrent_power_state` (since 2.6.0: `ioctl.h` at ttkmd-2.6.0).
/// `validity` = number of valid `power_flags` bits (0..=15) | number of valid settings (0..=14) << 4.
pub const fn power_validity(flags: u8, settings: u8) -> u8 {
    (flags & 0xF) | ((settings & 0xF) << 4)
}
pub const POWER_FLAG_MAX_AI_CLK: u16 = 1 << 0;
pub const POWER_FLAG_MRISC_PHY_WAKEUP: u16 = 1 << 1;
pub const POWER_FLAG_TENSIX_ENABLE: u16 = 1 << 2;
pub const POWER_FLAG_L2CPU_ENABLE: u16 = 1 << 3;

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
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct GetDeviceInfoIn {
    pub output_size_bytes: u32,
}
assert_layout!(GetDeviceInfoIn, size = 4, output_size_bytes @ 0);

/// `struct tenstorrent_get_device_info_out`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
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
    pub reserved: u16,
}
assert_layout!(GetDeviceInfoOut, size = 20,
    output_size_bytes @ 0, vendor_id @ 4, device_id @ 6, subsystem_vendor_id @ 8, subsystem_id @ 10,
    bus_dev_fn @ 12, max_dma_buf_size_log2 @ 14, pci_domain @ 16, reserved @ 18);

/// `struct tenstorrent_get_device_info`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct GetDeviceInfo {
    pub input: GetDeviceInfoIn,
    pub output: GetDeviceInfoOut,
}
assert_layout!(GetDeviceInfo, size = 24, input @ 0, output @ 4);

// ---- GET_DRIVER_INFO -------------------------------------------------------------------------

/// `struct tenstorrent_get_driver_info_in`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct GetDriverInfoIn {
    pub output_size_bytes: u32,
}
assert_layout!(GetDriverInfoIn, size = 4, output_size_bytes @ 0);

/// `struct tenstorrent_get_driver_info_out`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct GetDriverInfoOut {
    pub output_size_bytes: u32,
    /// The ioctl API version (1 before tt-kmd 2.0.0, 2 since: `ioctl.h` at ttkmd-1.34, ttkmd-2.0.0).
    pub driver_version: u32,
    /// Semantic version, since 2.0.0 (older drivers report `output_size_bytes` 8).
    pub driver_version_major: u8,
    pub driver_version_minor: u8,
    pub driver_version_patch: u8,
    pub reserved0: u8,
}
assert_layout!(GetDriverInfoOut, size = 12, output_size_bytes @ 0, driver_version @ 4,
    driver_version_major @ 8, driver_version_minor @ 9, driver_version_patch @ 10, reserved0 @ 11);

/// Bytes of `tenstorrent_get_driver_info_out` a driver without the semantic version writes.
pub const GET_DRIVER_INFO_OUT_V1_SIZE: u32 = 8;

/// `struct tenstorrent_get_driver_info`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct GetDriverInfo {
    pub input: GetDriverInfoIn,
    pub output: GetDriverInfoOut,
}
assert_layout!(GetDriverInfo, size = 16, input @ 0, output @ 4);

// ---- QUERY_MAPPINGS --------------------------------------------------------------------------

/// `struct tenstorrent_query_mappings_in`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct QueryMappingsIn {
    /// Number of `Mapping` slots following the header; the kernel fills or zeroes exactly these.
    pub output_mapping_count: u32,
    pub reserved: u32,
}
assert_layout!(QueryMappingsIn, size = 8, output_mapping_count @ 0, reserved @ 4);

/// `struct tenstorrent_mapping`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
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
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct QueryMappingsOut {
    pub mappings: [Mapping; 0],
}
assert_layout!(QueryMappingsOut, size = 0, mappings @ 0);
const _: () = assert!(core::mem::align_of::<QueryMappingsOut>() == 8);

/// `struct tenstorrent_query_mappings` (header only; the mappings follow it).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
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
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
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
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct ResetDeviceIn {
    pub output_size_bytes: u32,
    pub flags: u32,
}
assert_layout!(ResetDeviceIn, size = 8, output_size_bytes @ 0, flags @ 4);

/// `struct tenstorrent_reset_device_out`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct ResetDeviceOut {
    pub output_size_bytes: u32,
    /// 0 on success.
    pub result: u32,
}
assert_layout!(ResetDeviceOut, size = 8, output_size_bytes @ 0, result @ 4);

/// `struct tenstorrent_reset_device`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct ResetDevice {
    pub input: ResetDeviceIn,
    pub output: ResetDeviceOut,
}
assert_layout!(ResetDevice, size = 16, input @ 0, output @ 8);

// ---- PIN_PAGES / UNPIN_PAGES -----------------------------------------------------------------

/// `struct tenstorrent_pin_pages_in`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct PinPagesIn {
    pub output_size_bytes: u32,
    pub flags: u32,
    pub virtual_address: u64,
    pub size: u64,
}
assert_layout!(PinPagesIn, size = 24, output_size_bytes @ 0, flags @ 4, virtual_address @ 8, size @ 16);

/// `struct tenstorrent_pin_pages_out`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct PinPagesOut {
    /// Physical address or IOVA.
    pub physical_address: u64,
}
assert_layout!(PinPagesOut, size = 8, physical_address @ 0);

/// `struct tenstorrent_pin_pages_out_extended` (written when `output_size_bytes` allows it).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct PinPagesOutExtended {
    pub physical_address: u64,
    /// Set with [`PIN_PAGES_NOC_DMA`].
    pub noc_address: u64,
}
assert_layout!(PinPagesOutExtended, size = 16, physical_address @ 0, noc_address @ 8);

/// `struct tenstorrent_pin_pages`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct PinPages {
    pub input: PinPagesIn,
    pub output: PinPagesOut,
}
assert_layout!(PinPages, size = 32, input @ 0, output @ 24);

/// `{ tenstorrent_pin_pages_in; tenstorrent_pin_pages_out_extended; }`: the header has no
/// named struct for it, but the kernel writes `min(output_size_bytes, its out size)` bytes at
/// `&arg->out`, so this is the same call with room for `noc_address`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct PinPagesExtended {
    pub input: PinPagesIn,
    pub output: PinPagesOutExtended,
}
assert_layout!(PinPagesExtended, size = 40, input @ 0, output @ 24);

/// `struct tenstorrent_unpin_pages_in`. Unpinning a subset of a pinned range is not supported.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct UnpinPagesIn {
    /// The VA used to pin (not a later remapped VA).
    pub virtual_address: u64,
    pub size: u64,
    pub reserved: u64,
}
assert_layout!(UnpinPagesIn, size = 24, virtual_address @ 0, size @ 8, reserved @ 16);

/// `struct tenstorrent_unpin_pages_out` (empty).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct UnpinPagesOut {}
assert_layout!(UnpinPagesOut, size = 0);

/// `struct tenstorrent_unpin_pages`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct UnpinPages {
    pub input: UnpinPagesIn,
    pub output: UnpinPagesOut,
}
assert_layout!(UnpinPages, size = 24, input @ 0, output @ 24);

// ---- LOCK_CTL --------------------------------------------------------------------------------

/// `struct tenstorrent_lock_ctl_in`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct LockCtlIn {
    pub output_size_bytes: u32,
    pub flags: u32,
    /// Below [`RESOURCE_LOCK_COUNT`].
    pub index: u8,
    pub reserved: [u8; 3],
}
assert_layout!(LockCtlIn, size = 12, output_size_bytes @ 0, flags @ 4, index @ 8, reserved @ 9);

/// `struct tenstorrent_lock_ctl_out`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct LockCtlOut {
    /// ACQUIRE/RELEASE: 1 done, 0 not. TEST: bit 0 held by this fd, bit 1 held by anyone.
    pub value: u8,
    pub reserved: [u8; 3],
}
assert_layout!(LockCtlOut, size = 4, value @ 0, reserved @ 1);

/// `struct tenstorrent_lock_ctl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct LockCtl {
    pub input: LockCtlIn,
    pub output: LockCtlOut,
}
assert_layout!(LockCtl, size = 16, input @ 0, output @ 12);

// ---- ALLOCATE_TLB / FREE_TLB / CONFIGURE_TLB -------------------------------------------------

/// `struct tenstorrent_allocate_tlb_in`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct AllocateTlbIn {
    pub size: u64,
    pub reserved: u64,
}
assert_layout!(AllocateTlbIn, size = 16, size @ 0, reserved @ 8);

/// `struct tenstorrent_allocate_tlb_out`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
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
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct AllocateTlb {
    pub input: AllocateTlbIn,
    pub output: AllocateTlbOut,
}
assert_layout!(AllocateTlb, size = 48, input @ 0, output @ 16);

/// `struct tenstorrent_free_tlb_in`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct FreeTlbIn {
    pub id: u32,
}
assert_layout!(FreeTlbIn, size = 4, id @ 0);

/// `struct tenstorrent_free_tlb_out` (empty).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct FreeTlbOut {}
assert_layout!(FreeTlbOut, size = 0);

/// `struct tenstorrent_free_tlb`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct FreeTlb {
    pub input: FreeTlbIn,
    pub output: FreeTlbOut,
}
assert_layout!(FreeTlb, size = 4, input @ 0, output @ 4);

/// `struct tenstorrent_noc_tlb_config`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
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
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct ConfigureTlbIn {
    pub id: u32,
    pub reserved: u32,
    pub config: NocTlbConfig,
}
assert_layout!(ConfigureTlbIn, size = 40, id @ 0, reserved @ 4, config @ 8);

/// `struct tenstorrent_configure_tlb_out`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct ConfigureTlbOut {
    pub reserved: u64,
}
assert_layout!(ConfigureTlbOut, size = 8, reserved @ 0);

/// `struct tenstorrent_configure_tlb`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct ConfigureTlb {
    pub input: ConfigureTlbIn,
    pub output: ConfigureTlbOut,
}
assert_layout!(ConfigureTlb, size = 48, input @ 0, output @ 40);

// ---- ALLOCATE_DMA_BUF / FREE_DMA_BUF ---------------------------------------------------------

/// `struct tenstorrent_allocate_dma_buf_in`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct AllocateDmaBufIn {
    pub requested_size: u32,
    /// Below [`MAX_DMA_BUFS`].
    pub buf_index: u8,
    /// [`ALLOCATE_DMA_BUF_NOC_DMA`].
    pub flags: u8,
    pub reserved0: [u8; 2],
    pub reserved1: [u64; 2],
}
assert_layout!(AllocateDmaBufIn, size = 24, requested_size @ 0, buf_index @ 4, flags @ 5, reserved0 @ 6,
    reserved1 @ 8);

/// `struct tenstorrent_allocate_dma_buf_out`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct AllocateDmaBufOut {
    /// Physical address or IOVA.
    pub physical_address: u64,
    /// mmap offset on the device fd.
    pub mapping_offset: u64,
    pub size: u32,
    pub reserved0: u32,
    /// Valid with [`ALLOCATE_DMA_BUF_NOC_DMA`].
    pub noc_address: u64,
    pub reserved1: u64,
}
assert_layout!(AllocateDmaBufOut, size = 40, physical_address @ 0, mapping_offset @ 8, size @ 16,
    reserved0 @ 20, noc_address @ 24, reserved1 @ 32);

/// `struct tenstorrent_allocate_dma_buf`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct AllocateDmaBuf {
    pub input: AllocateDmaBufIn,
    pub output: AllocateDmaBufOut,
}
assert_layout!(AllocateDmaBuf, size = 64, input @ 0, output @ 24);

/// `struct tenstorrent_free_dma_buf` (empty `in` and `out`: frees every buffer of the fd).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct FreeDmaBuf {}
assert_layout!(FreeDmaBuf, size = 0);

// ---- MAP_PEER_BAR ----------------------------------------------------------------------------

/// `struct tenstorrent_map_peer_bar_in`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct MapPeerBarIn {
    pub peer_fd: u32,
    pub peer_bar_index: u32,
    pub peer_bar_offset: u32,
    pub peer_bar_length: u32,
    pub flags: u32,
    pub reserved: u32,
}
assert_layout!(MapPeerBarIn, size = 24, peer_fd @ 0, peer_bar_index @ 4, peer_bar_offset @ 8,
    peer_bar_length @ 12, flags @ 16, reserved @ 20);

/// `struct tenstorrent_map_peer_bar_out`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct MapPeerBarOut {
    pub dma_address: u64,
    pub reserved: u64,
}
assert_layout!(MapPeerBarOut, size = 16, dma_address @ 0, reserved @ 8);

/// `struct tenstorrent_map_peer_bar`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct MapPeerBar {
    pub input: MapPeerBarIn,
    pub output: MapPeerBarOut,
}
assert_layout!(MapPeerBar, size = 40, input @ 0, output @ 24);

// ---- SET_NOC_CLEANUP / SET_POWER_STATE / EXPORT_TLB_DMABUF (argsz-style, since 2.x) ----------

/// `struct tenstorrent_set_noc_cleanup`: a NOC write the kernel performs when the fd closes
/// (also when the process dies). `argsz` must be its size.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct SetNocCleanup {
    pub argsz: u32,
    /// Must be 0.
    pub flags: u32,
    /// 1 registers the action, 0 clears it.
    pub enabled: u8,
    pub x: u8,
    pub y: u8,
    /// 0 or 1.
    pub noc: u8,
    pub reserved0: u32,
    /// 4-byte aligned.
    pub addr: u64,
    /// The low 32 bits are written.
    pub data: u64,
}
assert_layout!(SetNocCleanup, size = 32, argsz @ 0, flags @ 4, enabled @ 8, x @ 9, y @ 10, noc @ 11,
    reserved0 @ 12, addr @ 16, data @ 24);

/// `struct tenstorrent_power_state`. With a power-aware open (`O_APPEND`) a client starts at
/// power state 0 and asks for what it needs here; a legacy open starts at high power.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct PowerState {
    pub argsz: u32,
    /// Must be 0.
    pub flags: u32,
    /// Must be 0.
    pub reserved0: u8,
    /// [`power_validity`].
    pub validity: u8,
    /// `POWER_FLAG_*` bits.
    pub power_flags: u16,
    pub power_settings: [u16; 14],
}
assert_layout!(PowerState, size = 40, argsz @ 0, flags @ 4, reserved0 @ 8, validity @ 9, power_flags @ 10,
    power_settings @ 12);

/// `struct tenstorrent_export_tlb_dmabuf`: a TLB window as a dma-buf fd (peer-to-peer DMA).
/// RESET_DEVICE answers EBUSY while an export lives.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct ExportTlbDmabuf {
    pub argsz: u32,
    /// Must be 0.
    pub flags: u32,
    pub tlb_id: u32,
    /// Out: the dma-buf fd.
    pub fd: i32,
    /// Page aligned.
    pub offset: u64,
    /// 0: to the end of the window.
    pub size: u64,
}
assert_layout!(ExportTlbDmabuf, size = 32, argsz @ 0, flags @ 4, tlb_id @ 8, fd @ 12, offset @ 16, size @ 24);

/// What GET_DRIVER_INFO says about a driver, and which features follow from it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DriverVersion {
    /// The ioctl API version (`driver_version`).
    pub api: u32,
    /// Semantic version (major, minor, patch), from drivers 2.0.0 and later.
    pub semver: Option<(u8, u8, u8)>,
}

/// Driver features, with the first release that has them: the first tag of tt-kmd whose
/// `ioctl.h` defines the request or flag (`git show ttkmd-X.Y.Z:ioctl.h`), or whose `chardev.c`
/// reads the open flag. Each tag's `module.h` reports that same version.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Feature {
    /// ALLOCATE_TLB / CONFIGURE_TLB / FREE_TLB with the layout API 2 promises (2.0.0: ttkmd-1.34
    /// has the layout but reports API 1, like the broken 1.33).
    TlbWindows,
    /// SET_NOC_CLEANUP (2.2.0: `ioctl.h` at ttkmd-2.2.0; not at ttkmd-2.1.0).
    NocCleanup,
    /// USER_RESET / ASIC_RESET / ASIC_DMC_RESET and POST_RESET (2.4.0: `ioctl.h` at ttkmd-2.4.0;
    /// not at ttkmd-2.3.0).
    ResetSequence,
    /// O_APPEND power-aware opens and SET_POWER_STATE (2.6.0: `ioctl.h` and `chardev.c` at
    /// ttkmd-2.6.0; not at ttkmd-2.5.0).
    PowerAware,
    /// LOCK_CTL_ACQUIRE_BLOCKING (2.7.0: `ioctl.h` at ttkmd-2.7.0).
    BlockingLock,
    /// PIN_PAGES_READ_ONLY (2.9.0: `ioctl.h` at ttkmd-2.9.0; not at ttkmd-2.8.0).
    ReadOnlyPin,
    /// EXPORT_TLB_DMABUF and exclusive O_EXCL opens (2.10.0: `ioctl.h` and `chardev.c`
    /// `admit_chardev_open` at ttkmd-2.10.0-rc1; not at ttkmd-2.9.99-testing, which reports 2.9.99).
    DmabufAndExclusiveOpen,
}

impl Feature {
    /// First semantic version with the feature.
    pub const fn since(self) -> (u8, u8, u8) {
        match self {
            Feature::TlbWindows => (2, 0, 0),
            Feature::NocCleanup => (2, 2, 0),
            Feature::ResetSequence => (2, 4, 0),
            Feature::PowerAware => (2, 6, 0),
            Feature::BlockingLock => (2, 7, 0),
            Feature::ReadOnlyPin => (2, 9, 0),
            Feature::DmabufAndExclusiveOpen => (2, 10, 0),
        }
    }

    /// The ioctl API version that has the feature (2 for all of them).
    pub const fn api(self) -> u32 {
        2
    }
}

impl DriverVersion {
    /// From a GET_DRIVER_INFO answer (`out` as the kernel filled it).
    pub fn from_out(out: &GetDriverInfoOut) -> Self {
        let semver = (out.output_size_bytes as usize >= size_of::<GetDriverInfoOut>()).then_some((
            out.driver_version_major,
            out.driver_version_minor,
            out.driver_version_patch,
        ));
        DriverVersion { api: out.driver_version, semver }
    }

    /// Whether this driver has `f`. API 1 drivers have none of them; API 2 drivers without a
    /// semantic version cannot exist (both arrived in 2.0.0), so they are judged as 2.0.0.
    pub fn has(&self, f: Feature) -> bool {
        if self.api < f.api() {
            return false;
        }
        self.semver.unwrap_or((2, 0, 0)) >= f.since()
    }
}

impl std::fmt::Display for DriverVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.semver {
            Some((a, b, c)) => write!(f, "tt-kmd {a}.{b}.{c} (ioctl API {})", self.api),
            None if self.api < 2 => write!(f, "tt-kmd 1.x (ioctl API {}, no semantic version)", self.api),
            None => write!(f, "tt-kmd (ioctl API {}, no semantic version)", self.api),
        }
    }
}

// ---- the calls --------------------------------------------------------------------------------
//
// Every request passes a pointer to its in/out struct; the one place that calls ioctl(2) is
// `kernel::DeviceFile`, behind the `kernel::Kernel` trait (the simulator answers the same
// structs as bytes). `IoctlArg` ties each struct to its request.

/// An ioctl argument struct and the request that takes it.
pub trait IoctlArg: FromBytes + IntoBytes + Immutable + KnownLayout + Copy {
    const REQUEST: ioctl_num_type;
    /// For messages: `TENSTORRENT_IOCTL_<NAME>`.
    const NAME: &'static str;
}

macro_rules! ioctl_args {
    ($($t:ty => $name:ident),* $(,)?) => {
        $(impl IoctlArg for $t {
            const REQUEST: ioctl_num_type = req::$name;
            const NAME: &'static str = stringify!($name);
        })*
    };
}

ioctl_args! {
    GetDeviceInfo => GET_DEVICE_INFO,
    QueryMappingsBuf => QUERY_MAPPINGS,
    AllocateDmaBuf => ALLOCATE_DMA_BUF,
    FreeDmaBuf => FREE_DMA_BUF,
    GetDriverInfo => GET_DRIVER_INFO,
    ResetDevice => RESET_DEVICE,
    PinPagesExtended => PIN_PAGES,
    LockCtl => LOCK_CTL,
    MapPeerBar => MAP_PEER_BAR,
    UnpinPages => UNPIN_PAGES,
    AllocateTlb => ALLOCATE_TLB,
    FreeTlb => FREE_TLB,
    ConfigureTlb => CONFIGURE_TLB,
    SetNocCleanup => SET_NOC_CLEANUP,
    PowerState => SET_POWER_STATE,
    ExportTlbDmabuf => EXPORT_TLB_DMABUF,
}

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
        // tt-kmd ioctl.h at 4af71921: every request is _IO(0xFA, n).
        let cases: [(&str, ioctl_num_type, u32, u32); 17] = [
            ("GET_DEVICE_INFO", req::GET_DEVICE_INFO, 0, 0xFA00),
            ("GET_HARVESTING", req::GET_HARVESTING, 1, 0xFA01),
            ("QUERY_MAPPINGS", req::QUERY_MAPPINGS, 2, 0xFA02),
            ("ALLOCATE_DMA_BUF", req::ALLOCATE_DMA_BUF, 3, 0xFA03),
            ("FREE_DMA_BUF", req::FREE_DMA_BUF, 4, 0xFA04),
            ("GET_DRIVER_INFO", req::GET_DRIVER_INFO, 5, 0xFA05),
            ("RESET_DEVICE", req::RESET_DEVICE, 6, 0xFA06),
            ("PIN_PAGES", req::PIN_PAGES, 7, 0xFA07),
            ("LOCK_CTL", req::LOCK_CTL, 8, 0xFA08),
            ("MAP_PEER_BAR", req::MAP_PEER_BAR, 9, 0xFA09),
            ("UNPIN_PAGES", req::UNPIN_PAGES, 10, 0xFA0A),
            ("ALLOCATE_TLB", req::ALLOCATE_TLB, 11, 0xFA0B),
            ("FREE_TLB", req::FREE_TLB, 12, 0xFA0C),
            ("CONFIGURE_TLB", req::CONFIGURE_TLB, 13, 0xFA0D),
            ("SET_NOC_CLEANUP", req::SET_NOC_CLEANUP, 14, 0xFA0E),
            ("SET_POWER_STATE", req::SET_POWER_STATE, 15, 0xFA0F),
            ("EXPORT_TLB_DMABUF", req::EXPORT_TLB_DMABUF, 16, 0xFA10),
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

    /// Sizes of every struct of tt-kmd's `ioctl.h` at commit 4af71921 (2026-07-16, driver
    /// 2.10.1), as a C compiler lays them out on 64-bit Linux. The compile-time asserts beside
    /// each definition check the same figures field by field.
    #[test]
    fn layouts_match_ttkmd_4af71921() {
        use core::mem::size_of;
        let figures: [(&str, usize, usize); 31] = [
            ("tenstorrent_get_device_info_out", size_of::<GetDeviceInfoOut>(), 20),
            ("tenstorrent_get_device_info", size_of::<GetDeviceInfo>(), 24),
            ("tenstorrent_query_mappings_in", size_of::<QueryMappingsIn>(), 8),
            ("tenstorrent_mapping", size_of::<Mapping>(), 24),
            ("tenstorrent_query_mappings", size_of::<QueryMappings>(), 8),
            ("tenstorrent_allocate_dma_buf_in", size_of::<AllocateDmaBufIn>(), 24),
            ("tenstorrent_allocate_dma_buf_out", size_of::<AllocateDmaBufOut>(), 40),
            ("tenstorrent_allocate_dma_buf", size_of::<AllocateDmaBuf>(), 64),
            ("tenstorrent_free_dma_buf", size_of::<FreeDmaBuf>(), 0),
            ("tenstorrent_get_driver_info_out", size_of::<GetDriverInfoOut>(), 12),
            ("tenstorrent_get_driver_info", size_of::<GetDriverInfo>(), 16),
            ("tenstorrent_reset_device", size_of::<ResetDevice>(), 16),
            ("tenstorrent_pin_pages_in", size_of::<PinPagesIn>(), 24),
            ("tenstorrent_pin_pages_out", size_of::<PinPagesOut>(), 8),
            ("tenstorrent_pin_pages_out_extended", size_of::<PinPagesOutExtended>(), 16),
            ("tenstorrent_pin_pages", size_of::<PinPages>(), 32),
            ("tenstorrent_unpin_pages", size_of::<UnpinPages>(), 24),
            ("tenstorrent_lock_ctl_in", size_of::<LockCtlIn>(), 12),
            ("tenstorrent_lock_ctl_out", size_of::<LockCtlOut>(), 4),
            ("tenstorrent_lock_ctl", size_of::<LockCtl>(), 16),
            ("tenstorrent_map_peer_bar_in", size_of::<MapPeerBarIn>(), 24),
            ("tenstorrent_map_peer_bar", size_of::<MapPeerBar>(), 40),
            ("tenstorrent_allocate_tlb", size_of::<AllocateTlb>(), 48),
            ("tenstorrent_free_tlb", size_of::<FreeTlb>(), 4),
            ("tenstorrent_noc_tlb_config", size_of::<NocTlbConfig>(), 32),
            ("tenstorrent_configure_tlb_in", size_of::<ConfigureTlbIn>(), 40),
            ("tenstorrent_configure_tlb", size_of::<ConfigureTlb>(), 48),
            ("tenstorrent_set_noc_cleanup", size_of::<SetNocCleanup>(), 32),
            ("tenstorrent_power_state", size_of::<PowerState>(), 40),
            ("tenstorrent_export_tlb_dmabuf", size_of::<ExportTlbDmabuf>(), 32),
            ("tenstorrent_get_driver_info_out (1.x prefix)", GET_DRIVER_INFO_OUT_V1_SIZE as usize, 8),
        ];
        for (name, ours, theirs) in figures {
            assert_eq!(ours, theirs, "struct {name}: tt-kmd 4af71921 says {theirs} bytes");
        }
        let flags = [
            ("RESET_DEVICE_USER_RESET", RESET_DEVICE_USER_RESET, 3),
            ("RESET_DEVICE_ASIC_RESET", RESET_DEVICE_ASIC_RESET, 4),
            ("RESET_DEVICE_ASIC_DMC_RESET", RESET_DEVICE_ASIC_DMC_RESET, 5),
            ("RESET_DEVICE_POST_RESET", RESET_DEVICE_POST_RESET, 6),
            ("PIN_PAGES_READ_ONLY", PIN_PAGES_READ_ONLY, 8),
            ("LOCK_CTL_ACQUIRE_BLOCKING", LOCK_CTL_ACQUIRE_BLOCKING, 3),
            ("TENSTORRENT_DRIVER_VERSION", TENSTORRENT_DRIVER_VERSION, 2),
        ];
        for (name, ours, theirs) in flags {
            assert_eq!(ours, theirs, "{name}: tt-kmd 4af71921 says {theirs}");
        }
        assert_eq!(power_validity(15, 14), 0xEF);
    }

    #[test]
    fn driver_versions_gate_features() {
        let out = |size, api, v: (u8, u8, u8)| GetDriverInfoOut {
            output_size_bytes: size,
            driver_version: api,
            driver_version_major: v.0,
            driver_version_minor: v.1,
            driver_version_patch: v.2,
            reserved0: 0,
        };
        // Every 1.x driver (ttkmd-1.34 included: `ioctl.h` there still says API 1) has none.
        let old = DriverVersion::from_out(&out(8, 1, (0, 0, 0)));
        assert_eq!(old.semver, None);
        assert!(!old.has(Feature::TlbWindows));
        assert_eq!(old.to_string(), "tt-kmd 1.x (ioctl API 1, no semantic version)");
        // Each feature against the last release without it and the first with it, as the tags'
        // `ioctl.h` / `chardev.c` have them.
        let cases = [
            (Feature::TlbWindows, None, (2, 0, 0)),
            (Feature::NocCleanup, Some((2, 1, 0)), (2, 2, 0)),
            (Feature::ResetSequence, Some((2, 3, 0)), (2, 4, 0)),
            (Feature::PowerAware, Some((2, 5, 0)), (2, 6, 0)),
            (Feature::BlockingLock, Some((2, 6, 0)), (2, 7, 0)),
            (Feature::ReadOnlyPin, Some((2, 8, 0)), (2, 9, 0)),
            (Feature::DmabufAndExclusiveOpen, Some((2, 9, 99)), (2, 10, 0)),
        ];
        for (f, without, with) in cases {
            if let Some(v) = without {
                assert!(!DriverVersion::from_out(&out(12, 2, v)).has(f), "{f:?} is not in {v:?}");
            }
            assert!(DriverVersion::from_out(&out(12, 2, with)).has(f), "{f:?} is in {with:?}");
            assert_eq!(f.since(), with, "{f:?}");
        }
        let v210 = DriverVersion::from_out(&out(12, 2, (2, 10, 1)));
        assert_eq!(v210.to_string(), "tt-kmd 2.10.1 (ioctl API 2)");
    }

    #[test]
    fn unicast_config_targets_one_core() {
        let c = NocTlbConfig::unicast(3, 4, 0x1000, 1);
        assert_eq!((c.x_end, c.y_end, c.x_start, c.y_start, c.mcast, c.noc), (3, 4, 0, 0, 0, 1));
        assert_eq!(c.addr, 0x1000);
    }
}
