//! The host's TLB windows: how every backend reaches a tile's address space
//! through BAR0, as tt-umd and tt-kmd 2.x do on a card. A window of 2 MiB
//! (both chips have them: `arch::bar`) shows one 2 MiB-aligned piece of one
//! tile's NOC address space, or of every tile of a multicast rectangle; the
//! host points it with the window's configuration register (`arch::tlb`
//! encodes it) or, on tt-kmd, with CONFIGURE_TLB.
//!
//! [`Windows`] is the small window manager every backend shares: it keeps
//! a few windows configured and reuses the one already showing an address
//! (least recently used reconfigured first), and cuts an access into
//! window-sized pieces. A backend supplies the windows themselves
//! ([`TlbBar`]); [`RegisterWindows`] is the register side of the backends
//! that program the chip's TLB registers through BAR0 (the simulator, the
//! daemon).

use crate::error::{DriverError, Result};
use cqlab_abi::arch::tlb::{self, TlbConfig, TlbOrdering, TlbWindowKind};
use cqlab_abi::arch::{ArchParams, Noc};
use cqlab_abi::noc::NocAddr;
use zerocopy::IntoBytes;

/// log2 of the window size the driver uses (2 MiB: one window covers a
/// Tensix L1 of either chip).
pub const WINDOW_LOG2: u32 = cqlab_abi::arch::bar::WINDOW_2M_LOG2;
/// Bytes of one window.
pub const WINDOW_SIZE: u64 = 1 << WINDOW_LOG2;
/// Windows the driver keeps configured at once (a CQ's prefetcher and
/// dispatcher, the worker being polled, a DRAM page, with room to spare).
pub const WINDOW_CACHE: usize = 8;

/// The windows of one backend: it configures and accesses them; which
/// window shows what is [`Windows`]' business.
pub trait TlbBar {
    /// Windows available (at most this many are used).
    fn windows(&self) -> usize;
    /// Points window `w` at `cfg`.
    fn configure(&mut self, w: usize, cfg: &TlbConfig) -> Result<()>;
    /// Writes `data` at byte `offset` of window `w`.
    fn write(&mut self, w: usize, offset: u64, data: &[u8]) -> Result<()>;
    /// Reads `buf.len()` bytes at byte `offset` of window `w`.
    fn read(&mut self, w: usize, offset: u64, buf: &mut [u8]) -> Result<()>;
    /// Whether a window can be a multicast one (tt-kmd against the
    /// simulator cannot: one mapping cannot land in many tiles).
    fn multicast(&self) -> bool {
        true
    }
}

#[derive(Clone, Copy, Debug)]
struct Slot {
    shows: Option<TlbConfig>,
    last_use: u64,
}

/// The window manager (module docs).
#[derive(Clone, Debug)]
pub struct Windows {
    slots: Vec<Slot>,
    uses: u64,
    /// Configurations issued so far (a TLB register write or a CONFIGURE_TLB each).
    configured: u64,
}

impl Windows {
    /// A manager of `count` windows, none configured yet.
    pub fn new(count: usize) -> Self {
        Self { slots: vec![Slot { shows: None, last_use: 0 }; count], uses: 0, configured: 0 }
    }

    /// Configurations issued so far.
    pub fn configured(&self) -> u64 {
        self.configured
    }

    /// The window configuration that shows the 2 MiB piece of `addr`'s
    /// tile (or rectangle) holding its local address, on NOC0, in strict
    /// (AXI) ordering.
    ///
    /// Strict, not the chip's default: in default ordering "writes can
    /// reorder or interleave with other writes as they travel on the NoC"
    /// (tt-isa `WormholeB0/PCIExpressTile/TLBs.md`, "Ordering modes"), and
    /// the driver publishes by write order: a fetch-queue entry after the
    /// words it points at, a launch message after its kernel and args, the
    /// completion read pointer over its last value (helper-82). `static_vc`
    /// would order writes only along one path, not across a window's
    /// reconfiguration to another tile. tt-metal configured its static
    /// Tensix windows strict for the same reason ("the launch_msg 'kernel
    /// config' needs to arrive prior to the 'go' message",
    /// `tt_metal/llrt/tlb_config.cpp`, issue #10107). Strict limits how
    /// many writes a card keeps in flight; the queues' bulk data goes
    /// through host memory, not the BAR. The simulators deliver host writes
    /// in order whatever the mode.
    pub fn config_for(addr: NocAddr) -> TlbConfig {
        let (s, e) = addr.rect();
        let base = (addr.local() | (addr.flags() & !cqlab_abi::noc::MCAST_FLAG)) >> WINDOW_LOG2;
        let mut c = TlbConfig::unicast(e.x, e.y, base, Noc::Noc0);
        c.ordering = TlbOrdering::Strict;
        if addr.is_multicast() {
            c.mcast = true;
            c.x_start = s.x;
            c.y_start = s.y;
        }
        c
    }

    /// The window showing `cfg`, configuring the least recently used one
    /// if none does.
    fn window(&mut self, bar: &mut dyn TlbBar, cfg: TlbConfig) -> Result<usize> {
        self.uses += 1;
        let n = self.slots.len().min(bar.windows()).max(1);
        if let Some(w) = self.slots[..n].iter().position(|s| s.shows == Some(cfg)) {
            self.slots[w].last_use = self.uses;
            return Ok(w);
        }
        let (w, _) = self.slots[..n].iter().enumerate().min_by_key(|(_, s)| s.last_use).expect("a window");
        // Forget it first: a failed configuration leaves it showing nothing known.
        self.slots[w].shows = None;
        bar.configure(w, &cfg)?;
        self.configured += 1;
        self.slots[w] = Slot { shows: Some(cfg), last_use: self.uses };
        Ok(w)
    }

    /// Calls `f(window, offset in window, range of the access)` for each
    /// window-sized piece of `len` bytes at `addr`.
    fn pieces(
        &mut self,
        bar: &mut dyn TlbBar,
        addr: NocAddr,
        len: usize,
        mut f: impl FnMut(&mut dyn TlbBar, usize, u64, std::ops::Range<usize>) -> Result<()>,
    ) -> Result<()> {
        if addr.is_multicast() && !bar.multicast() {
            return Err(DriverError::Backend(format!(
                "this backend has no multicast TLB windows (write to {:#x}): write each tile",
                addr.0
            )));
        }
        let mut done = 0;
        while done < len {
            let at = addr.offset(done as u64);
            let off = at.local() & (WINDOW_SIZE - 1);
            let n = (len - done).min((WINDOW_SIZE - off) as usize);
            let w = self.window(bar, Self::config_for(at))?;
            f(bar, w, off, done..done + n)?;
            done += n;
        }
        Ok(())
    }

    /// Writes `data` at `addr` (unicast, or every tile of a multicast rectangle).
    pub fn write(&mut self, bar: &mut dyn TlbBar, addr: NocAddr, data: &[u8]) -> Result<()> {
        self.pieces(bar, addr, data.len(), |bar, w, off, r| bar.write(w, off, &data[r]))
    }

    /// Reads `buf.len()` bytes at `addr` (unicast).
    pub fn read(&mut self, bar: &mut dyn TlbBar, addr: NocAddr, buf: &mut [u8]) -> Result<()> {
        if addr.is_multicast() {
            return Err(DriverError::Invalid(format!("a BAR read cannot be multicast ({:#x})", addr.0)));
        }
        let len = buf.len();
        self.pieces(bar, addr, len, |bar, w, off, r| bar.read(w, off, &mut buf[r]))
    }
}

/// Windows a host programs through the chip's TLB configuration registers
/// in BAR0: the first [`WINDOW_CACHE`] 2 MiB windows that are not the
/// kernel driver's own (`BarLayout::kernel_tlb_index`).
#[derive(Clone, Debug)]
pub struct RegisterWindows {
    chip: &'static ArchParams,
    kind: TlbWindowKind,
    indices: Vec<u32>,
}

impl RegisterWindows {
    pub fn new(chip: &'static ArchParams) -> Self {
        let kind =
            *chip.bar.windows.iter().find(|k| k.size_log2 == WINDOW_LOG2).expect("both chips have 2 MiB windows");
        let indices = (kind.first_index..kind.first_index + kind.count)
            .filter(|&i| i != chip.bar.kernel_tlb_index)
            .take(WINDOW_CACHE)
            .collect();
        Self { chip, kind, indices }
    }

    pub fn count(&self) -> usize {
        self.indices.len()
    }

    /// TLB index of window `w`.
    pub fn index(&self, w: usize) -> u32 {
        self.indices[w]
    }

    /// The BAR0 offset of window `w`'s configuration register and the
    /// words to write there for `cfg` (low word first, as many as the
    /// chip's register has: tt-umd `pci_device.cpp` `configure_tlb`).
    pub fn config_write(&self, w: usize, cfg: &TlbConfig) -> Result<(u64, Vec<u8>)> {
        let bits = self.kind.fields.encode(cfg).map_err(|e| DriverError::OutOfRange {
            what: "TLB window configuration",
            detail: format!("TLB {}: {e}", self.indices[w]),
        })?;
        let words = &tlb::to_words(bits)[..self.chip.bar.tlb_config_words()];
        Ok((self.chip.bar.tlb_config_addr(self.indices[w]) as u64, words.as_bytes().to_vec()))
    }

    /// The BAR and offset of byte `offset` of window `w`.
    pub fn data_at(&self, w: usize, offset: u64) -> (u8, u64) {
        (self.kind.bar, self.kind.window_offset(self.indices[w] - self.kind.first_index) + offset)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cqlab_abi::arch::{BLACKHOLE, WORMHOLE};
    use cqlab_abi::noc::Coord;

    /// A BAR that records what it is asked: register writes as the chip's
    /// TLB registers would take them.
    struct Recorder {
        regs: RegisterWindows,
        issued: Vec<(u64, Vec<u8>)>,
        data: Vec<(u8, u64, usize)>,
    }

    impl TlbBar for Recorder {
        fn windows(&self) -> usize {
            self.regs.count()
        }
        fn configure(&mut self, w: usize, cfg: &TlbConfig) -> Result<()> {
            let (at, words) = self.regs.config_write(w, cfg)?;
            self.issued.push((at, words));
            Ok(())
        }
        fn write(&mut self, w: usize, offset: u64, data: &[u8]) -> Result<()> {
            let (bar, at) = self.regs.data_at(w, offset);
            self.data.push((bar, at, data.len()));
            Ok(())
        }
        fn read(&mut self, w: usize, offset: u64, buf: &mut [u8]) -> Result<()> {
            let (bar, at) = self.regs.data_at(w, offset);
            self.data.push((bar, at, buf.len()));
            Ok(())
        }
    }

    fn word(bytes: &[u8], i: usize) -> u32 {
        u32::from_le_bytes(bytes[4 * i..4 * i + 4].try_into().unwrap())
    }

    /// The register words issued for a unicast window onto tile (18, 18)
    /// at local 0x20_0000 and a multicast onto (18,18)..(25,25), bit by
    /// bit at the cited field positions (tt-umd `*_implementation.hpp`
    /// TLB_2M_OFFSET; tt-kmd `blackhole.c` struct TLB_2M_REG).
    #[test]
    fn the_configuration_registers_get_the_cited_encoding() {
        // Wormhole 2 MiB: local_offset 0..15, x_end 15, y_end 21, x_start 27,
        // y_start 33, noc_sel 39, mcast 40, ordering 41 (strict: 1, every
        // window: `Windows::config_for`); 8-byte registers from 0x1FC00000,
        // 2 MiB windows are TLB 156.. at BAR0 0x09C00000.
        let mut r = Recorder { regs: RegisterWindows::new(&WORMHOLE), issued: Vec::new(), data: Vec::new() };
        let mut w = Windows::new(WINDOW_CACHE);
        w.write(&mut r, NocAddr::unicast(Coord::new(18, 18), 0x20_0010), &[0; 8]).unwrap();
        let (at, words) = &r.issued[0];
        assert_eq!(*at, 0x1FC0_0000 + 156 * 8);
        let bits = word(words, 0) as u64 | (word(words, 1) as u64) << 32;
        assert_eq!(bits, 1 | 18 << 15 | 18 << 21 | 1 << 41);
        assert_eq!(r.data[0], (0, 0x09C0_0000 + 0x10, 8));
        let mcast = NocAddr::multicast(Coord::new(18, 18), Coord::new(25, 25), 0x100);
        w.write(&mut r, mcast, &[0; 4]).unwrap();
        let (at, words) = &r.issued[1];
        assert_eq!(*at, 0x1FC0_0000 + 157 * 8);
        let bits = word(words, 0) as u64 | (word(words, 1) as u64) << 32;
        assert_eq!(bits, 25 << 15 | 25 << 21 | 18 << 27 | 18 << 33 | 1 << 40 | 1 << 41);
        assert_eq!(r.data[1], (0, 0x09C0_0000 + 0x20_0000 + 0x100, 4));
        // The same tile again: the window is reused, nothing reconfigured.
        w.read(&mut r, NocAddr::unicast(Coord::new(18, 18), 0x20_0100), &mut [0; 4]).unwrap();
        assert_eq!((r.issued.len(), w.configured()), (2, 2));

        // Blackhole 2 MiB: local_offset 0..43, x_end 43, y_end 49, x_start 55,
        // y_start 61, noc_sel 67, mcast 69, ordering 70; 12-byte registers;
        // TLB 0 at BAR0 0.
        let mut r = Recorder { regs: RegisterWindows::new(&BLACKHOLE), issued: Vec::new(), data: Vec::new() };
        let mut w = Windows::new(WINDOW_CACHE);
        let mcast = NocAddr::multicast(Coord::new(1, 2), Coord::new(13, 11), 0x40_0000);
        w.write(&mut r, mcast, &[0; 4]).unwrap();
        let (at, words) = &r.issued[0];
        assert_eq!((*at, words.len()), (0x1FC0_0000, 12));
        let bits = word(words, 0) as u128 | (word(words, 1) as u128) << 32 | (word(words, 2) as u128) << 64;
        assert_eq!(bits, 2 | 13 << 43 | 11 << 49 | 1 << 55 | 2 << 61 | 1 << 69 | 1 << 70);
    }

    #[test]
    fn an_access_is_cut_at_window_ends_and_the_least_recently_used_window_is_reconfigured() {
        let mut r = Recorder { regs: RegisterWindows::new(&BLACKHOLE), issued: Vec::new(), data: Vec::new() };
        assert!(!r.regs.indices.contains(&BLACKHOLE.bar.kernel_tlb_index));
        let mut w = Windows::new(2);
        // 16 bytes across the 2 MiB boundary of DRAM tile (0, 0): two windows.
        w.write(&mut r, NocAddr::unicast(Coord::new(0, 0), WINDOW_SIZE - 8), &[0; 16]).unwrap();
        assert_eq!(r.data, vec![(0, WINDOW_SIZE - 8, 8), (0, WINDOW_SIZE, 8)]);
        // A third piece evicts the older of the two.
        w.write(&mut r, NocAddr::unicast(Coord::new(1, 2), 0), &[0; 4]).unwrap();
        assert_eq!(r.data[2], (0, 0, 4), "window 0 (least recently used) now shows (1, 2)");
        assert_eq!(w.configured(), 3);
    }
}
