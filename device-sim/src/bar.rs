//! The host's view of the chip's BARs: what each BAR offset is (a TLB
//! window, a TLB configuration register, the PCIe tile's NIU, ARC), as the
//! chip lays BAR0 and BAR4 out (`arch::bar`, `arch::tlb`); the TLB
//! registers' state; and what a host access costs in device time, charged
//! by the chip model itself ([`crate::chip::Chip::bar_write`],
//! [`crate::chip::Chip::bar_read`], [`crate::chip::Chip::host_poll`]), so
//! every front (the embedded backend, the daemon) charges the same device
//! time for the same host program.
//!
//! Figures from docs/design.md, "Timing" (1 cycle = 1 ns): host writes through a
//! write-combining window at ~22 GB/s, host reads of device memory at
//! ~0.1 GB/s after a PCIe round trip. The host is busy for that long and the
//! device runs meanwhile: a write's time is posted (charged at the host's
//! next read or poll), a read's is charged before the data is sampled.

use cqlab_abi::arch::bar::{BarLayout, BarRegionKind};
use cqlab_abi::arch::tlb::{self, TlbConfig};
use cqlab_abi::arch::{ArchParams, Noc};

/// What a BAR offset is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BarTarget {
    /// Byte `offset` of TLB window `index`.
    Window { index: u32, offset: u64 },
    /// Byte `byte` of TLB `index`'s configuration register.
    TlbConfig { index: u32, byte: u32 },
    /// Byte `offset` of the PCIe tile's NIU register block of `noc`.
    PcieNiu { noc: Noc, offset: u32 },
    /// ARC address `addr` (its CSM or APB window).
    Arc { addr: u32 },
}

/// An access to `len` bytes at `offset` of BAR `bar`, or an error naming
/// what is there instead. An access must stay within one window or region.
pub fn decode(chip: &ArchParams, arc_over_bar: bool, bar: u8, offset: u64, len: usize) -> Result<BarTarget, String> {
    let layout = &chip.bar;
    let end = offset.checked_add(len as u64).ok_or_else(|| format!("BAR{bar} offset {offset:#x} + {len} overflows"))?;
    if let Some((index, at)) = layout.window_at(bar, offset) {
        let (kind, _) = layout.window(index).expect("a window of the layout");
        if at + len as u64 > kind.size() {
            return Err(format!(
                "BAR{bar} {offset:#x}..{end:#x} runs past the end of TLB window {index} ({} bytes)",
                kind.size()
            ));
        }
        return Ok(BarTarget::Window { index, offset: at });
    }
    let size = match bar {
        0 => layout.bar0_size,
        4 => layout.bar4_size,
        _ => return Err(format!("{}: cqlab models BAR0 and BAR4 only (BAR{bar} holds no TLB window)", chip.arch)),
    };
    let inside = |base: u32, n: u32| offset >= base as u64 && end <= base as u64 + n as u64;
    if bar == 0 {
        if let Some(r) = u32::try_from(offset).ok().and_then(|o| layout.region_at(o)) {
            if !inside(r.offset, r.size) {
                return Err(format!("BAR0 {offset:#x}..{end:#x} straddles the end of the {:?} region", r.kind));
            }
            let rel = offset as u32 - r.offset;
            return match r.kind {
                BarRegionKind::TlbConfig => match layout.tlb_config_at(offset as u32) {
                    Some((index, byte)) => Ok(BarTarget::TlbConfig { index, byte }),
                    None => Err(format!(
                        "BAR0 {offset:#x}: the {} strided-multicast TLB registers are not modelled",
                        chip.arch
                    )),
                },
                BarRegionKind::PcieNiu(noc) => Ok(BarTarget::PcieNiu { noc, offset: rel }),
                BarRegionKind::ArcCsm => match chip.arc.csm {
                    Some((_, arc_base)) => Ok(BarTarget::Arc { addr: arc_base + rel }),
                    None => Err(format!("BAR0 {offset:#x}: {} has no ARC CSM window", chip.arch)),
                },
                BarRegionKind::ArcApb if arc_over_bar => {
                    Ok(BarTarget::Arc { addr: cqlab_abi::arch::arc::APB_BASE + rel })
                }
                BarRegionKind::ArcApb => Err(format!(
                    "BAR0 {offset:#x}: on {} ARC is in BAR0 only when the card is attached through PCIe 1 (tile 11-0); \
                     this board uses PCIe 0 (tile 2-0): reach ARC through a TLB window instead",
                    chip.arch
                )),
            };
        }
    }
    if offset >= size {
        return Err(format!("BAR{bar} offset {offset:#x} is past the end of the {size:#x}-byte BAR"));
    }
    Err(format!("BAR{bar} offset {offset:#x} is in no TLB window and no register region of {}", chip.arch))
}

/// The TLB configuration registers (`arch::tlb`), as the host wrote them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tlbs {
    regs: Vec<[u32; 3]>,
}

impl Tlbs {
    pub fn new(layout: &BarLayout) -> Self {
        Tlbs { regs: vec![[0; 3]; layout.tlb_count() as usize] }
    }

    /// Writes `data` (whole words) at byte `byte` of TLB `index`'s register.
    pub fn write(&mut self, layout: &BarLayout, index: u32, byte: u32, data: &[u8]) -> Result<(), String> {
        if byte % 4 != 0 || data.len() % 4 != 0 || byte as usize + data.len() > 4 * layout.tlb_config_words() {
            return Err(format!(
                "TLB {index} configuration: write {} bytes at byte {byte} as whole 32-bit words of its register",
                data.len()
            ));
        }
        for (i, w) in data.chunks_exact(4).enumerate() {
            self.regs[index as usize][byte as usize / 4 + i] = u32::from_le_bytes(w.try_into().expect("a word"));
        }
        Ok(())
    }

    pub fn read(&self, layout: &BarLayout, index: u32, byte: u32, buf: &mut [u8]) -> Result<(), String> {
        if byte % 4 != 0 || buf.len() % 4 != 0 || byte as usize + buf.len() > 4 * layout.tlb_config_words() {
            return Err(format!("TLB {index} configuration: read whole 32-bit words of its register"));
        }
        for (i, w) in buf.chunks_exact_mut(4).enumerate() {
            w.copy_from_slice(&self.regs[index as usize][byte as usize / 4 + i].to_le_bytes());
        }
        Ok(())
    }

    /// What TLB `index` is configured to show.
    pub fn config(&self, layout: &BarLayout, index: u32) -> Result<(TlbConfig, u32), String> {
        let (kind, _) = layout.window(index).ok_or_else(|| format!("no TLB {index}"))?;
        let mut words = self.regs[index as usize];
        for w in words.iter_mut().skip(layout.tlb_config_words()) {
            *w = 0;
        }
        let c = kind.fields.decode(tlb::from_words(words)).map_err(|e| format!("TLB {index}: {e}"))?;
        Ok((c, kind.size_log2))
    }

    /// Every register's words, for digests.
    pub fn words(&self) -> impl Iterator<Item = u32> + '_ {
        self.regs.iter().flatten().copied()
    }
}

/// Host BAR access costs, in device cycles at the chip's clock
/// ([`BarTiming::at_clock`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BarTiming {
    /// What any host write through a window costs before its data: tt-umd
    /// measures 39-128 ns for a 4 B write on an n150
    /// (`tests/microbenchmark/benchmarks/tlb/README.md` at 36118ca, IoWindow
    /// Relaxed: 9.78 ns/byte to a Tensix tile, 32.05 to DRAM); 40 ns.
    pub write_overhead_cycles: u64,
    /// Host write bandwidth through a WC window: 22 GB/s.
    pub write_bytes_per_cycle: u64,
    /// A host read's PCIe round trip: at least 671 ns (tt-isa
    /// `WormholeB0/PCIExpressTile/README.md`); tt-umd's README measures 960
    /// ns for a 4 B read from DRAM (239.99 ns/byte); 680 ns.
    pub read_latency_cycles: u64,
    /// Per byte read on top (0.1 GB/s): 10 ns.
    pub read_cycles_per_byte: u64,
}

impl Default for BarTiming {
    /// At 1 GHz (Wormhole).
    fn default() -> Self {
        Self::at_clock(1.0)
    }
}

impl BarTiming {
    /// The costs at a device clock of `ghz`.
    pub fn at_clock(ghz: f64) -> Self {
        let cycles = |ns: f64| ((ns * ghz).round() as u64).max(1);
        Self {
            write_overhead_cycles: cycles(40.0),
            write_bytes_per_cycle: ((22.0 / ghz).round() as u64).max(1),
            read_latency_cycles: cycles(680.0),
            read_cycles_per_byte: cycles(10.0),
        }
    }

    /// Host time a write of `len` bytes occupies.
    pub fn write_cycles(&self, len: usize) -> u64 {
        self.write_overhead_cycles + (len as u64).div_ceil(self.write_bytes_per_cycle.max(1))
    }
    /// Host time a read of `len` bytes occupies.
    pub fn read_cycles(&self, len: usize) -> u64 {
        self.read_latency_cycles + len as u64 * self.read_cycles_per_byte
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn costs_follow_the_figures() {
        let t = super::BarTiming::default();
        assert_eq!(t.write_cycles(4), 41);
        assert_eq!(t.write_cycles(44), 42);
        assert_eq!(t.write_cycles(45), 43);
        assert_eq!(t.read_cycles(4), 720);
        // Nanoseconds stay nanoseconds at Blackhole's 1.35 GHz.
        let bh = super::BarTiming::at_clock(1.35);
        assert_eq!((bh.write_overhead_cycles, bh.read_latency_cycles), (54, 918));
    }
}
