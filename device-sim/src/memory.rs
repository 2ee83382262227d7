//! A core's RAM as its hart sees it: L1 at its base address plus an optional
//! second window (a DRAM window for standalone programs), each with a
//! predecoded-instruction cache covering every word of it, and the core's
//! local data memory (`memory_map::local_mem`: private to the hart, one
//! cycle per access; NOC deliveries and host accesses never reach it).
//!
//! The cache is allocated zeroed (the allocator hands out lazily committed
//! pages, so only code that actually runs costs host memory) and is indexed by
//! `(pc - base) / 4`. Every write path (hart stores, host and NOC writes)
//! invalidates the words it touches inside the range that has ever been
//! decoded, so self-modifying code and reloaded firmware behave exactly.
//!
//! A window's bytes are the simulator's own, or a region of a shared mapping
//! that host processes write while the chip runs (the tt-kmd simulator mode,
//! [`crate::shared`]); the `unsafe` of the latter lives in [`crate::storage`].

use crate::decode::{decode, Decoded};
use crate::storage::{Bytes, SharedRegion};
use crate::zeroed::ZeroedSlice;
use thiserror::Error;

/// An access outside every RAM window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
#[error("{len} bytes at 0x{addr:08x} are outside RAM")]
pub struct OutOfRange {
    pub addr: u32,
    pub len: usize,
}

/// One contiguous RAM window with its decode cache.
pub struct Ram {
    base: u32,
    bytes: Bytes,
    decoded: ZeroedSlice<Decoded>,
    /// Word indices `[dec_lo, dec_hi)` that may hold decoded entries; writes
    /// outside skip invalidation (and never touch the cache's pages).
    dec_lo: u32,
    dec_hi: u32,
}

impl Ram {
    /// A zeroed window of `size` bytes at `base` (both multiples of 4;
    /// the window must not wrap the 32-bit address space).
    pub fn new(base: u32, size: u32) -> Self {
        assert!(base % 4 == 0 && size % 4 == 0, "RAM window must be word aligned");
        assert!(base as u64 + size as u64 <= 1 << 32, "RAM window wraps the address space");
        Self::with_bytes(base, Bytes::zeroed(size as usize))
    }

    /// A window at `base` over a shared region (its length a multiple of 4): host processes
    /// may write it at any time. Code they write is seen after [`Ram::invalidate_all`].
    pub fn shared(base: u32, region: SharedRegion) -> Self {
        assert!(region.len() % 4 == 0, "RAM window must be word aligned");
        Self::with_bytes(base, Bytes::Shared(region))
    }

    fn with_bytes(base: u32, bytes: Bytes) -> Self {
        let size = bytes.len();
        assert!(base % 4 == 0 && size % 4 == 0, "RAM window must be word aligned");
        assert!(base as u64 + size as u64 <= 1 << 32, "RAM window wraps the address space");
        let decoded = ZeroedSlice::new(size / 4);
        Ram { base, bytes, decoded, dec_lo: u32::MAX, dec_hi: 0 }
    }

    /// Drops every decoded instruction (after writes that bypassed [`Ram::write`], such as a
    /// host's stores into a shared window).
    pub fn invalidate_all(&mut self) {
        self.invalidate(0, self.bytes.len());
    }

    pub fn base(&self) -> u32 {
        self.base
    }

    pub fn size(&self) -> u32 {
        self.bytes.len() as u32
    }

    /// True if `[addr, addr + len)` lies inside this window.
    pub fn contains(&self, addr: u32, len: u64) -> bool {
        addr >= self.base && (addr - self.base) as u64 + len <= self.bytes.len() as u64
    }

    fn range(&self, addr: u32, len: usize) -> Result<std::ops::Range<usize>, OutOfRange> {
        if self.contains(addr, len as u64) {
            let off = (addr - self.base) as usize;
            Ok(off..off + len)
        } else {
            Err(OutOfRange { addr, len })
        }
    }

    /// Copies bytes out of the window.
    pub fn read(&self, addr: u32, buf: &mut [u8]) -> Result<(), OutOfRange> {
        let r = self.range(addr, buf.len())?;
        self.bytes.read(r.start, buf);
        Ok(())
    }

    /// Copies bytes into the window, invalidating decoded code they overwrite.
    pub fn write(&mut self, addr: u32, data: &[u8]) -> Result<(), OutOfRange> {
        let r = self.range(addr, data.len())?;
        self.invalidate(r.start, r.end);
        self.bytes.write(r.start, data);
        Ok(())
    }

    /// Sets a byte range to zero (bss), invalidating decoded code.
    pub fn fill_zero(&mut self, addr: u32, len: usize) -> Result<(), OutOfRange> {
        let r = self.range(addr, len)?;
        self.invalidate(r.start, r.end);
        self.bytes.fill_zero(r.start, len);
        Ok(())
    }

    pub fn read_u32(&self, addr: u32) -> Result<u32, OutOfRange> {
        let mut b = [0; 4];
        self.read(addr, &mut b)?;
        Ok(u32::from_le_bytes(b))
    }

    pub fn write_u32(&mut self, addr: u32, v: u32) -> Result<(), OutOfRange> {
        self.write(addr, &v.to_le_bytes())
    }

    /// The whole window, for snapshots and determinism checks (a copy when shared).
    pub fn bytes(&self) -> std::borrow::Cow<'_, [u8]> {
        self.bytes.snapshot()
    }

    /// Drops decoded entries for byte offsets `[start, end)`.
    fn invalidate(&mut self, start: usize, end: usize) {
        if start >= end {
            return;
        }
        let lo = ((start / 4) as u32).max(self.dec_lo);
        let hi = (end.div_ceil(4) as u32).min(self.dec_hi);
        if lo < hi {
            self.decoded[lo as usize..hi as usize].fill(Decoded::NOT_DECODED);
        }
    }

    /// Hart load fast path: `N` bytes at `addr`, or `None` outside the window.
    #[inline(always)]
    pub(crate) fn load<const N: usize>(&self, addr: u32) -> Option<[u8; N]> {
        let off = addr.wrapping_sub(self.base) as usize;
        self.bytes.load::<N>(off)
    }

    /// Hart store fast path. The caller guarantees natural alignment, so the
    /// store touches exactly one word of the decode cache.
    #[inline(always)]
    pub(crate) fn store<const N: usize>(&mut self, addr: u32, v: [u8; N]) -> bool {
        let off = addr.wrapping_sub(self.base) as usize;
        if !self.bytes.store::<N>(off, v) {
            return false;
        }
        let w = (off >> 2) as u32;
        if w.wrapping_sub(self.dec_lo) < self.dec_hi.wrapping_sub(self.dec_lo) {
            self.decoded[w as usize] = Decoded::NOT_DECODED;
        }
        true
    }

    /// Decoded instruction at `pc` (word aligned) if cached; `NOT_DECODED`
    /// if not yet decoded or outside this window.
    #[inline(always)]
    pub(crate) fn fetch(&self, pc: u32) -> Decoded {
        let idx = (pc.wrapping_sub(self.base) >> 2) as usize;
        match self.decoded.get(idx) {
            Some(d) => *d,
            None => Decoded::NOT_DECODED,
        }
    }

    /// Decodes the word at `pc` into the cache. `None` outside the window.
    fn decode_at(&mut self, pc: u32) -> Option<Decoded> {
        let word = u32::from_le_bytes(self.load::<4>(pc)?);
        let d = decode(word);
        let idx = pc.wrapping_sub(self.base) >> 2;
        self.decoded[idx as usize] = d;
        self.dec_lo = self.dec_lo.min(idx);
        self.dec_hi = self.dec_hi.max(idx + 1);
        Some(d)
    }
}

/// Everything a hart can address as RAM. MMIO is not here: the hart sends
/// non-RAM accesses to its [`Bus`](crate::hart::Bus).
pub struct Memory {
    /// The core's L1 (the fast path checks it first).
    pub l1: Ram,
    /// Optional second window (standalone programs linked for DRAM).
    pub window: Option<Ram>,
    /// Local data memory, hart-only (empty unless `with_local_mem`). Not in
    /// `ram_for`: what the NOC, the host and loaders reach is L1 and the window.
    pub local: Ram,
    /// Bytes `[watch_lo, watch_lo + watch_len)` whose RAM stores end the
    /// hart's run slice (`tohost`; the words a parked sibling core of the
    /// tile polls); empty for none. Compared on L1 and window stores only.
    watch_lo: u32,
    watch_len: u32,
}

impl Memory {
    pub fn new(l1: Ram, window: Option<Ram>) -> Self {
        let local = Ram::new(cqlab_abi::arch::tensix::LOCAL_MEM_BASE, 0);
        Memory { l1, window, local, watch_lo: 0, watch_len: 0 }
    }

    /// Adds the core's local data memory: `size` zeroed bytes at `base`.
    pub fn with_local_mem(mut self, base: u32, size: u32) -> Self {
        self.local = Ram::new(base, size);
        self
    }

    /// Make a store to the word at `addr` end the hart's run slice (see
    /// `hart::Stop::Watch`).
    pub fn set_watch(&mut self, addr: Option<u32>) {
        self.set_watch_range(addr.map_or((0, 0), |a| (a, 4)));
    }

    /// Make a store anywhere in `[lo, lo + len)` end the hart's run slice.
    pub fn set_watch_range(&mut self, (lo, len): (u32, u32)) {
        (self.watch_lo, self.watch_len) = (lo, len);
    }

    #[inline(always)]
    pub(crate) fn is_watched(&self, addr: u32) -> bool {
        addr.wrapping_sub(self.watch_lo) < self.watch_len
    }

    /// The RAM window holding `[addr, addr + len)`, if any.
    pub fn ram_for(&self, addr: u32, len: u64) -> Option<&Ram> {
        if self.l1.contains(addr, len) {
            return Some(&self.l1);
        }
        self.window.as_ref().filter(|w| w.contains(addr, len))
    }

    pub fn ram_for_mut(&mut self, addr: u32, len: u64) -> Option<&mut Ram> {
        if self.l1.contains(addr, len) {
            return Some(&mut self.l1);
        }
        self.window.as_mut().filter(|w| w.contains(addr, len))
    }

    /// Reads RAM bytes (host, loader, debugger: no timing).
    pub fn read(&self, addr: u32, buf: &mut [u8]) -> Result<(), OutOfRange> {
        self.ram_for(addr, buf.len() as u64).ok_or(OutOfRange { addr, len: buf.len() })?.read(addr, buf)
    }

    /// Writes RAM bytes, invalidating decoded code (host, loader, NOC).
    pub fn write(&mut self, addr: u32, data: &[u8]) -> Result<(), OutOfRange> {
        self.ram_for_mut(addr, data.len() as u64).ok_or(OutOfRange { addr, len: data.len() })?.write(addr, data)
    }

    pub fn read_u32(&self, addr: u32) -> Result<u32, OutOfRange> {
        let mut b = [0; 4];
        self.read(addr, &mut b)?;
        Ok(u32::from_le_bytes(b))
    }

    pub fn write_u32(&mut self, addr: u32, v: u32) -> Result<(), OutOfRange> {
        self.write(addr, &v.to_le_bytes())
    }

    #[inline(always)]
    pub(crate) fn fetch(&self, pc: u32) -> Decoded {
        self.l1.fetch(pc)
    }

    /// Slow fetch path: the decoded entry at `pc` from whichever window holds
    /// it (decoding it first if needed); `None` if `pc` is not in RAM.
    #[cold]
    pub(crate) fn fetch_slow(&mut self, pc: u32) -> Option<Decoded> {
        if self.l1.contains(pc, 4) {
            return self.l1.decode_at(pc);
        }
        let w = self.window.as_mut()?;
        match w.fetch(pc) {
            d if d != Decoded::NOT_DECODED => Some(d),
            _ => w.decode_at(pc),
        }
    }

    /// Raw instruction word at `pc`, for traces and debug views.
    pub fn word_at(&self, pc: u32) -> Option<u32> {
        self.read_u32(pc).ok()
    }
}

/// Memory owned outside the simulator and lent to it: a shared file mapping
/// (the simulator daemon's sysmem, which host processes map too). Any
/// `AsRef<[u8]> + AsMut<[u8]> + Send` works, e.g. a `memmap2::MmapMut`;
/// whoever creates the mapping owns its `unsafe` and its SAFETY argument.
pub trait ExternalBytes: Send {
    fn bytes(&self) -> &[u8];
    fn bytes_mut(&mut self) -> &mut [u8];
}

impl<T: AsRef<[u8]> + AsMut<[u8]> + Send> ExternalBytes for T {
    fn bytes(&self) -> &[u8] {
        self.as_ref()
    }
    fn bytes_mut(&mut self) -> &mut [u8] {
        self.as_mut()
    }
}

/// Host memory the chip does not hold: each device access is handed to the
/// host as it happens (a libttsim host's DMA callbacks). `offset` is the
/// offset in the range the PCIe tile forwards (`[host_mem_base, + len)`);
/// where that lands in the host (an outbound address translation) is the
/// implementation's business.
///
/// An implementation may unwind (a libttsim host throws a C++ exception out
/// of its callback). The chip therefore calls it only as the last step of
/// the access it belongs to, with its own state already consistent: an
/// unwind loses that one access (a write does not land, a read leaves its
/// destination as it was) and nothing else, except where the
/// implementation hands one access to the host in pieces: then the pieces
/// before the unwind have landed.
pub trait HostMemory: Send {
    /// Bytes the PCIe tile forwards.
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// A device read of `buf.len()` bytes at `offset` (in bounds: the chip checks).
    fn read(&self, offset: u64, buf: &mut [u8]);
    /// A device write of `data` at `offset` (in bounds).
    fn write(&self, offset: u64, data: &[u8]);
}

/// Host sysmem as the chip stores it: its own buffer (embedded mode), an
/// external mapping (daemon mode: host and chip take turns), a shared region
/// the host writes while the chip runs (tt-kmd simulator mode), or host
/// memory it reaches access by access and never holds (libttsim).
pub enum Sysmem {
    Owned(Box<[u8]>),
    External(Box<dyn ExternalBytes>),
    Shared(SharedRegion),
    Host(Box<dyn HostMemory>),
}

impl Sysmem {
    /// `size` zeroed bytes owned by the simulator.
    pub fn owned(size: usize) -> Self {
        Sysmem::Owned(vec![0; size].into_boxed_slice())
    }

    pub fn len(&self) -> usize {
        match self {
            Sysmem::Owned(b) => b.len(),
            Sysmem::External(e) => e.bytes().len(),
            Sysmem::Shared(s) => s.len(),
            Sysmem::Host(h) => h.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bytes, where the chip may hold a reference to them (not when
    /// shared, nor when they are the host's).
    pub fn bytes(&self) -> Option<&[u8]> {
        match self {
            Sysmem::Owned(b) => Some(b),
            Sysmem::External(e) => Some(e.bytes()),
            Sysmem::Shared(_) | Sysmem::Host(_) => None,
        }
    }

    pub fn bytes_mut(&mut self) -> Option<&mut [u8]> {
        match self {
            Sysmem::Owned(b) => Some(b),
            Sysmem::External(e) => Some(e.bytes_mut()),
            Sysmem::Shared(_) | Sysmem::Host(_) => None,
        }
    }

    /// Copies out; the caller checks bounds.
    pub fn read(&self, off: usize, buf: &mut [u8]) {
        match self {
            Sysmem::Shared(s) => assert!(s.read(off, buf), "sysmem read out of bounds"),
            Sysmem::Host(h) => h.read(off as u64, buf),
            _ => buf.copy_from_slice(&self.bytes().expect("held")[off..off + buf.len()]),
        }
    }

    /// Copies in; the caller checks bounds.
    pub fn write(&mut self, off: usize, data: &[u8]) {
        match self {
            Sysmem::Shared(s) => assert!(s.write(off, data), "sysmem write out of bounds"),
            Sysmem::Host(h) => h.write(off as u64, data),
            _ => self.bytes_mut().expect("held")[off..off + data.len()].copy_from_slice(data),
        }
    }

    /// Every byte (a copy when shared); `None` when they are the host's
    /// ([`Sysmem::Host`]), which the simulator never holds.
    pub fn snapshot(&self) -> Option<std::borrow::Cow<'_, [u8]>> {
        match self {
            Sysmem::Shared(s) => Some(std::borrow::Cow::Owned(s.snapshot())),
            Sysmem::Host(_) => None,
            _ => Some(std::borrow::Cow::Borrowed(self.bytes().expect("held"))),
        }
    }

    /// Zeroes every byte, writing only pages that are not already zero (so a
    /// sparse file mapping stays sparse). Host memory behind a
    /// [`HostMemory`] is the host's to clear: untouched.
    pub fn zero(&mut self) {
        match self {
            Sysmem::Shared(s) => return s.zero_sparse(),
            Sysmem::Host(_) => return,
            _ => {}
        }
        for page in self.bytes_mut().expect("not shared").chunks_mut(4096) {
            if !crate::storage::all_zero(page) {
                page.fill(0);
            }
        }
    }
}

impl std::fmt::Debug for Sysmem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match self {
            Sysmem::Owned(_) => "owned",
            Sysmem::External(_) => "external",
            Sysmem::Shared(_) => "shared",
            Sysmem::Host(_) => "host",
        };
        write!(f, "Sysmem({kind}, {} bytes)", self.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::asm;
    use crate::decode::Op;

    #[test]
    fn writes_invalidate_decoded_code_only_where_they_land() {
        let mut ram = Ram::new(0x1000, 0x100);
        ram.write(0x1000, &asm::to_bytes(&[asm::addi(1, 0, 1), asm::addi(2, 0, 2)])).unwrap();
        assert_eq!(ram.fetch(0x1000), Decoded::NOT_DECODED);
        assert_eq!(ram.decode_at(0x1000).unwrap().op, Op::Addi);
        assert_eq!(ram.decode_at(0x1004).unwrap().op, Op::Addi);
        assert_eq!(ram.fetch(0x1004).op, Op::Addi);
        // A byte store into the second word drops only that word.
        assert!(ram.store::<1>(0x1006, [0]));
        assert_eq!(ram.fetch(0x1000).op, Op::Addi);
        assert_eq!(ram.fetch(0x1004), Decoded::NOT_DECODED);
        // A host write over the first word drops it too.
        ram.write(0x1002, &[0xff]).unwrap();
        assert_eq!(ram.fetch(0x1000), Decoded::NOT_DECODED);
    }

    #[test]
    fn fast_paths_reject_out_of_range() {
        let mut ram = Ram::new(0x1000, 0x100);
        assert!(ram.load::<4>(0x0ffc).is_none());
        assert!(ram.load::<4>(0x10fc).is_some());
        assert!(ram.load::<4>(0x10fe).is_none());
        assert!(!ram.store::<2>(0x1100, [1, 2]));
        assert_eq!(ram.fetch(0x1100), Decoded::NOT_DECODED);
        assert_eq!(ram.read_u32(0x1100), Err(OutOfRange { addr: 0x1100, len: 4 }));
    }

    #[test]
    fn memory_routes_to_the_right_window() {
        let mut m = Memory::new(Ram::new(0, 0x100), Some(Ram::new(0x8000_0000, 0x100)));
        m.write_u32(0x8000_0010, 0xdead_beef).unwrap();
        m.write_u32(0x10, 0x1234).unwrap();
        assert_eq!(m.read_u32(0x8000_0010), Ok(0xdead_beef));
        assert_eq!(m.read_u32(0x10), Ok(0x1234));
        assert!(m.read_u32(0x4000).is_err());
        assert!(m.write(0xfe, &[0; 4]).is_err(), "straddling the end of L1");
    }

    #[test]
    fn sysmem_is_owned_or_external_and_zeroes_either() {
        let mut own = Sysmem::owned(8192);
        own.bytes_mut().unwrap()[5000] = 7;
        own.zero();
        assert!(own.snapshot().unwrap().iter().all(|&b| b == 0));
        let mut ext = Sysmem::External(Box::new(vec![1u8; 10_000]));
        assert_eq!(ext.len(), 10_000);
        ext.bytes_mut().unwrap()[0] = 9;
        assert_eq!(ext.snapshot().unwrap()[..2], [9, 1]);
        ext.zero();
        assert!(ext.snapshot().unwrap().iter().all(|&b| b == 0));
        assert_eq!(format!("{ext:?}"), "Sysmem(external, 10000 bytes)");
    }
}
