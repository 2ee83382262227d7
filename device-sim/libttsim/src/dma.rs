//! Device-initiated access to host memory through the host's DMA callbacks
//! (`libttsim_set_pci_dma_mem_callbacks`): a `HostMemory` port for the
//! chip's PCIe tile. Each access goes through the chip's outbound iATU
//! ([`crate::iatu`]) and reaches the callbacks with host bus addresses,
//! synchronously, on the thread inside the libttsim call that made the
//! device run.
//!
//! tt-umd throws C++ exceptions out of its callbacks (an address outside
//! its host-memory channels). They unwind through here and through the
//! chip (`HostMemory` says how the chip stays consistent), and the
//! library's call back to the host; that is why the callbacks are
//! `extern "C-unwind"`. The iATU's lock is released before a callback
//! runs; the library's own lock (`crate::state`) is held, so a callback
//! that calls the library on its own thread is refused (`Reentrant`), and
//! one that waits for another thread's libttsim call would wait forever:
//! a callback only touches host memory, as tt-umd's do.
//!
//! An access the iATU splits over two regions is two callbacks; one that
//! unwinds on the second has landed the first (a write in part).
#![allow(unsafe_code)] // the C ABI: docs/design.md, "Where `unsafe` lives"

use crate::error::{note, report, ApiError, Log};
use crate::iatu::Iatu;
use crate::stats::Stats;
use cqlab_sim::memory::HostMemory;
use std::ffi::c_void;
use std::sync::{Arc, Mutex};

/// `void rd(uint64_t host_addr, void *dst, uint32_t size)`.
pub type DmaRead = unsafe extern "C-unwind" fn(u64, *mut c_void, u32);
/// `void wr(uint64_t host_addr, const void *src, uint32_t size)`.
pub type DmaWrite = unsafe extern "C-unwind" fn(u64, *const c_void, u32);

/// The host's callbacks.
#[derive(Clone, Copy, Debug)]
pub struct Callbacks {
    pub read: DmaRead,
    pub write: DmaWrite,
}

/// Host memory of chip `chip` behind the callbacks.
pub struct DmaPort {
    pub chip: u32,
    /// Bytes the PCIe tile forwards.
    pub len: usize,
    /// `None`: nothing registered; accesses are dropped and reported.
    pub callbacks: Option<Callbacks>,
    pub iatu: Arc<Mutex<Iatu>>,
    pub stats: Arc<Stats>,
}

impl DmaPort {
    fn pieces(&self, offset: u64, len: usize) -> Vec<crate::iatu::Piece> {
        // Taken and released before any callback runs.
        self.iatu.lock().unwrap_or_else(|p| p.into_inner()).translate(offset, len as u64)
    }

    fn dropped(&self, what: &'static str, offset: u64, len: usize) {
        Stats::add(&self.stats.dma_dropped, 1);
        report(&format!("DMA of chip {}", self.chip), &ApiError::NoCallbacks { what, len, offset });
    }
}

impl HostMemory for DmaPort {
    fn len(&self) -> usize {
        self.len
    }

    fn read(&self, offset: u64, buf: &mut [u8]) {
        let Some(cb) = self.callbacks else {
            buf.fill(0xFF);
            return self.dropped("read", offset, buf.len());
        };
        for p in self.pieces(offset, buf.len()) {
            let piece = &mut buf[p.at as usize..(p.at + p.len) as usize];
            note(
                Log::Calls,
                &format!("chip {} DMA read {:#x} (+{}) -> host {:#x}", self.chip, offset + p.at, p.len, p.host),
            );
            Stats::add(&self.stats.dma_reads, 1);
            Stats::add(&self.stats.dma_read_bytes, p.len);
            // SAFETY: `piece` is valid for writes of `p.len` bytes (at most
            // a NOC packet or one host access, < 4 GiB) for the whole call;
            // the callback is the host's, called synchronously on the thread
            // inside the libttsim call, as the libttsim contract says. It may
            // unwind (C-unwind): see the module doc.
            unsafe { (cb.read)(p.host, piece.as_mut_ptr().cast(), p.len as u32) };
        }
    }

    fn write(&self, offset: u64, data: &[u8]) {
        let Some(cb) = self.callbacks else {
            return self.dropped("write", offset, data.len());
        };
        for p in self.pieces(offset, data.len()) {
            let piece = &data[p.at as usize..(p.at + p.len) as usize];
            note(
                Log::Calls,
                &format!("chip {} DMA write {:#x} (+{}) -> host {:#x}", self.chip, offset + p.at, p.len, p.host),
            );
            Stats::add(&self.stats.dma_writes, 1);
            Stats::add(&self.stats.dma_write_bytes, p.len);
            // SAFETY: `piece` is valid for reads of `p.len` bytes for the
            // whole call; the callback is the host's, called synchronously
            // as the libttsim contract says; it may unwind (module doc).
            unsafe { (cb.write)(p.host, piece.as_ptr().cast(), p.len as u32) };
        }
    }
}
