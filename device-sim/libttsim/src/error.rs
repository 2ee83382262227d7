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
//! The sink has its own lock, never held across a DMA callback, so the DMA
//! port reports through it while a call holds the simulator's state.

use cqlab_sim::chip::SimError;
use std::io::Write;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Mutex;
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

#[derive(Default)]
struct Sink {
    last: Option<String>,
    count: u64,
}

static SINK: Mutex<Sink> = Mutex::new(Sink { last: None, count: 0 });

fn sink() -> std::sync::MutexGuard<'static, Sink> {
    // Nothing panics while holding it; a poisoned sink is still a sink.
    SINK.lock().unwrap_or_else(|p| p.into_inner())
}

/// Reports that `call` (the call with its arguments) failed with `err`.
pub fn report(call: &str, err: &ApiError) {
    let line = format!("{call}: {err}");
    note(Log::Errors, &line);
    let mut s = sink();
    s.last = Some(line);
    s.count += 1;
}

/// The last error's text, if any.
pub fn last() -> Option<String> {
    sink().last.clone()
}

/// Errors reported since load (or the last [`clear`]).
pub fn count() -> u64 {
    sink().count
}

/// Forgets the last error and zeroes the count.
pub fn clear() {
    *sink() = Sink::default();
}
