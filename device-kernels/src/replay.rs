//! Trace replay input: a trace's DRAM pages stream through the prefetcher's
//! `TRACE_AREA`, used as a ring of `TRACE_WINDOWS` windows. The prefetcher
//! runs commands from one window while the next one's reads land, so the
//! relay of a replayed program does not wait for the whole trace to arrive,
//! and a trace may be longer than the area.
//!
//! Reads complete in no particular order, so a window is known to have
//! landed only once every read issued so far has (`wait_reads`): the next
//! window is issued right after that wait (once a relay write keeps the NOC
//! interface busy meanwhile), and has the whole time its predecessor takes
//! to relay to land. A window's slot is reused once every
//! write relayed from its previous occupant has left L1 (per-write counter
//! marks, `report::wait_sent_until`).
//!
//! The trace's head (`ExecBufCmd::head` bytes) also came inline with the
//! `EXEC_BUF` command: those bytes are used where they lie in the chunk,
//! and the first window's reads are issued after the head's first relay,
//! so the head's programs reach the dispatcher while the rest is on its
//! way. A head flagged `WHOLE` is the whole trace: the replay has no pages
//! to read.

use crate::places::Dram;
use crate::platform::Platform;
use crate::report::{wait_reads, wait_sent_until};
use cqlab_abi::memory_map::{TRACE_AREA, TRACE_WINDOW, TRACE_WINDOWS};

pub struct Replay {
    page_size: u32,
    pages: u32,
    banks: u32,
    /// DRAM place of the next page to read (bank stepped, not divided out).
    bank: u32,
    offset: u64,
    pages_read: u32,
    /// Windows whose reads are issued, and windows known to have landed.
    issued: u32,
    landed: u32,
    /// `writes_issued` when the commands first reached window `w`, at
    /// `w % TRACE_WINDOWS`: every relay from windows before `w` is older.
    /// Until then, `writes_issued` at the replay's start: every relay of
    /// the replays before is older.
    entered: [u32; TRACE_WINDOWS as usize],
    /// Trace bytes `0..head` are in L1 from `head_at` on (the chunk that
    /// carried them inline), not in the trace area.
    head: u32,
    head_at: u32,
}

impl Replay {
    /// Whether a trace in pages of `page_size` bytes over `banks` DRAM
    /// banks can be replayed: the page size must divide a window (and be a
    /// multiple of 16).
    pub fn fits(page_size: u32, banks: u32) -> bool {
        // The window is a power of two, so its divisors are the powers of
        // two up to it: no division on the way into a replay.
        const _: () = assert!(TRACE_WINDOW.is_power_of_two());
        page_size.is_power_of_two() && (16..=TRACE_WINDOW).contains(&page_size) && banks > 0
    }

    /// A replay (of a trace that [`Replay::fits`]) of `pages` pages of
    /// `page_size` bytes of the interleaved DRAM buffer at `base`, whose
    /// first `head` bytes (a multiple of 16, at most its size; with no
    /// pages, the whole trace) are in L1 at `head_at` (they came inline
    /// with the command), started when the core's `writes_issued` was
    /// `start`: every relay issued before is older than the replay. The
    /// first window's reads are issued by [`Replay::read_ahead`] after the
    /// first relay, once its write is on its way, so they land while the
    /// head runs.
    pub fn new(start: u32, base: u32, page_size: u32, pages: u32, banks: u32, head_at: u32, head: u32) -> Self {
        // Page 0: the first bank, at `base` (`interleaved_page(base, 0, ..)`).
        let (bank, offset) = (0, base as u64);
        Self {
            page_size,
            pages,
            banks,
            bank,
            offset,
            pages_read: 0,
            issued: 0,
            landed: 0,
            entered: [start; TRACE_WINDOWS as usize],
            head,
            head_at,
        }
    }

    /// Bytes in the trace.
    pub fn bytes(&self) -> u32 {
        self.pages * self.page_size
    }

    /// L1 address where the commands ending at trace byte `off` end (for
    /// an error report: the head's end in its chunk, else the trace area).
    pub fn local_end(&self, off: u32) -> u32 {
        if off <= self.head {
            return self.head_at + off;
        }
        Self::in_area(off)
    }

    /// L1 address of trace byte `off`.
    pub fn local(&self, off: u32) -> u32 {
        if off < self.head {
            return self.head_at + off;
        }
        Self::in_area(off)
    }

    /// Where trace byte `off` lands in the trace area.
    fn in_area(off: u32) -> u32 {
        TRACE_AREA.base + off % TRACE_AREA.size
    }

    /// Bytes from `off` to the end of its window (or of the head), at most
    /// `n`: a piece the commands may use after one [`Replay::land`].
    pub fn in_window(&self, off: u32, n: u32) -> u32 {
        if off < self.head {
            return n.min(self.head - off);
        }
        n.min(TRACE_WINDOW - off % TRACE_WINDOW)
    }

    /// Whether [`Replay::land`] up to `upto` may wait for reads (so the
    /// caller can signal what it has relayed first).
    #[inline(always)]
    pub fn must_land(&self, upto: u32) -> bool {
        upto > self.head && upto > self.landed * TRACE_WINDOW
    }

    /// Whether landing up to `upto` is the first wait after a head: for
    /// the first window, with commands run from the head before it.
    #[inline(always)]
    pub fn after_head(&self, upto: u32) -> bool {
        self.head > 0 && self.landed == 0 && upto > self.head
    }

    /// Makes trace bytes up to `upto` (the end of a piece within one
    /// window, or within the head) present in L1, issuing the following
    /// window's reads too.
    #[inline(always)]
    pub fn land(&mut self, p: &mut impl Platform, dram: &Dram, upto: u32) {
        if self.must_land(upto) {
            self.land_windows(p, dram, upto);
        }
    }

    fn land_windows(&mut self, p: &mut impl Platform, dram: &Dram, upto: u32) {
        let upto = upto.min(self.bytes());
        while self.landed * TRACE_WINDOW < upto {
            let w = self.landed;
            if self.issued == w {
                self.issue(p, dram, w);
            }
            if !const { crate::mutant::dropped("prefetch-replay-window-before-landed") } {
                wait_reads(p);
            }
            self.landed = w + 1;
            self.entered[(w % TRACE_WINDOWS) as usize] = p.writes_issued();
        }
        // The next window's reads go out now, a whole window ahead of its
        // use: the prefetcher issues a window's relays much faster than
        // its NOC interface sends them, so reads issued only after the
        // first relay from this window had a fraction of a window's relay
        // time to land, and the prefetcher waited for them at every window.
        self.read_ahead(p, dram);
    }

    /// Issues the reads of the window after the last landed one, if not yet
    /// issued: as soon as a window has landed, and after a relay (which
    /// issues the first window's, after the head's first relay write);
    /// [`Replay::land`] issues a window it needs itself otherwise.
    pub fn read_ahead(&mut self, p: &mut impl Platform, dram: &Dram) {
        let w = self.landed;
        if self.issued == w && w * TRACE_WINDOW < self.bytes() {
            self.issue(p, dram, w);
        }
    }

    /// Issues the reads of window `w` into its slot, once the relays from
    /// the slot's previous window have left it. For `w >= TRACE_WINDOWS`
    /// that is window `w - TRACE_WINDOWS`, whose relays were all issued
    /// before the commands reached window `w - 2`; for the first windows, a
    /// window of an earlier replay, whose relays were all issued before
    /// this replay started (windows 0 and 1 wait for that start mark, so
    /// not for the head's relays, which leave from the chunk; window 2 for
    /// window 0's entry mark, later and so also enough).
    fn issue(&mut self, p: &mut impl Platform, dram: &Dram, w: u32) {
        let reused = if w >= TRACE_WINDOWS {
            !const { crate::mutant::dropped("prefetch-replay-window-reuse-before-sent") }
        } else {
            !const { crate::mutant::dropped("prefetch-replay-start-before-sent") }
        };
        if reused {
            wait_sent_until(p, self.entered[((w + 1) % TRACE_WINDOWS) as usize]);
        }
        let mut local = Self::in_area(w * TRACE_WINDOW);
        let n = (TRACE_WINDOW / self.page_size).min(self.pages - self.pages_read);
        for _ in 0..n {
            p.noc_read(dram.at(self.bank, self.offset), local, self.page_size);
            local += self.page_size;
            self.bank += 1;
            if self.bank == self.banks {
                self.bank = 0;
                self.offset += self.page_size as u64;
            }
        }
        self.pages_read += n;
        self.issued = w + 1;
    }
}
