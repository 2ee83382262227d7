//! How a call that cannot be served says so. The libttsim calls return
//! nothing (or a bare value), so an error is reported three ways:
//!
//! 1. on stderr, one line naming the call with its arguments and the reason
//!    (`cqlab libttsim: libttsim_tile_rd_bytes(x=99, y=0, ...): ...`),
//!    unless `CQLAB_TTSIM_LOG=off`;
//! 2. as the last error, readable through `cqlab_ttsim_last_error` (and a
//!    count through `cqlab_ttsim_error_count`);
//! 3. in the result: a read fills its buffer with 0xFF bytes (what a PCIe
//!    read nobody answers returns), `pci_config_rd32` returns 0xFFFFFFFF,
//!    `create_device_by_id` returns NULL; a write does nothing.
//!
//! The last error and the count are the calling thread's, as `errno` and
//! `dlerror` are: an error is the call's that failed, and the host reads it
//! after that call, on that thread. The C API gives no other owner: most
//! calls name no chip (they address the selected one, and the selection is
//! the process's), some fail before any chip exists (`init`, settings, calls
//! before `init`), and tt-umd makes each call on the thread that uses its
//! device. So two threads driving two chips each read their own errors,
//! and one thread's `cqlab_ttsim_clear_error` leaves the others'. A DMA
//! callback runs on the thread of the call that made the device run, so
//! what the DMA port reports (a dropped access) is that call's.
//!
//! A thread's record is made at its first error and lives until the thread
//! exits. It has a destructor, so on glibc a `dlclose` of the library
//! leaves it mapped while a thread that reported an error lives (a reload
//! then finds it as it was, its threads' errors too; `init` starts the
//! simulator afresh either way: `crate::state`).

use cqlab_sim::chip::SimError;
use std::cell::{Cell, RefCell};
use std::io::Write;
use std::sync::atomic::{AtomicU8, Ordering};
use thiserror::Error;

/// Why a call was refused.
#[derive(Debug, Error)]
pub enum ApiError {
    #[error("the simulator is not running: call libttsim_init first")]
    NotRunning,
    #[error("the simulator is running already (libttsim_exit first)")]
    AlreadyRunning,
    #[error("{var}={value:?}: {reason}")]
    Setting { var: &'static str, value: String, reason: String },
    #[error("{what} is a null pointer, for {size} bytes")]
    NullPointer { what: &'static str, size: u32 },
    #[error(
        "one DMA callback is a null pointer and the other is not: pass both, or both null to take them back{}",
        if *kept { " (the callbacks registered before are kept)" } else { "" }
    )]
    HalfCallbacks { kept: bool },
    #[error("no simulated chip {id}: create it with libttsim_create_device_by_id (chips: {existing:?})")]
    NoSuchChip { id: u32, existing: Vec<u32> },
    #[error("chip ids are PCI device numbers, 0..{max}; {id} is not one")]
    ChipIdRange { id: u32, max: u32 },
    #[error(
        "tile ({x}, {y}) is off the NOC grid: NOC coordinates are 6 bits, and the {chip} grid is {grid_x} x {grid_y}"
    )]
    OffGrid { x: u32, y: u32, chip: &'static str, grid_x: u8, grid_y: u8 },
    #[error("address {addr:#x} has bits above the tile's 36-bit local address{hint}")]
    WideAddress { addr: u64, hint: &'static str },
    #[error("({x}, {y}) is {what}, not a DRAM tile of a modelled channel")]
    NotDram { x: u32, y: u32, what: String },
    #[error("DRAM channel {channel} does not exist or is harvested ({channels} channels)")]
    NoDramChannel { channel: u32, channels: usize },
    #[error("physical address {paddr:#x} (+{size}) is in no BAR (BAR0 {bar0:#x}, BAR2 {bar2:#x}, BAR4 {bar4:#x})")]
    NoBar { paddr: u64, size: u32, bar0: u64, bar2: u64, bar4: u64 },
    #[error("BAR{bar} offset {offset:#x} + {size} runs past the end of the {bar_size:#x}-byte BAR")]
    PastBar { bar: u8, offset: u64, size: u32, bar_size: u64 },
    #[error("BAR2 offset {offset:#x} (+{size}): {reason}")]
    Bar2 { offset: u64, size: u32, reason: &'static str },
    #[error(
        "PCI config space is read 4 bytes at a time at 4-byte offsets below 0x1000; offset {offset:#x} is not one"
    )]
    ConfigOffset { offset: u32 },
    #[error(transparent)]
    Sim(#[from] SimError),
    #[error("{call}: cqlab's chip model has no Ethernet (its Ethernet tiles refuse every access), so there is no virtual switch or link to set up")]
    NoEthernet { call: &'static str },
    #[error("no DMA callbacks registered (libttsim_set_pci_dma_mem_callbacks): the device's {what} of {len} bytes at host-memory offset {offset:#x} is dropped")]
    NoCallbacks { what: &'static str, len: usize, offset: u64 },
    #[error("DMA callbacks cannot be replaced while the simulator runs (libttsim_exit first)")]
    CallbacksWhileRunning,
    #[error("a DMA callback threw (a host exception unwound through the call): the device access it served is lost, the chip runs on")]
    DmaUnwound,
    #[error("a DMA callback called back into the library: refused (the callbacks may only touch host memory)")]
    Reentrant,
    #[error("an earlier call hit an internal error, the chip state is unknown: {0}; libttsim_exit and libttsim_init start afresh")]
    Broken(String),
    #[error("no setting {name:?}; settings: {}", names.join(", "))]
    NoSuchSetting { name: String, names: &'static [&'static str] },
    #[error("settings apply at libttsim_init: set them before it (or after libttsim_exit)")]
    SetWhileRunning,
    #[error("no counter {name:?}; counters: {}", names.join(", "))]
    NoSuchStat { name: String, names: &'static [&'static str] },
    #[error("internal error (a bug in cqlab's simulator): {0}")]
    Internal(String),
}

/// What goes to stderr.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Log {
    /// Nothing.
    Off = 0,
    /// Errors (the default).
    Errors = 1,
    /// Errors and every call with its arguments.
    Calls = 2,
}

/// Not read from the environment yet.
const UNREAD: u8 = u8::MAX;

static LOG: AtomicU8 = AtomicU8::new(UNREAD);

/// Set from the settings at every `init`.
pub fn set_log(level: Log) {
    LOG.store(level as u8, Ordering::Relaxed);
}

/// Before the first `init`, `CQLAB_TTSIM_LOG` as the environment has it.
pub fn log_level() -> Log {
    let mut v = LOG.load(Ordering::Relaxed);
    if v == UNREAD {
        v = match std::env::var("CQLAB_TTSIM_LOG").as_deref() {
            Ok("off") => Log::Off,
            Ok("calls") => Log::Calls,
            _ => Log::Errors,
        } as u8;
        LOG.store(v, Ordering::Relaxed);
    }
    match v {
        0 => Log::Off,
        1 => Log::Errors,
        _ => Log::Calls,
    }
}

/// A line on stderr when `level` is logged.
pub fn note(level: Log, line: &str) {
    if log_level() as u8 >= level as u8 && level != Log::Off {
        // A note only: a closed stderr must not end (or abort) the host process.
        let _ = writeln!(std::io::stderr().lock(), "cqlab libttsim: {line}");
    }
}

/// One thread's errors.
struct Sink {
    last: Option<String>,
    count: u64,
}

thread_local! {
    static SINK: RefCell<Sink> = const { RefCell::new(Sink { last: None, count: 0 }) };
    /// This thread has touched `SINK`, whose destructor is then registered:
    /// reading or clearing no errors does not register it.
    static USED: Cell<bool> = const { Cell::new(false) };
}

/// `f` on this thread's errors, if it has any record (`report` makes one);
/// `None` too while the thread is being torn down (a host's thread-local
/// destructor calling the library): the error is then only on stderr.
fn with_sink<R>(report: bool, f: impl FnOnce(&mut Sink) -> R) -> Option<R> {
    if !report && !USED.get() {
        return None;
    }
    USED.set(true);
    SINK.try_with(|s| f(&mut s.borrow_mut())).ok()
}

/// Reports that `call` (the call with its arguments) failed with `err`:
/// on stderr, and as this thread's last error.
pub fn report(call: &str, err: &ApiError) {
    let line = format!("{call}: {err}");
    note(Log::Errors, &line);
    with_sink(true, |s| {
        s.last = Some(line);
        s.count += 1;
    });
}

/// This thread's last error's text, if any.
pub fn last() -> Option<String> {
    with_sink(false, |s| s.last.clone()).flatten()
}

/// Errors reported on this thread since it began (or its last [`clear`]).
pub fn count() -> u64 {
    with_sink(false, |s| s.count).unwrap_or(0)
}

/// Forgets this thread's last error and zeroes its count.
pub fn clear() {
    with_sink(false, |s| *s = Sink { last: None, count: 0 });
}
