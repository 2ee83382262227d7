//! NOC transactions in flight: their latency model, the ordering rules they
//! follow, and the time-ordered event queue the scheduler drains at the end
//! of each slice.
//!
//! # Latency
//!
//! One way = 2 x interface + hops x per-hop + ceil(bytes / link bandwidth),
//! where hops are those of the path on the request's NOC: each NOC is a
//! one-way torus (NOC0 runs +x then +y, NOC1 -y then -x, both wrap;
//! `soc::route`), so a neighbour one way is a whole lap the other way; a
//! multicast costs the hops to its farthest receiver,
//! plus the endpoint's own cost (DRAM access, PCIe round trip) and a seeded
//! jitter. A read pays a header-only request trip and the data trip back; a
//! write or atomic lands after one trip and is acknowledged a header-only
//! trip later. Events at equal times keep issue order (`seq`), so delivery
//! order is a pure function of the seed.
//!
//! # Shared bandwidth
//!
//! Latency overlaps between transfers in flight (requests are pipelined);
//! data time does not, where a path carries one transfer's data at a time:
//!
//! - **PCIe, per direction.** A device read of host memory pays the read
//!   latency (`pcie.read_latency_cycles`, 450 ns), then its data crosses the
//!   host -> device direction at `pcie.read_bytes_per_kcycle` (24.5 GB/s;
//!   8 KiB at 1 GHz: 335 cycles) after the data of reads booked before it.
//!   A write to host memory crosses the device -> host direction at
//!   `pcie.write_bytes_per_kcycle` (26 GB/s; 8 KiB: 316 cycles) after
//!   earlier writes' data, then becomes visible `pcie.write_latency_cycles`
//!   (260 ns) later. So k reads of 8 KiB issued together complete about
//!   `450 + k x 335` cycles after issue on Wormhole (plus the NOC trips),
//!   not `450 + 335`: the link's 24.5 GB/s is shared, whatever the number
//!   of reads in flight. A lone transfer costs [`endpoint_cost`].
//! - **DRAM, per GDDR6 channel.** A channel streams one packet's data at a
//!   time at `dram_bytes_per_kcycle` (Wormhole 24 B/cycle, Blackhole 34),
//!   reads after `dram_latency_cycles`, writes as their flits arrive; reads
//!   and writes share it. A Wormhole DRAM tile holds two channels, one a
//!   GiB (tt-metal's two banks a tile), each with its own path
//!   (`ArchParams::gddr_channel_bytes`); a Blackhole tile holds one.
//! - **A responder's NIU.** A read's data leaves the NIU that serves it
//!   (a tile's, a DRAM or PCIe endpoint's) one packet at a time, at
//!   `noc.read_response_bytes_per_kcycle` (Wormhole 28.7 B/cycle on its 32
//!   B link, Blackhole the link's; `response_cycles`), so reads from one
//!   source overlap only their latency (tt-metal's one-from-one: 28.7
//!   B/cycle on Wormhole at 8 KiB x 256). On Blackhole it starts one no
//!   sooner than `noc.read_response_min_cycles` (35) after the last,
//!   whatever its size (one-from-one: a read every ~36 cycles from 64 B to
//!   2 KiB at 256 transactions).
//! - **A packet's header.** Each packet is one header flit plus its data
//!   flits (`packet_flits`); a multicast's data leaves its NIU at
//!   `noc.multicast_bytes_per_cycle`, or at
//!   `noc.linked_multicast_bytes_per_cycle` when the NIU's previous write
//!   was a linked multicast (`NOC_CMD_VC_LINKED`) whose path it keeps.
//! - **The links between routers**, with `noc.link_contention` (on by
//!   default since 2026-11-30): each link of a packet's path carries one
//!   packet at a time (`links`). Without it they never contend.
//! - **Not modelled:** a core's ejection port: read replies arriving
//!   together at one core each land at the full `noc.bytes_per_cycle`
//!   (serializing them hides known bug 6's symptom, which relies on three
//!   8 KiB relay packets landing at once). With link contention on, those
//!   arriving over one link into the core's router do queue there.
//!
//! The paths are booked when a transfer is scheduled (see [`Link`]): the
//! first free gap of its length at or after it is ready, so the outcome is
//! a pure function of the issue sequence and the seed.
//!
//! # Writes read their source as they leave; reads land as they arrive
//!
//! Each NIU of a tile (one per NOC) sends one packet at a time: a write's
//! flits (`bytes_per_cycle` bytes each) leave the source L1 one per cycle,
//! starting `interface_cycles` after issue or when the previous packet of the
//! same NIU has left, whichever is later. A command buffer accepts its next
//! request `interface_cycles` after `NOC_CMD_CTRL` was written (it reads busy
//! until then); accepted requests queue in the NIU. Each flit reads the
//! source when it leaves, so overwriting the source before the write is
//! *sent* changes what lands. When the last flit has left, the NIU's
//! `NIU_MST_NONPOSTED_WR_REQ_SENT` (or `_POSTED_`) counter counts it and
//! `NIU_MST_WRITE_REQS_OUTGOING_ID(tid)` drops: the source may be reused.
//! `NIU_MST_WR_ACK_RECEIVED` counts each receiver's ack once it has landed
//! (a multicast is acked once per receiver), `NIU_MST_ATOMIC_RESP_RECEIVED`
//! each atomic's response, `NIU_MST_RD_RESP_RECEIVED` each read's data;
//! `NIU_MST_REQS_OUTSTANDING_ID(tid)` rises at issue and falls with each of
//! those (for a multicast, by one per receiver both ways: an assumption, as
//! the sources are silent on it). A multicast packet reads its source once;
//! every receiver gets those bytes. A read's data lands in the destination L1 flit by flit over
//! the last `ceil(len / bytes_per_cycle)` cycles before it completes, so a
//! destination read early sees part old, part new bytes.
//!
//! Granularity: per flit, at link bandwidth, applied whenever the
//! simulator next looks: when the issuing core reaches the end of one of
//! its packets or issues a NOC command (the core is stopped at exactly that
//! cycle), before each NOC delivery, and at each slice end. At each such
//! point the core's own arriving reads land first, then its leaving flits
//! read the source. So a packet's last flit sees the source exactly as it
//! stands when it leaves; an earlier flit of a packet still leaving may also
//! see a store or a landed read from later in that packet's time (at most
//! one packet time, 256 cycles for 8 KiB): the race window is a fraction of
//! a packet too wide, never too narrow, and no store pays a check. A write
//! from *another* core that lands in a source still leaving is seen at
//! slice granularity, like every cross-core effect in this scheduler
//! (from the cycle it lands with `exact_time`).
//! Firmware that waits for *sent* before reuse is never affected. Per flit
//! rather than per packet because an 8 KiB packet takes 256 cycles to leave,
//! longer than a default slice: reading a whole packet at one instant would
//! either hide a reuse of its tail while it is still leaving (read at its
//! start) or show a reuse of its head after it has left (read at its end).
//!
//! # Ordering rules
//!
//! The one place the simulator's ordering is written down. Facts from
//! tt-metal's "Ordering (NOC, CMD_BUF, VC)" page
//! (docs/source/tt-metalium/tt_metal/apis/kernel_apis/data_movement/ordering.rst)
//! and the kernel API pages for `noc_async_writes_flushed` ("waits for ...
//! writes ... to depart, but will not wait for them to complete") and
//! `noc_async_write_barrier` (waits for them to complete), docs.tenstorrent.com:
//! writes on the same NOC and the same virtual channel arrive in program
//! order, whatever command buffer issued them; different NOCs or VCs give no
//! guarantee; unicast writes use one VC (1), multicast writes another (4);
//! `noc_semaphore_inc` is issued from the atomic command buffer on the
//! unicast-write VC; read responses use dynamically allocated VCs, so reads
//! have no ordering. PCIe (base spec, transaction ordering): posted writes
//! stay in order and a read request does not pass an earlier posted write.
//!
//! A Tensix tile has two NIUs (NOC0 and NOC1), each with four command
//! buffers; the rules hold per NIU:
//!
//! 1. **Same route, in order.** Writes and atomics from one NIU to one
//!    destination on one VC land in issue order, whichever command buffer
//!    issued them. A route is (source tile, NOC, destination, VC); the VC
//!    is the request's static VC (`NOC_CMD_STATIC_VC`: tt-metal puts
//!    unicast writes and atomics on VC 1, multicast writes on VC 4), or, for
//!    a request that lets the hardware choose, its class (unicast or
//!    multicast). Different NOCs are different routes.
//! 2. **An atomic passes a write that has not left.** Atomics do not queue
//!    behind write data in the NIU (tt-metal: a separate command buffer), so
//!    an atomic is ordered after the writes of its route that were *sent*
//!    when it issued, and may overtake the ones still leaving. Hence
//!    "data, then wait for sent, then semaphore increment" is enough to
//!    signal data to the same core: our prefetcher's flush, and the pattern
//!    of tt-metal's prefetcher, whose inline relay calls
//!    `noc_async_writes_flushed()` and then increments the dispatcher's
//!    page semaphore (tt_metal/impl/dispatch/kernels/cq_prefetch.cpp).
//! 3. **May reorder:** different destinations (DRAM bank vs worker vs
//!    dispatcher), unicast vs multicast to the same cores, and reads with
//!    respect to anything on the NOC. Where firmware needs those ordered it
//!    waits for *acked*: the dispatcher before GO (data to workers, then a
//!    multicast GO), before WAIT with BARRIER, and a worker before its done
//!    increment (its writes go to DRAM, the increment to the dispatcher).
//! 4. **PCIe.** Writes to host memory from one core are one route (rule 1),
//!    so a completion record lands before the write pointer that publishes
//!    it; a core's read of host memory is not served before the earlier
//!    writes to host memory that had left that core's NIU when it issued
//!    have landed (as an atomic, rule 2). Writes still queued in its NIU
//!    behind other packets may be passed: the sources promise no more (a
//!    read request is its own command buffer's packet, and PCIe orders
//!    only what reaches it). With `noc.reads_pass_unsent` off, the model
//!    before 2026-12-01, a read waits for those too, an ordering that hid
//!    `prefetch-chunk-refill-before-sent` (`docs/race-finder.md`).
//!
//! Jitter only stretches a transaction's latency: it is then clamped so the
//! rules still hold. The `faults.reorder` knob drops rules 1, 2 and 4 (not
//! the NIU's one-packet-at-a-time sending), for what-if runs of ordering the
//! hardware does not have.

use crate::config::SimConfig;
use cqlab_abi::arch::Noc;
use std::cmp::Ordering;

/// Where a request lands, resolved at issue (a tile by its index in the
/// chip, a DRAM channel, host memory).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Target {
    /// L1 of a Tensix tile.
    L1 { tile: usize, addr: u32 },
    /// A register of a Tensix tile (4 bytes).
    Reg { tile: usize, addr: u32 },
    /// A DRAM channel.
    Dram { channel: usize, offset: u64 },
    /// Host memory, by offset from the chip's host-memory base.
    Host { offset: u64 },
    /// The ARC tile, by ARC address.
    Arc { addr: u32 },
    /// L1 of every receiver of a multicast.
    Multicast { tiles: Vec<usize>, addr: u32 },
}

impl Target {
    /// What the endpoint adds to a transfer.
    pub fn endpoint(&self) -> EndpointKind {
        match self {
            Target::Host { .. } => EndpointKind::Pcie,
            Target::Dram { .. } => EndpointKind::Dram,
            _ => EndpointKind::Tile,
        }
    }

    /// The same target `delta` bytes further on.
    pub fn offset(&self, delta: u64) -> Target {
        match self {
            Target::L1 { tile, addr } => Target::L1 { tile: *tile, addr: addr + delta as u32 },
            Target::Reg { tile, addr } => Target::Reg { tile: *tile, addr: addr + delta as u32 },
            Target::Dram { channel, offset } => Target::Dram { channel: *channel, offset: offset + delta },
            Target::Host { offset } => Target::Host { offset: offset + delta },
            Target::Arc { addr } => Target::Arc { addr: addr + delta as u32 },
            Target::Multicast { tiles, addr } => Target::Multicast { tiles: tiles.clone(), addr: addr + delta as u32 },
        }
    }
}

/// The kind of endpoint a transfer ends at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EndpointKind {
    Pcie,
    Dram,
    Tile,
}

/// Which NIU issued a request: (tile index, NOC).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Source {
    pub tile: usize,
    pub noc: Noc,
}

impl Source {
    /// Index of this NIU among all the chip's (two per tile).
    pub fn index(self) -> usize {
        self.tile * 2 + self.noc.index() as usize
    }
}

/// What happens when an event fires.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EventKind {
    /// A write's payload (`id` in the chip's payloads, `len` bytes, read
    /// from the source by then) lands at its target(s); `src: None` for a
    /// host write through a TLB window.
    WriteArrive { src: Option<Source>, target: Target, id: u64, len: u32, posted: bool },
    /// Acks of a non-posted write reach its NIU (`count`: one per receiver).
    WriteAck { src: Source, tid: u32, count: u32 },
    /// An atomic increment applies at its target (an L1 word).
    AtomicArrive { src: Source, id: u64, target: Target, value: u32, wrap: u32, resp: bool },
    /// An atomic's response reaches its NIU: the old value lands at `ret`
    /// (when non-posted).
    AtomicResp { src: Source, id: u64, tid: u32, ret: Option<u32> },
    /// A posted host BAR write lands (late doorbell).
    HostWrite { target: Target, data: Vec<u8> },
    /// A read's last flit lands in the source's L1 (earlier flits landed
    /// as they arrived, see [`Landing`]).
    ReadComplete { src: Source, id: u64, target: Target, local: u32, len: u32, tid: u32 },
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

/// A virtual channel (see the module doc, rule 1).
/// The virtual channel of a route: a static VC number, or the class the
/// hardware picks a VC from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Vc {
    Static(u32),
    Unicast,
    Multicast,
}

/// One route: source NIU, destination (a tile, a DRAM channel, host memory,
/// or a multicast's receivers), virtual channel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Route {
    pub src: u32,
    pub dst: u64,
    pub vc: Vc,
}

impl Route {
    /// The route of a write or atomic from NIU `src` to `dst` (a key of
    /// the destination) on `vc`.
    pub fn of(src: Source, dst: u64, vc: Vc) -> Self {
        Route { src: src.index() as u32, dst, vc }
    }
}

/// Arrival bookkeeping of one route.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct RouteState {
    /// Latest arrival of anything issued on the route.
    all: u64,
    /// Latest arrival of what an atomic must follow: atomics, and writes
    /// that had left their source when it issued.
    sent: u64,
    /// Writes that may still be leaving: (last flit leaves, arrival).
    leaving: Vec<(u64, u64)>,
}

impl RouteState {
    /// Folds the writes whose last flit left before cycle `t` into `sent`.
    fn settle(&mut self, t: u64) {
        let sent = &mut self.sent;
        self.leaving.retain(|&(left, arrive)| {
            let gone = left < t;
            if gone {
                *sent = (*sent).max(arrive);
            }
            !gone
        });
    }
}

/// A multiply-xor hasher for small fixed keys (routes are looked up on
/// every write and atomic; SipHash's DoS resistance buys nothing here).
#[derive(Default)]
pub struct RouteHasher(u64);

impl std::hash::Hasher for RouteHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(b as u64);
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
    fn write_u32(&mut self, v: u32) {
        self.write_u64(v as u64);
    }
    fn write_usize(&mut self, v: usize) {
        self.write_u64(v as u64);
    }
    fn write_isize(&mut self, v: isize) {
        self.write_u64(v as u64);
    }
}

/// The ordering rules of the module doc, as arrival-time clamps.
#[derive(Clone, Debug, Default)]
pub struct Routes {
    map: std::collections::HashMap<Route, RouteState, std::hash::BuildHasherDefault<RouteHasher>>,
}

impl Routes {
    /// A write issued at `t` whose last flit leaves at `left` and which would
    /// land at `arrive`: lands no earlier than anything before it on `route`.
    pub fn write(&mut self, route: Route, t: u64, left: u64, arrive: u64) -> u64 {
        let r = self.map.entry(route).or_default();
        r.settle(t);
        let at = arrive.max(r.all);
        r.all = at;
        r.leaving.push((left, at));
        at
    }

    /// An atomic issued at `t` that would land at `arrive`: lands no earlier
    /// than the atomics and the already-sent writes before it on `route`.
    pub fn atomic(&mut self, route: Route, t: u64, arrive: u64) -> u64 {
        let r = self.map.entry(route).or_default();
        r.settle(t);
        let at = arrive.max(r.sent);
        r.sent = at;
        r.all = r.all.max(at);
        at
    }

    /// Earliest time a read on `route`'s destination may be served under
    /// rule 4 as it was before 2026-12-01 (`noc.reads_pass_unsent` off):
    /// after every earlier posted write on the route has landed, also those
    /// still queued in its NIU.
    pub fn posted_landed(&self, route: Route) -> u64 {
        self.map.get(&route).map_or(0, |r| r.all)
    }

    /// [`Self::posted_landed`] counting only the writes whose last flit had
    /// left before cycle `t` (`noc.reads_pass_unsent`, the default).
    pub fn sent_landed(&mut self, route: Route, t: u64) -> u64 {
        self.map.get_mut(&route).map_or(0, |r| {
            r.settle(t);
            r.sent
        })
    }
}

/// A write still reading its source: data flit `k` (bytes `k * rate ..`)
/// leaves at `start + k`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Departing {
    pub id: u64,
    pub src: Source,
    pub tid: u32,
    pub posted: bool,
    pub local: u32,
    pub len: u32,
    pub start: u64,
    /// Bytes per cycle it leaves at: the link's, or the multicast rate.
    pub rate: u64,
    /// Bytes read from the source so far.
    pub read: u32,
}

/// A read whose data is arriving: flit `k` lands at `start + k`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Landing {
    pub id: u64,
    pub src: Source,
    pub target: Target,
    pub local: u32,
    pub len: u32,
    pub start: u64,
    /// Bytes landed so far.
    pub done: u32,
}

/// Bytes of a `len`-byte transfer whose flits (`bpc` bytes, one per cycle
/// from `start`) have passed by cycle `t` (inclusive).
pub fn flits_by(start: u64, len: u32, bpc: u64, t: u64) -> u32 {
    if t < start {
        return 0;
    }
    (t - start + 1).saturating_mul(bpc).min(len as u64) as u32
}

/// Cycle the last flit of a `len`-byte transfer starting at `start` passes.
pub fn last_flit(start: u64, len: u32, bpc: u64) -> u64 {
    start + (len as u64).div_ceil(bpc).max(1) - 1
}

/// Most data flits one header flit leads: a burst, tt-metal's
/// `NOC_MAX_BURST_WORDS` (the largest packet over the flit size, 256 on
/// both chips: 8 KiB of 32 B flits, 16 KiB of 64 B).
pub const DATA_FLITS_PER_HEADER: u64 = {
    use cqlab_abi::arch::{BLACKHOLE, WORMHOLE};
    let burst = WORMHOLE.noc.max_packet / WORMHOLE.noc.flit_bytes;
    assert!(burst == BLACKHOLE.noc.max_packet / BLACKHOLE.noc.flit_bytes, "one burst length on both chips");
    burst as u64
};

/// Flits a packet carrying `bytes` puts on a link at `bpc` bytes per data
/// flit: its data and one header per up to [`DATA_FLITS_PER_HEADER`] of
/// them; a header-only packet (a read request, an ack) is one flit.
pub fn packet_flits(bytes: u32, bpc: u64) -> u64 {
    let data = (bytes as u64).div_ceil(bpc);
    data + data.div_ceil(DATA_FLITS_PER_HEADER).max(1)
}

/// Cycles a read response of `bytes` holds its responder's NIU: its flits,
/// or longer at `noc.read_response_bytes_per_kcycle`.
pub fn response_cycles(cfg: &SimConfig, bytes: u32) -> u64 {
    let flits = packet_flits(bytes, cfg.noc.bytes_per_cycle);
    let headers = flits - (bytes as u64).div_ceil(cfg.noc.bytes_per_cycle);
    flits.max((bytes as u64 * 1000).div_ceil(cfg.noc.read_response_bytes_per_kcycle) + headers)
}

/// One-way NOC trip of `hops` hops carrying `bytes`: the interfaces, the
/// hops, and the packet's flits one per cycle.
pub fn trip(cfg: &SimConfig, hops: u32, bytes: u32) -> u64 {
    let n = &cfg.noc;
    2 * n.interface_cycles + hops as u64 * n.hop_cycles + packet_flits(bytes, n.bytes_per_cycle)
}

/// The NOC's lookahead: the least time from a core issuing a request to
/// its first effect anywhere (a zero-hop trip of a header alone: every
/// write, atomic and read pays at least that before it lands; endpoints,
/// ordering and jitter only add).
pub fn lookahead(cfg: &SimConfig) -> u64 {
    trip(cfg, 0, 0)
}

/// The least time from a core's request to its first effect on another
/// tile: a one-hop trip of a header alone (a request to its own tile may
/// land sooner, at [`lookahead`]).
pub fn lookahead_between_tiles(cfg: &SimConfig) -> u64 {
    trip(cfg, 1, 0)
}

/// Cycles the endpoint itself adds to a transfer of `bytes` when nothing
/// else is using it: its latency plus its data time (PCIe's link, a DRAM
/// channel).
/// [`Endpoints::done`] adds the wait for a busy link.
pub fn endpoint_cost(cfg: &SimConfig, kind: EndpointKind, bytes: u32, is_read: bool) -> u64 {
    match kind {
        EndpointKind::Pcie => {
            let (lat, data) = pcie_cycles(cfg, bytes, is_read);
            lat + data
        }
        EndpointKind::Dram => cfg.dram_latency_cycles + dram_cycles(cfg, bytes),
        EndpointKind::Tile => 0,
    }
}

/// Cycles a DRAM bank takes to stream `bytes` (`dram_bytes_per_kcycle`).
fn dram_cycles(cfg: &SimConfig, bytes: u32) -> u64 {
    (bytes as u64 * 1000).div_ceil(cfg.dram_bytes_per_kcycle)
}

/// PCIe latency and data time (`bytes` at the direction's bandwidth) of one
/// transfer: a read of host memory uses the read direction (data flows
/// host -> device), a write the write direction.
fn pcie_cycles(cfg: &SimConfig, bytes: u32, is_read: bool) -> (u64, u64) {
    let p = &cfg.pcie;
    let (lat, bw) = if is_read {
        (p.read_latency_cycles, p.read_bytes_per_kcycle)
    } else {
        (p.write_latency_cycles, p.write_bytes_per_kcycle)
    };
    (lat, (bytes as u64 * 1000).div_ceil(bw))
}

/// A resource that carries one transfer's data at a time (one direction of
/// the PCIe link): its booked intervals
/// `[start, end)`, sorted and disjoint. A transfer takes the first gap of
/// its length at or after the cycle it is ready. Cores of one slice schedule
/// their transfers in rotation order, not time order, so a booking may come
/// in earlier than one already made: it fills the gap before it if it fits
/// there, rather than queueing behind a transfer that is later in time.
/// Bookings are pure functions of the issue sequence, so runs stay
/// deterministic.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Link {
    busy: Vec<(u64, u64)>,
}

impl Link {
    /// Books `cycles` cycles starting at `ready` or at the first gap after
    /// it; returns the start. Zero cycles book nothing.
    pub fn book(&mut self, ready: u64, cycles: u64) -> u64 {
        if cycles == 0 {
            return ready;
        }
        // Mostly the link is free from `ready` on: no gap to look for.
        if self.busy.last().is_none_or(|&(_, e)| e <= ready) {
            match self.busy.last_mut() {
                Some(last) if last.1 == ready => last.1 = ready + cycles,
                _ => self.busy.push((ready, ready + cycles)),
            }
            return ready;
        }
        let mut start = ready;
        let mut at = self.busy.len();
        // Bookings are sorted and apart: skip those over by `ready` at once.
        let first = self.busy.partition_point(|&(_, e)| e <= ready);
        for (k, &(s, e)) in self.busy.iter().enumerate().skip(first) {
            if s >= start + cycles {
                at = k;
                break;
            }
            start = e;
        }
        let end = start + cycles;
        // Merge with touching neighbours so back-to-back streams stay one entry.
        let before = at.checked_sub(1).filter(|&k| self.busy[k].1 == start);
        let after = Some(at).filter(|&k| k < self.busy.len() && self.busy[k].0 == end);
        match (before, after) {
            (Some(b), Some(a)) => {
                self.busy[b].1 = self.busy[a].1;
                self.busy.remove(a);
            }
            (Some(b), None) => self.busy[b].1 = end,
            (None, Some(a)) => self.busy[a].0 = start,
            (None, None) => self.busy.insert(at, (start, end)),
        }
        start
    }

    /// [`Link::forget_before`] `now`, then [`Link::book`]: inline where
    /// nothing is booked past `now` (mostly so), as each hop of each packet
    /// books its link.
    #[inline]
    pub fn book_after(&mut self, now: u64, ready: u64, cycles: u64) -> u64 {
        match self.busy.last() {
            None => {}
            // Sorted: every booking ended by `now`.
            Some(&(_, e)) if e <= now => self.busy.clear(),
            Some(_) => {
                self.forget_before(now);
                return self.book(ready, cycles);
            }
        }
        if cycles > 0 {
            self.busy.push((ready, ready + cycles));
        }
        ready
    }

    /// Drops the bookings that ended by cycle `t` (no transfer is ready
    /// before `t` any more).
    pub fn forget_before(&mut self, t: u64) {
        if self.busy.first().is_none_or(|&(_, e)| e > t) {
            return;
        }
        let gone = self.busy.partition_point(|&(_, e)| e <= t);
        self.busy.drain(..gone);
    }

    /// The booked intervals, for the chip's digest.
    pub fn busy(&self) -> &[(u64, u64)] {
        &self.busy
    }
}

/// The shared data paths of the chip's endpoints (see the module doc,
/// "Shared bandwidth").
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Endpoints {
    /// PCIe, host -> device: data of device reads of host memory.
    pub pcie_read: Link,
    /// PCIe, device -> host: data of device writes to host memory.
    pub pcie_write: Link,
    /// Each GDDR6 channel's data path, reads and writes alike, by DRAM
    /// tile (tt-umd channel) and GDDR6 channel within it.
    pub dram: std::collections::BTreeMap<(usize, u64), Link>,
    /// Each responding NIU's outgoing link for read data, by (destination
    /// key, NOC index): one response packet leaves it at a time.
    pub responses: std::collections::BTreeMap<(u64, u8), Link>,
}

impl Endpoints {
    /// When a transfer of `bytes` that reaches endpoint `target` at `ready`
    /// is done there: a read's data has left the endpoint, a write is
    /// visible. At PCIe a read's data crosses the link after the latency
    /// (the request's round trip to host memory, which overlaps with other
    /// requests), a write's data crosses it before (then becomes visible
    /// after the latency); each direction carries one transfer's data at a
    /// time. A DRAM channel streams one packet's data at a time, after its
    /// latency for a read, as the data arrives for a write (whose last
    /// flit arrives at `ready`), and its latency after that. Bookings that
    /// ended before `now` are dropped.
    pub fn done(&mut self, cfg: &SimConfig, target: &Target, ready: u64, bytes: u32, is_read: bool, now: u64) -> u64 {
        match target {
            Target::Host { .. } => {
                let (lat, data) = pcie_cycles(cfg, bytes, is_read);
                if is_read {
                    self.pcie_read.forget_before(now);
                    self.pcie_read.book(ready + lat, data) + data
                } else {
                    self.pcie_write.forget_before(now);
                    self.pcie_write.book(ready, data) + data + lat
                }
            }
            Target::Dram { channel, offset } => {
                let (lat, data) = (cfg.dram_latency_cycles, dram_cycles(cfg, bytes));
                let gddr = offset / cfg.board.arch().params().gddr_channel_bytes;
                let bank = self.dram.entry((*channel, gddr)).or_default();
                bank.forget_before(now);
                if is_read {
                    bank.book(ready + lat, data) + data
                } else {
                    // The bank takes the data as it arrives, at its own rate.
                    let first = ready + 1 - packet_flits(bytes, cfg.noc.bytes_per_cycle).min(ready + 1);
                    (bank.book(first, data) + data).max(ready) + lat
                }
            }
            _ => ready,
        }
    }

    /// The cycle the first flit of a read response of `bytes` leaves the
    /// responding NIU (`responder`: destination key, NOC index), whose data
    /// is all at hand by `ready` and streamed from cycle `from` (a slower
    /// endpoint, DRAM or PCIe, streams the data as the NIU sends it, so the
    /// last flit leaves no earlier than `ready`).
    pub fn respond(
        &mut self,
        cfg: &SimConfig,
        responder: (u64, u8),
        from: u64,
        ready: u64,
        bytes: u32,
        now: u64,
    ) -> u64 {
        let hold = response_cycles(cfg, bytes);
        // The NIU starts no other response for `read_response_min_cycles`.
        let busy = hold.max(cfg.noc.read_response_min_cycles);
        let link = self.responses.entry(responder).or_default();
        link.forget_before(now);
        link.book(from.max((ready + 1).saturating_sub(hold)), busy)
    }

    /// Every link, for the chip's digest.
    pub fn links(&self) -> impl Iterator<Item = &Link> {
        [&self.pcie_read, &self.pcie_write].into_iter().chain(self.dram.values()).chain(self.responses.values())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BinaryHeap;

    const PCIE: EndpointKind = EndpointKind::Pcie;

    #[test]
    fn latency_follows_the_formula() {
        let cfg = SimConfig::default();
        // One hop, 64 bytes on Wormhole's 32-byte flits: 2*5 + 1*9 + a header and 2 data flits.
        assert_eq!(trip(&cfg, 1, 64), 22);
        // 14 hops, header only.
        assert_eq!(trip(&cfg, 14, 0), 10 + 14 * 9 + 1);
        // Blackhole's flits carry 64 bytes.
        let bh = SimConfig::for_board(cqlab_abi::soc::Board::BlackholeP150a);
        assert_eq!(trip(&bh, 1, 64), 21);
        // 245 B at 24.5 GB/s: 10 cycles of data after the read latency.
        assert_eq!(endpoint_cost(&cfg, PCIE, 245, true), cfg.pcie.read_latency_cycles + 10);
        // 24 B/cycle per DRAM channel on Wormhole.
        assert_eq!(endpoint_cost(&cfg, EndpointKind::Dram, 48, false), 100 + 2);
        assert_eq!(endpoint_cost(&cfg, EndpointKind::Tile, 4, false), 0);
    }

    #[test]
    fn a_packet_has_a_header_flit_per_256_data_flits() {
        assert_eq!(packet_flits(0, 32), 1, "a read request or an ack");
        assert_eq!(packet_flits(4, 32), 2);
        assert_eq!(packet_flits(8192, 32), 257, "Wormhole's largest packet");
        assert_eq!(packet_flits(16384, 64), 257, "Blackhole's");
        assert_eq!(packet_flits(8224, 32), 259, "past 256 data flits, a second header");
    }

    #[test]
    fn a_link_carries_one_transfer_at_a_time_and_fills_gaps() {
        let mut l = Link::default();
        assert_eq!(l.book(100, 50), 100);
        // Ready while the first is on the link: waits for it.
        assert_eq!(l.book(120, 50), 150);
        // Booked later but ready earlier, and it fits before: goes first.
        assert_eq!(l.book(10, 90), 10);
        assert_eq!(l.busy(), &[(10, 200)], "touching bookings merge");
        // Does not fit in a gap too small: goes after.
        assert_eq!(l.book(300, 10), 300);
        assert_eq!(l.book(195, 101), 310);
        // Fits a gap exactly: fills it.
        assert_eq!(l.book(150, 100), 200);
        assert_eq!(l.busy(), &[(10, 411)]);
        assert_eq!(l.book(7, 0), 7, "nothing to carry, no wait");
        l.forget_before(410);
        assert_eq!(l.busy(), &[(10, 411)], "still busy at 410");
        l.forget_before(411);
        assert_eq!(l.busy(), &[]);
    }

    #[test]
    fn pcie_data_time_serializes_per_direction_and_latency_overlaps() {
        let cfg = SimConfig::default();
        let lat = cfg.pcie.read_latency_cycles;
        let host = Target::Host { offset: 0 };
        let mut e = Endpoints::default();
        // 24 500 B at 24.5 B/cycle: 1000 cycles of data after the latency.
        assert_eq!(e.done(&cfg, &host, 0, 24_500, true, 0), lat + 1000);
        assert_eq!(e.done(&cfg, &host, 0, 24_500, true, 0), lat + 2000, "a second read waits for the data only");
        // Writes use the other direction: 26 000 B in 1000 cycles, then 260.
        assert_eq!(e.done(&cfg, &host, 0, 26_000, false, 0), 1260);
        assert_eq!(e.done(&cfg, &host, 10, 26_000, false, 0), 2260);
        // Alone, each costs what `endpoint_cost` says.
        let alone = Endpoints::default().done(&cfg, &host, 5, 245, true, 0);
        assert_eq!(alone, 5 + endpoint_cost(&cfg, PCIE, 245, true));
    }

    #[test]
    fn a_dram_channel_streams_one_packet_at_a_time() {
        let cfg = SimConfig::default();
        let (bank0, bank1) = (Target::Dram { channel: 0, offset: 0 }, Target::Dram { channel: 1, offset: 0 });
        let mut e = Endpoints::default();
        // 8 KiB at 24 B/cycle: 342 cycles after the 100 of latency.
        assert_eq!(e.done(&cfg, &bank0, 5, 8192, true, 0), 5 + 100 + 342);
        assert_eq!(e.done(&cfg, &bank0, 5, 8192, true, 0), 5 + 100 + 2 * 342, "the second waits for the bank");
        assert_eq!(e.done(&cfg, &bank1, 5, 8192, true, 0), 5 + 100 + 342, "another channel does not");
        // A Wormhole DRAM tile's second GiB is its second GDDR6 channel, with its own path.
        let second = Target::Dram { channel: 0, offset: 1 << 30 };
        assert_eq!(e.done(&cfg, &second, 5, 8192, true, 0), 5 + 100 + 342, "the tile's other channel does not");
        let below = Target::Dram { channel: 0, offset: (1 << 30) - 8192 };
        assert_eq!(e.done(&cfg, &below, 5, 8192, true, 0), 5 + 100 + 3 * 342, "the first GiB is the first channel");
        // A write: the bank takes the data as its 257 flits arrive (the last at 1000).
        let mut e = Endpoints::default();
        assert_eq!(e.done(&cfg, &bank0, 1000, 8192, false, 0), 744 + 342 + 100);
    }

    #[test]
    fn a_responder_sends_one_read_response_at_a_time() {
        let cfg = SimConfig::default();
        // Wormhole: 8 KiB of response at 28.7 B/cycle (286 cycles) and its
        // header, against 257 flits at the link's rate.
        assert_eq!(response_cycles(&cfg, 8192), 287);
        let mut e = Endpoints::default();
        // Data at hand at once (an L1): leaves when asked, then queues.
        assert_eq!(e.respond(&cfg, (7, 0), 100, 100, 8192, 0), 100);
        assert_eq!(e.respond(&cfg, (7, 0), 100, 100, 8192, 0), 387);
        assert_eq!(e.respond(&cfg, (7, 1), 100, 100, 8192, 0), 100, "the other NOC's NIU is free");
        // Streamed from a slower endpoint: the last flit leaves no earlier than the data is out.
        assert_eq!(e.respond(&cfg, (9, 0), 100, 1000, 8192, 0), 1000 + 1 - 287);
        // Blackhole's responses leave at the link's rate: their flits.
        let bh = SimConfig::for_board(cqlab_abi::soc::Board::BlackholeP150a);
        assert_eq!(response_cycles(&bh, 16384), packet_flits(16384, bh.noc.bytes_per_cycle));
        // ... but a small one holds the NIU for `read_response_min_cycles`
        // (35), where its two flits would hold it 2: the next waits, and
        // the first's own time is still its flits.
        assert_eq!(response_cycles(&bh, 64), 2);
        assert_eq!(e.respond(&bh, (11, 0), 100, 100, 64, 0), 100);
        assert_eq!(e.respond(&bh, (11, 0), 100, 100, 64, 0), 135);
        // Wormhole has no such floor: back to back.
        assert_eq!(e.respond(&cfg, (13, 0), 100, 100, 32, 0), 100);
        assert_eq!(e.respond(&cfg, (13, 0), 100, 100, 32, 0), 100 + response_cycles(&cfg, 32));
    }

    #[test]
    fn flits_pass_one_per_cycle() {
        assert_eq!(flits_by(10, 100, 32, 9), 0);
        assert_eq!(flits_by(10, 100, 32, 10), 32);
        assert_eq!(flits_by(10, 100, 32, 12), 96);
        assert_eq!(flits_by(10, 100, 32, 13), 100);
        assert_eq!(last_flit(10, 100, 32), 13);
        assert_eq!(last_flit(10, 4, 32), 10);
    }

    #[test]
    fn routes_keep_order_and_atomics_pass_unsent_writes() {
        let mut r = Routes::default();
        let src = Source { tile: 3, noc: Noc::Noc0 };
        let to = Route::of(src, 21, Vc::Static(1));
        // A second write that would land first lands after the first.
        assert_eq!(r.write(to, 0, 100, 500), 500);
        assert_eq!(r.write(to, 1, 200, 300), 500);
        // Another destination is another route, and so is another NOC.
        assert_eq!(r.write(Route::of(src, 22, Vc::Static(1)), 2, 210, 250), 250);
        let other_noc = Source { tile: 3, noc: Noc::Noc1 };
        assert_eq!(r.write(Route::of(other_noc, 21, Vc::Static(1)), 2, 210, 250), 250);
        // An atomic issued while both writes still leave may pass them...
        assert_eq!(r.atomic(to, 50, 80), 80);
        // ...one issued after they left may not.
        assert_eq!(r.atomic(to, 201, 260), 500);
        assert_eq!(r.posted_landed(to), 500);
        // Multicast takes its own VC.
        let mc = Route::of(src, 21, Vc::Static(4));
        assert_ne!(mc, to);
        assert_eq!(r.write(mc, 3, 300, 310), 310);
    }

    /// `noc.reads_pass_unsent`: a host read waits for the writes of its
    /// route that had left when it issued, not for those still queued
    /// (`docs/race-finder.md`: the model before, which waited for those
    /// too, hid `prefetch-chunk-refill-before-sent`).
    #[test]
    fn a_read_passing_unsent_writes_waits_only_for_the_sent_ones() {
        let mut r = Routes::default();
        let to = Route::of(Source { tile: 3, noc: Noc::Noc0 }, 21, Vc::Static(1));
        // One write has left by cycle 100 and lands at 400; the next, queued
        // behind other packets, leaves at 900 and lands at 1,200.
        r.write(to, 0, 99, 400);
        r.write(to, 1, 900, 1_200);
        // Rule 4 before 2026-12-01: a read issued at 100 is served after both.
        assert_eq!(r.posted_landed(to), 1_200);
        // Passing unsent writes (the default): after the sent one only.
        assert_eq!(r.sent_landed(to, 100), 400);
        // Once the second has left, after it too.
        assert_eq!(r.sent_landed(to, 901), 1_200);
        let elsewhere = Route::of(Source { tile: 4, noc: Noc::Noc0 }, 21, Vc::Static(1));
        assert_eq!(r.sent_landed(elsewhere, 901), 0);
    }

    #[test]
    fn events_pop_in_time_then_issue_order() {
        let src = Source { tile: 0, noc: Noc::Noc0 };
        let ev = |time, seq| Event { time, seq, kind: EventKind::WriteAck { src, tid: 0, count: 1 } };
        let mut h: BinaryHeap<Event> = [ev(5, 2), ev(3, 9), ev(5, 1), ev(1, 4)].into_iter().collect();
        let order: Vec<(u64, u64)> = std::iter::from_fn(|| h.pop().map(|e| (e.time, e.seq))).collect();
        assert_eq!(order, vec![(1, 4), (3, 9), (5, 1), (5, 2)]);
    }
}
