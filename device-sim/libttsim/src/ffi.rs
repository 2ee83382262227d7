//! The C calls, one function each, behind the exported symbols that
//! [`crate::export_libttsim!`] defines: raw pointers become slices here
//! (checked, then `// SAFETY:`), and nowhere else; the work is done on the
//! state ([`crate::state`]) by the chip ([`crate::device`]).
//!
//! Each function's body runs in [`Entry::c`] or [`Entry::c_unwind`], as its
//! export's ABI: calls that can make the device run or touch host memory
//! (`clock*`, `pci_mem_*`, `tile_*`, `cqlab_ttsim_peek`) may unwind a DMA
//! callback's C++ exception, so a panic (a bug) in one aborts the process
//! after its message; the others catch a panic, report it and return their
//! failure value ([`crate::entry`] says why). Either way a panic never
//! crosses into C.
#![allow(unsafe_code)] // the C ABI: docs/design.md, "Where `unsafe` lives"

use crate::device::DramAt;
use crate::dma::{Callbacks, DmaRead, DmaWrite};
use crate::entry::{call, Entry};
use crate::error::{self, ApiError};
use crate::state::{Broken, Lib};
use crate::stats::Stats;
use cqlab_abi::arch::Arch;
use std::ffi::{c_char, c_void, CStr};

/// The caller's buffer of `size` bytes to fill (`None`: refused, reported).
///
/// # Safety
/// `p` is null or valid for writes of `size` bytes for the whole call, and
/// nothing else reads or writes them meanwhile (not even the host's DMA
/// callbacks, which the call may run).
unsafe fn out_buf<'a>(entry: &Entry, p: *mut c_void, size: u32) -> Option<&'a mut [u8]> {
    if size == 0 {
        return Some(&mut []);
    }
    if p.is_null() {
        entry.report(&ApiError::NullPointer { what: "the destination buffer", size });
        return None;
    }
    // SAFETY: non-null, and the caller guarantees `size` writable bytes
    // that nothing else touches during the call.
    Some(unsafe { std::slice::from_raw_parts_mut(p.cast::<u8>(), size as usize) })
}

/// The caller's `size` bytes to take.
///
/// # Safety
/// `p` is null or valid for reads of `size` bytes for the whole call, and
/// nothing writes them meanwhile (not even the host's DMA callbacks).
unsafe fn in_buf<'a>(entry: &Entry, p: *const c_void, size: u32) -> Option<&'a [u8]> {
    if size == 0 {
        return Some(&[]);
    }
    if p.is_null() {
        entry.report(&ApiError::NullPointer { what: "the source buffer", size });
        return None;
    }
    // SAFETY: non-null, and the caller guarantees `size` readable bytes
    // that nothing writes during the call.
    Some(unsafe { std::slice::from_raw_parts(p.cast::<u8>(), size as usize) })
}

/// A read: fills `buf` through `f`, or with 0xFF bytes when it fails.
fn read_into(entry: &Entry, buf: &mut [u8], f: impl FnOnce(&mut Lib, &mut [u8]) -> Result<(), ApiError>) {
    if call(entry, Broken::Refuse, |lib| f(lib, buf)).is_none() {
        buf.fill(0xFF);
    }
}

pub fn init(arch: Arch) {
    let d = || "libttsim_init()".to_string();
    Entry::c(&d, |e| call(e, Broken::Refuse, |lib| lib.init(arch)));
}

pub fn exit() {
    let d = || "libttsim_exit()".to_string();
    Entry::c(&d, |e| call(e, Broken::Allow, Lib::exit));
}

pub fn set_pci_dma_mem_callbacks(read: Option<DmaRead>, write: Option<DmaWrite>) {
    let d = || format!("libttsim_set_pci_dma_mem_callbacks(rd={read:?}, wr={write:?})");
    Entry::c(&d, |e| {
        call(e, Broken::Allow, |lib| {
            if lib.sim.is_some() {
                return Err(ApiError::CallbacksWhileRunning);
            }
            lib.callbacks = match (read, write) {
                (Some(read), Some(write)) => Some(Callbacks { read, write }),
                // Both null: the host takes its callbacks back.
                (None, None) => None,
                _ => return Err(ApiError::HalfCallbacks { kept: lib.callbacks.is_some() }),
            };
            Ok(())
        })
    });
}

pub fn pci_config_rd32(bdf: u32, offset: u32) -> u32 {
    let d = || format!("libttsim_pci_config_rd32(bdf={bdf:#x}, offset={offset:#x})");
    Entry::c(&d, |e| call(e, Broken::Refuse, |lib| lib.selected()?.config_read(bdf, offset)).unwrap_or(u32::MAX))
}

pub fn clock(n: u32) {
    let d = || format!("libttsim_clock({n})");
    Entry::c_unwind(&d, |e| {
        call(e, Broken::Refuse, |lib| {
            lib.selected()?.clock(n as u64);
            Ok(())
        })
    });
}

/// Not atomic across chips: `Sim::clock_all` says what a DMA callback's
/// exception leaves, and how the next call makes it up.
pub fn clock_all_devices(n: u32) {
    let d = || format!("libttsim_clock_all_devices({n})");
    Entry::c_unwind(&d, |e| {
        call(e, Broken::Refuse, |lib| {
            lib.sim()?.clock_all(n);
            Ok(())
        })
    });
}

/// # Safety
/// `p` is null or valid for writes of `size` bytes, untouched by the DMA
/// callbacks (`out_buf`).
pub unsafe fn pci_mem_rd_bytes(paddr: u64, p: *mut c_void, size: u32) {
    let d = || format!("libttsim_pci_mem_rd_bytes(paddr={paddr:#x}, size={size})");
    Entry::c_unwind(&d, |e| {
        // SAFETY: forwarded from the caller.
        let Some(buf) = (unsafe { out_buf(e, p, size) }) else { return };
        read_into(e, buf, |lib, buf| lib.selected()?.bar_read(paddr, buf));
    })
}

/// # Safety
/// `p` is null or valid for reads of `size` bytes, unwritten by the DMA
/// callbacks (`in_buf`).
pub unsafe fn pci_mem_wr_bytes(paddr: u64, p: *const c_void, size: u32) {
    let d = || format!("libttsim_pci_mem_wr_bytes(paddr={paddr:#x}, size={size})");
    Entry::c_unwind(&d, |e| {
        // SAFETY: forwarded from the caller.
        let Some(data) = (unsafe { in_buf(e, p, size) }) else { return };
        call(e, Broken::Refuse, |lib| lib.selected()?.bar_write(paddr, data));
    })
}

/// # Safety
/// `p` is null or valid for writes of `size` bytes, untouched by the DMA
/// callbacks (`out_buf`).
pub unsafe fn tile_rd_bytes(x: u32, y: u32, addr: u64, p: *mut c_void, size: u32) {
    let d = || format!("libttsim_tile_rd_bytes(x={x}, y={y}, addr={addr:#x}, size={size})");
    Entry::c_unwind(&d, |e| {
        // SAFETY: forwarded from the caller.
        let Some(buf) = (unsafe { out_buf(e, p, size) }) else { return };
        read_into(e, buf, |lib, buf| lib.selected()?.tile_read(x, y, addr, buf));
    })
}

/// # Safety
/// `p` is null or valid for writes of `size` bytes, untouched by the DMA
/// callbacks (`out_buf`).
pub unsafe fn tile_peek_bytes(x: u32, y: u32, addr: u64, p: *mut c_void, size: u32) -> i32 {
    let d = || format!("cqlab_ttsim_peek(x={x}, y={y}, addr={addr:#x}, size={size})");
    Entry::c_unwind(&d, |e| {
        // SAFETY: forwarded from the caller.
        let Some(buf) = (unsafe { out_buf(e, p, size) }) else { return -1 };
        match call(e, Broken::Refuse, |lib| lib.selected()?.tile_peek(x, y, addr, buf)) {
            Some(()) => 0,
            None => {
                buf.fill(0xFF);
                -1
            }
        }
    })
}

/// # Safety
/// `p` is null or valid for reads of `size` bytes, unwritten by the DMA
/// callbacks (`in_buf`).
pub unsafe fn tile_wr_bytes(x: u32, y: u32, addr: u64, p: *const c_void, size: u32) {
    let d = || format!("libttsim_tile_wr_bytes(x={x}, y={y}, addr={addr:#x}, size={size})");
    Entry::c_unwind(&d, |e| {
        // SAFETY: forwarded from the caller.
        let Some(data) = (unsafe { in_buf(e, p, size) }) else { return };
        call(e, Broken::Refuse, |lib| lib.selected()?.tile_write(x, y, addr, data));
    })
}

/// Returns the chip's handle: an opaque token (`chip_id + 1`), never
/// dereferenced; NULL if it cannot be created.
pub fn create_device_by_id(chip_id: u32, chip_x: i32, chip_y: i32) -> *mut c_void {
    let d = || format!("libttsim_create_device_by_id(chip_id={chip_id}, chip_x={chip_x}, chip_y={chip_y})");
    Entry::c(&d, |e| {
        call(e, Broken::Refuse, |lib| {
            let callbacks = lib.callbacks;
            lib.sim()?.create(chip_id, callbacks)?;
            Ok(std::ptr::without_provenance_mut(chip_id as usize + 1))
        })
        .unwrap_or(std::ptr::null_mut())
    })
}

pub fn select_device_by_id(chip_id: u32) {
    let d = || format!("libttsim_select_device_by_id({chip_id})");
    Entry::c(&d, |e| {
        call(e, Broken::Refuse, |lib| {
            let sim = lib.sim()?;
            sim.device(chip_id)?;
            sim.selected = chip_id;
            Ok(())
        })
    });
}

/// # Safety
/// `p` is null or valid for writes of `size` bytes.
pub unsafe fn dram_rd_bytes(chip: u32, at: DramAt, addr: u64, p: *mut c_void, size: u32) {
    let d = || format!("libttsim_dram_*rd_bytes_by_id(chip_id={chip}, {at:?}, addr={addr:#x}, size={size})");
    Entry::c(&d, |e| {
        // SAFETY: forwarded from the caller.
        let Some(buf) = (unsafe { out_buf(e, p, size) }) else { return };
        read_into(e, buf, |lib, buf| lib.sim()?.device(chip)?.dram_read(at, addr, buf));
    })
}

/// # Safety
/// `p` is null or valid for reads of `size` bytes.
pub unsafe fn dram_wr_bytes(chip: u32, at: DramAt, addr: u64, p: *const c_void, size: u32) {
    let d = || format!("libttsim_dram_*wr_bytes_by_id(chip_id={chip}, {at:?}, addr={addr:#x}, size={size})");
    Entry::c(&d, |e| {
        // SAFETY: forwarded from the caller.
        let Some(data) = (unsafe { in_buf(e, p, size) }) else { return };
        call(e, Broken::Refuse, |lib| lib.sim()?.device(chip)?.dram_write(at, addr, data));
    })
}

/// An Ethernet or switch call: refused, reported.
pub fn no_ethernet(call_name: &'static str, args: String) {
    let d = || format!("{call_name}({args})");
    Entry::c(&d, |e| call(e, Broken::Allow, |_| Err::<(), _>(ApiError::NoEthernet { call: call_name })));
}

// ---- cqlab's own calls ----

/// Copies this thread's last error (NUL-terminated, truncated to `cap`)
/// into `buf`; returns its full length in bytes (0: none).
///
/// # Safety
/// `buf` is null or valid for writes of `cap` bytes.
pub unsafe fn last_error(buf: *mut c_char, cap: u32) -> u32 {
    let Some(msg) = error::last() else {
        if !buf.is_null() && cap > 0 {
            // SAFETY: non-null with at least one writable byte.
            unsafe { *buf = 0 };
        }
        return 0;
    };
    if !buf.is_null() && cap > 0 {
        let n = msg.len().min(cap as usize - 1);
        // SAFETY: `buf` holds `cap` writable bytes; `n + 1 <= cap`.
        let out = unsafe { std::slice::from_raw_parts_mut(buf.cast::<u8>(), n + 1) };
        out[..n].copy_from_slice(&msg.as_bytes()[..n]);
        out[n] = 0;
    }
    msg.len() as u32
}

pub fn error_count() -> u64 {
    error::count()
}

pub fn clear_error() {
    error::clear()
}

/// The selected chip's state digest (`Chip::digest`); 0 when it fails.
pub fn digest() -> u64 {
    let d = || "cqlab_ttsim_digest()".to_string();
    Entry::c(&d, |e| call(e, Broken::Refuse, |lib| Ok(lib.selected()?.chip.digest())).unwrap_or(0))
}

/// The selected chip's device time in cycles; 0 when it fails.
pub fn device_time() -> u64 {
    let d = || "cqlab_ttsim_device_time()".to_string();
    Entry::c(&d, |e| call(e, Broken::Refuse, |lib| Ok(lib.selected()?.chip.now())).unwrap_or(0))
}

/// The selected chip's counter `name` (`stats::Stats::NAMES`); 0 when it fails.
///
/// # Safety
/// `name` is null or a NUL-terminated string.
pub unsafe fn stat(name: *const c_char) -> u64 {
    // SAFETY: null, or NUL-terminated as the caller guarantees.
    let name = unsafe { c_string(name) };
    let d = || format!("cqlab_ttsim_stat({})", quoted(&name));
    Entry::c(&d, |e| {
        let Some(name) = &name else {
            e.report(&ApiError::NullPointer { what: "the counter's name", size: 0 });
            return 0;
        };
        call(e, Broken::Refuse, |lib| {
            lib.selected()?
                .stats
                .get(name)
                .ok_or_else(|| ApiError::NoSuchStat { name: name.clone(), names: Stats::NAMES })
        })
        .unwrap_or(0)
    })
}

/// Sets setting `name` (a `CQLAB_TTSIM_*` variable) to `value` for the next
/// `init`, over the environment's; 0 when taken, -1 when refused (the
/// reason is the last error).
///
/// # Safety
/// `name` and `value` are null or NUL-terminated strings.
pub unsafe fn set(arch: Arch, name: *const c_char, value: *const c_char) -> i32 {
    // SAFETY: null, or NUL-terminated as the caller guarantees.
    let (name, value) = unsafe { (c_string(name), c_string(value)) };
    let d = || format!("cqlab_ttsim_set({}, {})", quoted(&name), quoted(&value));
    Entry::c(&d, |e| {
        let (Some(name), Some(value)) = (&name, &value) else {
            e.report(&ApiError::NullPointer { what: "the setting's name or value", size: 0 });
            return -1;
        };
        call(e, Broken::Allow, |lib| lib.set(arch, name, value).map(|()| 0)).unwrap_or(-1)
    })
}

/// A C string argument as a call's description shows it.
fn quoted(s: &Option<String>) -> String {
    s.as_ref().map_or_else(|| "NULL".to_string(), |s| format!("{s:?}"))
}

/// The C string at `p` (lossily UTF-8), or `None` for a null pointer.
///
/// # Safety
/// `p` is null or a NUL-terminated string.
unsafe fn c_string(p: *const c_char) -> Option<String> {
    // SAFETY: non-null here, and NUL-terminated as the caller guarantees.
    (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
}
