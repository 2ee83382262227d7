//! Host memory the device reaches through a libttsim library's DMA
//! callbacks (`libttsim_set_pci_dma_mem_callbacks`): the driver's sysmem,
//! in this process.
//!
//! The callbacks take no context argument, so each open library gets a
//! slot of a process-wide table and the pair of functions made for that
//! slot (`dma_read::<S>`, `dma_write::<S>`). The slot holds where its
//! sysmem is while the backend lends it, and the first access that fell
//! outside it, for the backend to report (a callback cannot return an
//! error). The table also records which library each slot serves: a
//! library holds one simulator per process, so it is open at most once.
//!
//! The libttsim contract: callbacks run synchronously on the thread inside
//! a library call, and the backend makes every call with `&mut self`, so
//! a callback's access never overlaps the driver's own use of sysmem.
#![allow(unsafe_code)] // BAR/mmap layer: docs/design.md, "Where `unsafe` lives"

use super::library::{DmaRead, DmaWrite};
use crate::error::{DriverError, LibraryProblem, Result};
use std::ffi::c_void;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

/// Libraries open at once in one process.
pub const SLOTS: usize = 4;

/// Where a slot's sysmem is.
#[derive(Clone, Copy)]
struct Region {
    base: *mut u8,
    len: usize,
}

// SAFETY: the pointer is only dereferenced by the callbacks, under the
// table's lock, while the backend that owns the memory keeps it alive
// (`Slot::lend`, cleared before the memory goes).
unsafe impl Send for Region {}

#[derive(Default)]
struct Entry {
    library: Option<PathBuf>,
    region: Option<Region>,
    fault: Option<String>,
}

static TABLE: Mutex<[Entry; SLOTS]> = Mutex::new([const { Entry { library: None, region: None, fault: None } }; SLOTS]);

fn table() -> MutexGuard<'static, [Entry; SLOTS]> {
    // Nothing panics while holding it; a poisoned table is still consistent.
    TABLE.lock().unwrap_or_else(|p| p.into_inner())
}

/// A device read of host memory: `size` bytes at host address `addr` into `p`.
///
/// # Safety
/// `p` is valid for writes of `size` bytes (the libttsim contract).
unsafe extern "C-unwind" fn dma_read<const S: usize>(addr: u64, p: *mut c_void, size: u32) {
    if size == 0 || p.is_null() {
        return;
    }
    // SAFETY: the library passes a buffer of `size` writable bytes.
    let out = unsafe { std::slice::from_raw_parts_mut(p.cast::<u8>(), size as usize) };
    let mut t = table();
    let entry = &mut t[S];
    match entry.region.filter(|r| fits(addr, out.len(), r.len)) {
        Some(r) => {
            // SAFETY: `[addr, addr + size)` lies in the lent region (checked),
            // which stays mapped while lent; the driver does not touch it
            // during the library call that runs this callback.
            let src = unsafe { std::slice::from_raw_parts(r.base.add(addr as usize), out.len()) };
            out.copy_from_slice(src);
        }
        None => {
            out.fill(0xFF);
            entry.fault.get_or_insert_with(|| outside("read", addr, size, entry.region));
        }
    }
}

/// A device write of host memory: `size` bytes from `p` at host address `addr`.
///
/// # Safety
/// `p` is valid for reads of `size` bytes (the libttsim contract).
unsafe extern "C-unwind" fn dma_write<const S: usize>(addr: u64, p: *const c_void, size: u32) {
    if size == 0 || p.is_null() {
        return;
    }
    // SAFETY: the library passes `size` readable bytes.
    let data = unsafe { std::slice::from_raw_parts(p.cast::<u8>(), size as usize) };
    let mut t = table();
    let entry = &mut t[S];
    match entry.region.filter(|r| fits(addr, data.len(), r.len)) {
        Some(r) => {
            // SAFETY: as in `dma_read`: in bounds, mapped, not otherwise in use.
            let dst = unsafe { std::slice::from_raw_parts_mut(r.base.add(addr as usize), data.len()) };
            dst.copy_from_slice(data);
        }
        None => {
            entry.fault.get_or_insert_with(|| outside("write", addr, size, entry.region));
        }
    }
}

fn fits(addr: u64, len: usize, size: usize) -> bool {
    addr.checked_add(len as u64).is_some_and(|end| end <= size as u64)
}

fn outside(what: &str, addr: u64, size: u32, region: Option<Region>) -> String {
    match region {
        Some(r) => format!(
            "the device's DMA {what} of {size} bytes at host address {addr:#x} is outside the {:#x}-byte sysmem",
            r.len
        ),
        None => format!("the device's DMA {what} of {size} bytes at host address {addr:#x} came with no sysmem lent"),
    }
}

const CALLBACKS: [(DmaRead, DmaWrite); SLOTS] = [
    (dma_read::<0>, dma_write::<0>),
    (dma_read::<1>, dma_write::<1>),
    (dma_read::<2>, dma_write::<2>),
    (dma_read::<3>, dma_write::<3>),
];

/// One library's slot; freed on drop.
pub struct Slot(usize);

impl Slot {
    /// A free slot for the library at `library` (canonical path).
    pub fn claim(library: &Path) -> Result<Slot> {
        let mut t = table();
        let err = |problem| DriverError::Library { library: library.display().to_string(), problem };
        if t.iter().any(|e| e.library.as_deref() == Some(library)) {
            return Err(err(LibraryProblem::InUse));
        }
        let s =
            t.iter().position(|e| e.library.is_none()).ok_or_else(|| err(LibraryProblem::TooMany { open: SLOTS }))?;
        t[s] = Entry { library: Some(library.to_path_buf()), region: None, fault: None };
        Ok(Slot(s))
    }

    /// The callbacks to register with the library.
    pub fn callbacks(&self) -> (DmaRead, DmaWrite) {
        CALLBACKS[self.0]
    }

    /// Lends `mem` to the callbacks until the slot is dropped.
    ///
    /// # Safety
    /// The callbacks read and write `mem` through a raw pointer whenever the
    /// library calls them: `mem` must stay alive and unmoved, and untouched
    /// by the host while the library may call, until the slot is dropped or
    /// the library has exited.
    pub unsafe fn lend(&self, mem: &mut [u8]) {
        table()[self.0].region = Some(Region { base: mem.as_mut_ptr(), len: mem.len() });
    }

    /// The first access that fell outside sysmem since the last call.
    pub fn take_fault(&self) -> Option<String> {
        table()[self.0].fault.take()
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        table()[self.0] = Entry::default();
    }
}
