//! NOC transactions in flight: their latency model and the time-ordered
//! event queue the scheduler drains at the end of each slice.
//!
//! Latency (one way) = 2 x interface + hops x per-hop + ceil(bytes / link
//! bandwidth), plus the endpoint's own cost (DRAM access, PCIe round trip)
//! and a seeded jitter. A read pays a header-only request trip and the data
//! trip back; a write or atomic lands after one trip and is acknowledged a
//! header-only trip later. Events at equal times keep issue order (`seq`),
//! so delivery order is a pure function of the seed.

use crate::config::SimConfig;
use cqlab_abi::noc::{endpoint, Coord, Endpoint, NocAddr};
use std::cmp::Ordering;

/// What happens when an event fires. `src` is the issuing core's index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EventKind {
    /// A write's payload lands at its target(s).
    WriteArrive {
        target: NocAddr,
        data: Vec<u8>,
    },
    WriteAck {
        src: usize,
    },
    /// An atomic increment applies at its target.
    AtomicArrive {
        target: NocAddr,
        value: u32,
    },
    AtomicAck {
        src: usize,
    },
    /// A posted host BAR write lands (late doorbell).
    HostWrite {
        target: NocAddr,
        data: Vec<u8>,
    },
    /// A read's data (sampled now at the target) lands in the source's L1.
    ReadComplete {
        src: usize,
        target: NocAddr,
        local: u32,
        len: u32,
    },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    pub time: u64,
    pub seq: u64,
    pub kind: EventKind,
}

// Min-heap order on (time, seq) for `BinaryHeap`.
impl Ord for Event {
    fn cmp(&self, other: &Self) -> Ordering {
        (other.time, other.seq).cmp(&(self.time, self.seq))
    }
}
impl PartialOrd for Event {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// One-way NOC trip from `from` to `to` carrying `bytes`.
pub fn trip(cfg: &SimConfig, from: Coord, to: Coord, bytes: u32) -> u64 {
    let n = &cfg.noc;
    2 * n.interface_cycles + from.hops(to) as u64 * n.hop_cycles + (bytes as u64).div_ceil(n.bytes_per_cycle)
}

/// The farthest corner of a (multicast) target from `from`.
pub fn farthest(from: Coord, target: NocAddr) -> Coord {
    let (a, b) = (target.coord(), target.mcast_end());
    let corners = [a, b, Coord::new(a.x, b.y), Coord::new(b.x, a.y)];
    corners.into_iter().max_by_key(|c| from.hops(*c)).unwrap_or(a)
}

/// Cycles the endpoint itself adds to a transfer of `bytes`.
pub fn endpoint_cost(cfg: &SimConfig, target: Coord, bytes: u32, is_read: bool) -> u64 {
    match endpoint(target) {
        Endpoint::Pcie => {
            let p = &cfg.pcie;
            let (lat, bw) = if is_read {
                (p.read_latency_cycles, p.read_bytes_per_kcycle)
            } else {
                (p.write_latency_cycles, p.write_bytes_per_kcycle)
            };
            lat + (bytes as u64 * 1000).div_ceil(bw)
        }
        Endpoint::Dram { .. } => cfg.dram_latency_cycles,
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cqlab_abi::noc::{dram_bank, worker, PCIE};
    use std::collections::BinaryHeap;

    #[test]
    fn latency_follows_the_formula() {
        let cfg = SimConfig::default();
        // Neighbours, 64 bytes: 2*5 + 1*9 + 2.
        assert_eq!(trip(&cfg, worker(0, 0), worker(1, 0), 64), 21);
        // Far corner, header only.
        assert_eq!(trip(&cfg, worker(0, 0), worker(7, 7), 0), 10 + 14 * 9);
        assert_eq!(endpoint_cost(&cfg, PCIE, 245, true), 750 + 10);
        assert_eq!(endpoint_cost(&cfg, dram_bank(0), 4, false), 100);
        assert_eq!(endpoint_cost(&cfg, worker(0, 0), 4, false), 0);
    }

    #[test]
    fn multicast_latency_uses_the_farthest_corner() {
        let t = NocAddr::multicast(worker(0, 0), worker(7, 7), 0);
        assert_eq!(farthest(worker(0, 0), t), worker(7, 7));
        assert_eq!(farthest(worker(7, 0), t), worker(0, 7));
    }

    #[test]
    fn events_pop_in_time_then_issue_order() {
        let ev = |time, seq| Event { time, seq, kind: EventKind::WriteAck { src: 0 } };
        let mut h: BinaryHeap<Event> = [ev(5, 2), ev(3, 9), ev(5, 1), ev(1, 4)].into_iter().collect();
        let order: Vec<(u64, u64)> = std::iter::from_fn(|| h.pop().map(|e| (e.time, e.seq))).collect();
        assert_eq!(order, vec![(1, 4), (3, 9), (5, 1), (5, 2)]);
    }
}
