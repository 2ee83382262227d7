//! The simulator's only source of randomness: xoshiro256** seeded through
//! splitmix64, so one `u64` seed fixes every scheduling and jitter decision.
//! Written here (a dozen lines) so the stream never changes under us with a
//! dependency upgrade: a recorded seed must replay forever.
//!
//! The seed is forked into one stream per concern ([`Streams`]), as
//! TigerBeetle's simulator does: turning a fault on draws only from its own
//! stream, so it does not reshuffle the scheduler's or the jitter's choices.

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rng {
    s: [u64; 4],
}

fn splitmix64(x: &mut u64) -> u64 {
    *x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *x;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl Rng {
    pub fn new(seed: u64) -> Self {
        let mut x = seed;
        Rng { s: [splitmix64(&mut x), splitmix64(&mut x), splitmix64(&mut x), splitmix64(&mut x)] }
    }

    pub fn next_u64(&mut self) -> u64 {
        let s = &mut self.s;
        let result = s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        result
    }

    /// Uniform in `0..=max` (tiny modulo bias is irrelevant here).
    pub fn upto(&mut self, max: u64) -> u64 {
        if max == 0 {
            0
        } else {
            self.next_u64() % (max + 1)
        }
    }

    /// True with probability `p` (0.0..=1.0).
    pub fn chance(&mut self, p: f64) -> bool {
        p > 0.0 && ((self.next_u64() >> 11) as f64 / (1u64 << 53) as f64) < p
    }
}

/// A draw keyed by `key` and `t` alone (not by earlier draws): what a
/// schedule needs that must not depend on which slices a run skipped.
pub fn at(key: u64, t: u64) -> u64 {
    let mut x = key ^ t.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    splitmix64(&mut x)
}

/// The concerns that draw random numbers, one stream each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stream {
    /// Slice lengths, rotation order, PCT priorities and change points.
    Scheduler = 1,
    /// NOC and PCIe latency jitter.
    NocJitter = 2,
    /// Core stalls (`faults.core_stall_prob`).
    CoreStalls = 3,
    /// Late doorbells (`faults.host_write_delay_cycles`).
    LateDoorbells = 4,
    /// NOC write back-pressure (`faults.write_backpressure_cycles`).
    Backpressure = 5,
    /// The host's jitter at its accesses (the driver's host schedule; the
    /// chip itself never draws from it).
    HostJitter = 6,
    /// The host's PCT points (the driver's host schedule).
    HostPct = 7,
    /// Blackhole's L0 data caches' periodic flushes (`l0cache`).
    L0Flush = 8,
}

impl Rng {
    /// Stream `stream` of `seed`: independent of the other streams of the
    /// same seed and of the same stream of other seeds.
    pub fn fork(seed: u64, stream: Stream) -> Self {
        let mut x = seed;
        let base = splitmix64(&mut x);
        Rng::new(base ^ (stream as u64).wrapping_mul(0xd1b5_4a32_d192_ed03))
    }
}

/// Every stream the chip draws from, forked from one seed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Streams {
    pub scheduler: Rng,
    pub jitter: Rng,
    pub stalls: Rng,
    pub doorbells: Rng,
    pub backpressure: Rng,
}

impl Streams {
    pub fn new(seed: u64) -> Self {
        Streams {
            scheduler: Rng::fork(seed, Stream::Scheduler),
            jitter: Rng::fork(seed, Stream::NocJitter),
            stalls: Rng::fork(seed, Stream::CoreStalls),
            doorbells: Rng::fork(seed, Stream::LateDoorbells),
            backpressure: Rng::fork(seed, Stream::Backpressure),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_stream_and_seeds_differ() {
        let (mut a, mut b, mut c) = (Rng::new(7), Rng::new(7), Rng::new(8));
        let va: Vec<u64> = (0..8).map(|_| a.next_u64()).collect();
        let vb: Vec<u64> = (0..8).map(|_| b.next_u64()).collect();
        let vc: Vec<u64> = (0..8).map(|_| c.next_u64()).collect();
        assert_eq!(va, vb);
        assert_ne!(va, vc);
        // Pinned: the stream of a recorded seed must never change.
        assert_eq!(Rng::new(0).next_u64(), 0x99ec_5f36_cb75_f2b4);
    }

    #[test]
    fn bounded_draws_stay_in_range() {
        let mut r = Rng::new(1);
        for _ in 0..1000 {
            assert!(r.upto(5) <= 5);
        }
        assert_eq!(r.upto(0), 0);
        assert!(!r.chance(0.0));
        assert!(r.chance(1.0));
    }

    #[test]
    fn forked_streams_are_distinct_and_replay() {
        let draw = |r: &mut Rng| (0..4).map(|_| r.next_u64()).collect::<Vec<_>>();
        let mut s = Streams::new(7);
        let all = [draw(&mut s.scheduler), draw(&mut s.jitter), draw(&mut s.stalls), draw(&mut s.doorbells)];
        for i in 0..all.len() {
            for j in i + 1..all.len() {
                assert_ne!(all[i], all[j], "streams {i} and {j} coincide");
            }
        }
        // Drawing from one stream leaves the others where they were.
        let mut t = Streams::new(7);
        for _ in 0..100 {
            t.stalls.next_u64();
        }
        assert_eq!(draw(&mut t.jitter), all[1]);
        assert_ne!(draw(&mut Streams::new(8).jitter), all[1]);
    }
}
