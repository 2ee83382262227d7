//! `cqlab-ttsim`: cqlab's simulated chip behind the libttsim C API, the
//! shared-library interface tt-umd (and through it tt-metal, with
//! `TT_METAL_SIMULATOR`) loads a simulator by. `libttsim-wh` and
//! `libttsim-bh` beside this crate build it as `libttsim_wh.so` and
//! `libttsim_bh.so` with [`export_libttsim!`]; `cargo xtask libttsim` puts
//! each in `target/libttsim/<arch>/` with the SoC descriptor tt-umd reads
//! beside it (`soc_descriptor.yaml`). docs/libttsim.md says how to use it.
//!
//! Modules: [`ffi`] (the calls, raw pointers in, the unsafe boundary),
//! [`entry`] (how a call enters: its ABI, what a panic or a host's
//! exception does), [`state`] (the process-wide state, the lock,
//! init/exit), [`device`]
//! (one chip: configuration space, BARs, tile and DRAM access, clock),
//! [`dma`] (host memory through the DMA callbacks), [`iatu`] (BAR2's
//! outbound address translation), [`config_space`], [`settings`] (the
//! environment), [`error`] (how errors surface), [`stats`] (counters),
//! [`fixtures`] (what the pytest suite boots through tt-umd).
//!
//! # Symbols
//!
//! tt-umd 0.9.14 looks symbols up with `dlsym` when it creates a device.
//! Finding both `libttsim_create_device_by_id` and
//! `libttsim_select_device_by_id` puts it in multichip mode, where it then
//! requires, besides the nine single-chip calls, `clock_all_devices` and
//! five Ethernet switch calls, and takes the DRAM, fabric and Ethernet-FD
//! calls if present. This library exports:
//! - the nine single-chip calls: `init`, `exit`, `clock`, `tile_rd_bytes`,
//!   `tile_wr_bytes`, `pci_config_rd32`, `pci_mem_rd_bytes`,
//!   `pci_mem_wr_bytes`, `set_pci_dma_mem_callbacks`;
//! - the multichip calls over independent chips: `create_device_by_id`,
//!   `select_device_by_id`, `clock_all_devices`, `dram_rd_bytes_by_id`,
//!   `dram_wr_bytes_by_id`, `dram_core_rd_bytes_by_id`,
//!   `dram_core_wr_bytes_by_id`;
//! - the five switch calls multichip mode requires at load (`switch_reset`,
//!   `switch_register`, `switch_drain`, `configure_eth_link_virtual`,
//!   `switch_register_peer`): the chip has no Ethernet, so each reports
//!   that as an error when called and does nothing;
//! - not the optional ones (`switch_register_fabric_*`,
//!   `eth_fd_capabilities`, `attach/detach_eth_link_fd`): tt-umd then knows
//!   there is nothing of the kind;
//! - cqlab's own: `cqlab_ttsim_last_error`, `cqlab_ttsim_error_count`,
//!   `cqlab_ttsim_clear_error`, `cqlab_ttsim_digest`,
//!   `cqlab_ttsim_device_time`, `cqlab_ttsim_stat`, `cqlab_ttsim_set`.
#![allow(unsafe_code)] // the C ABI: docs/design.md, "Where `unsafe` lives"

pub mod config_space;
pub mod device;
pub mod dma;
pub mod entry;
pub mod error;
pub mod ffi;
pub mod fixtures;
pub mod iatu;
pub mod settings;
pub mod state;
pub mod stats;

pub use cqlab_abi::arch::Arch;

/// The file name of `arch`'s library, as Tenstorrent's ttsim names its own.
pub const fn library_file(arch: Arch) -> &'static str {
    match arch {
        Arch::Wormhole => "libttsim_wh.so",
        Arch::Blackhole => "libttsim_bh.so",
    }
}
pub use std::ffi::{c_char, c_void};

/// Defines the exported libttsim symbols of chip `$arch` in the crate
/// that invokes it (a `cdylib`). Each is a thin call into [`ffi`].
#[macro_export]
macro_rules! export_libttsim {
    ($arch:expr) => {
        use $crate::device::DramAt;
        use $crate::dma::{DmaRead, DmaWrite};
        use $crate::ffi;
        use $crate::{c_char, c_void};

        /// Starts the simulator (chip 0, selected), configured by the
        /// `CQLAB_TTSIM_*` environment variables.
        #[no_mangle]
        pub extern "C" fn libttsim_init() {
            ffi::init($arch)
        }

        /// Stops it: every chip gone, the DMA callbacks forgotten.
        #[no_mangle]
        pub extern "C" fn libttsim_exit() {
            ffi::exit()
        }

        /// The host waits `n_clocks` cycles of the selected chip.
        #[no_mangle]
        pub extern "C-unwind" fn libttsim_clock(n_clocks: u32) {
            ffi::clock(n_clocks)
        }

        /// # Safety
        /// `p` is null or valid for writes of `size` bytes, which nothing
        /// else (the DMA callbacks included) touches during the call.
        #[no_mangle]
        pub unsafe extern "C-unwind" fn libttsim_tile_rd_bytes(x: u32, y: u32, addr: u64, p: *mut c_void, size: u32) {
            // SAFETY: the caller's guarantee, forwarded.
            unsafe { ffi::tile_rd_bytes(x, y, addr, p, size) }
        }

        /// # Safety
        /// `p` is null or valid for reads of `size` bytes, which nothing
        /// writes during the call (the DMA callbacks included).
        #[no_mangle]
        pub unsafe extern "C-unwind" fn libttsim_tile_wr_bytes(x: u32, y: u32, addr: u64, p: *const c_void, size: u32) {
            // SAFETY: the caller's guarantee, forwarded.
            unsafe { ffi::tile_wr_bytes(x, y, addr, p, size) }
        }

        #[no_mangle]
        pub extern "C" fn libttsim_pci_config_rd32(bus_device_function: u32, offset: u32) -> u32 {
            ffi::pci_config_rd32(bus_device_function, offset)
        }

        /// # Safety
        /// `p` is null or valid for writes of `size` bytes, which nothing
        /// else (the DMA callbacks included) touches during the call.
        #[no_mangle]
        pub unsafe extern "C-unwind" fn libttsim_pci_mem_rd_bytes(paddr: u64, p: *mut c_void, size: u32) {
            // SAFETY: the caller's guarantee, forwarded.
            unsafe { ffi::pci_mem_rd_bytes(paddr, p, size) }
        }

        /// # Safety
        /// `p` is null or valid for reads of `size` bytes, which nothing
        /// writes during the call (the DMA callbacks included).
        #[no_mangle]
        pub unsafe extern "C-unwind" fn libttsim_pci_mem_wr_bytes(paddr: u64, p: *const c_void, size: u32) {
            // SAFETY: the caller's guarantee, forwarded.
            unsafe { ffi::pci_mem_wr_bytes(paddr, p, size) }
        }

        /// Registers the host's DMA callbacks (before `init`); both null
        /// takes them back (device accesses to host memory are then
        /// dropped and reported).
        #[no_mangle]
        pub extern "C" fn libttsim_set_pci_dma_mem_callbacks(
            pci_dma_mem_rd_bytes: Option<DmaRead>,
            pci_dma_mem_wr_bytes: Option<DmaWrite>,
        ) {
            ffi::set_pci_dma_mem_callbacks(pci_dma_mem_rd_bytes, pci_dma_mem_wr_bytes)
        }

        /// Creates chip `chip_id` (if it does not exist) and returns its
        /// opaque handle; `chip_x`, `chip_y` (a mesh position for
        /// Ethernet) are ignored.
        #[no_mangle]
        pub extern "C" fn libttsim_create_device_by_id(chip_id: u32, chip_x: i32, chip_y: i32) -> *mut c_void {
            ffi::create_device_by_id(chip_id, chip_x, chip_y)
        }

        #[no_mangle]
        pub extern "C" fn libttsim_select_device_by_id(chip_id: u32) {
            ffi::select_device_by_id(chip_id)
        }

        /// Every chip `n_cycles`, one after the other; not atomic across
        /// chips: a chip whose DMA callback throws leaves the chips after
        /// it owed their cycles, which the next call runs first
        /// (`state::Sim::clock_all`).
        #[no_mangle]
        pub extern "C-unwind" fn libttsim_clock_all_devices(n_cycles: u32) {
            ffi::clock_all_devices(n_cycles)
        }

        /// # Safety
        /// `p` is null or valid for writes of `size` bytes.
        #[no_mangle]
        pub unsafe extern "C" fn libttsim_dram_rd_bytes_by_id(
            chip_id: u32,
            dram_channel: u32,
            addr: u64,
            p: *mut c_void,
            size: u32,
        ) {
            // SAFETY: the caller's guarantee, forwarded.
            unsafe { ffi::dram_rd_bytes(chip_id, DramAt::Channel(dram_channel), addr, p, size) }
        }

        /// # Safety
        /// `p` is null or valid for reads of `size` bytes.
        #[no_mangle]
        pub unsafe extern "C" fn libttsim_dram_wr_bytes_by_id(
            chip_id: u32,
            dram_channel: u32,
            addr: u64,
            p: *const c_void,
            size: u32,
        ) {
            // SAFETY: the caller's guarantee, forwarded.
            unsafe { ffi::dram_wr_bytes(chip_id, DramAt::Channel(dram_channel), addr, p, size) }
        }

        /// # Safety
        /// `p` is null or valid for writes of `size` bytes.
        #[no_mangle]
        pub unsafe extern "C" fn libttsim_dram_core_rd_bytes_by_id(
            chip_id: u32,
            x: u32,
            y: u32,
            addr: u64,
            p: *mut c_void,
            size: u32,
        ) {
            // SAFETY: the caller's guarantee, forwarded.
            unsafe { ffi::dram_rd_bytes(chip_id, DramAt::Tile { x, y }, addr, p, size) }
        }

        /// # Safety
        /// `p` is null or valid for reads of `size` bytes.
        #[no_mangle]
        pub unsafe extern "C" fn libttsim_dram_core_wr_bytes_by_id(
            chip_id: u32,
            x: u32,
            y: u32,
            addr: u64,
            p: *const c_void,
            size: u32,
        ) {
            // SAFETY: the caller's guarantee, forwarded.
            unsafe { ffi::dram_wr_bytes(chip_id, DramAt::Tile { x, y }, addr, p, size) }
        }

        /// No Ethernet: reported as an error, does nothing.
        #[no_mangle]
        pub extern "C" fn libttsim_switch_reset() {
            ffi::no_ethernet("libttsim_switch_reset", String::new())
        }

        /// No Ethernet: reported as an error, does nothing.
        #[no_mangle]
        pub extern "C" fn libttsim_switch_register(dev: *mut c_void, tile_id: u32, mac: u64) {
            ffi::no_ethernet("libttsim_switch_register", format!("dev={dev:?}, tile_id={tile_id}, mac={mac:#x}"))
        }

        /// No Ethernet: reported as an error, does nothing.
        #[no_mangle]
        pub extern "C" fn libttsim_switch_drain() {
            ffi::no_ethernet("libttsim_switch_drain", String::new())
        }

        /// No Ethernet: reported as an error, does nothing.
        #[no_mangle]
        pub extern "C" fn libttsim_configure_eth_link_virtual(dev: *mut c_void, tile_id: u32, local_mac: u64) {
            ffi::no_ethernet(
                "libttsim_configure_eth_link_virtual",
                format!("dev={dev:?}, tile_id={tile_id}, local_mac={local_mac:#x}"),
            )
        }

        /// No Ethernet: reported as an error, does nothing.
        #[no_mangle]
        pub extern "C" fn libttsim_switch_register_peer(
            dev: *mut c_void,
            tile_id: u32,
            peer_dev: *mut c_void,
            peer_tile_id: u32,
        ) {
            ffi::no_ethernet(
                "libttsim_switch_register_peer",
                format!("dev={dev:?}, tile_id={tile_id}, peer_dev={peer_dev:?}, peer_tile_id={peer_tile_id}"),
            )
        }

        /// The calling thread's last error's text, NUL-terminated and
        /// truncated to `cap` bytes, into `buf`; returns its full length
        /// (0: no error).
        ///
        /// # Safety
        /// `buf` is null or valid for writes of `cap` bytes.
        #[no_mangle]
        pub unsafe extern "C" fn cqlab_ttsim_last_error(buf: *mut c_char, cap: u32) -> u32 {
            // SAFETY: the caller's guarantee, forwarded.
            unsafe { ffi::last_error(buf, cap) }
        }

        /// `libttsim_tile_rd_bytes` as an observer: no posted host write
        /// lands and no time passes; 0, or -1 when refused (the last error
        /// says why; the buffer then holds 0xFF bytes). `C-unwind` as
        /// `tile_rd_bytes`: a read of host memory reaches the DMA callbacks,
        /// whose exceptions unwind through the library.
        ///
        /// # Safety
        /// `p` is null or valid for writes of `size` bytes, which nothing
        /// else (the DMA callbacks included) touches during the call.
        #[no_mangle]
        pub unsafe extern "C-unwind" fn cqlab_ttsim_peek(x: u32, y: u32, addr: u64, p: *mut c_void, size: u32) -> i32 {
            // SAFETY: the caller's guarantee, forwarded.
            unsafe { ffi::tile_peek_bytes(x, y, addr, p, size) }
        }

        /// Errors the calling thread's calls reported since it began or
        /// its last `cqlab_ttsim_clear_error`.
        #[no_mangle]
        pub extern "C" fn cqlab_ttsim_error_count() -> u64 {
            ffi::error_count()
        }

        /// Forgets the calling thread's errors (not other threads').
        #[no_mangle]
        pub extern "C" fn cqlab_ttsim_clear_error() {
            ffi::clear_error()
        }

        /// The selected chip's state digest (equal digests: identical runs).
        #[no_mangle]
        pub extern "C" fn cqlab_ttsim_digest() -> u64 {
            ffi::digest()
        }

        /// The selected chip's device time in cycles.
        #[no_mangle]
        pub extern "C" fn cqlab_ttsim_device_time() -> u64 {
            ffi::device_time()
        }

        /// Sets `name` (a `CQLAB_TTSIM_*` setting) to `value` for the next
        /// `libttsim_init`, over the environment's, until `libttsim_exit`;
        /// 0 when taken, -1 when refused (see `cqlab_ttsim_last_error`).
        ///
        /// # Safety
        /// `name` and `value` are null or NUL-terminated strings.
        #[no_mangle]
        pub unsafe extern "C" fn cqlab_ttsim_set(name: *const c_char, value: *const c_char) -> i32 {
            // SAFETY: the caller's guarantee, forwarded.
            unsafe { ffi::set($arch, name, value) }
        }

        /// The selected chip's counter `name` (docs/libttsim.md lists them).
        ///
        /// # Safety
        /// `name` is null or a NUL-terminated string.
        #[no_mangle]
        pub unsafe extern "C" fn cqlab_ttsim_stat(name: *const c_char) -> u64 {
            // SAFETY: the caller's guarantee, forwarded.
            unsafe { ffi::stat(name) }
        }
    };
}
