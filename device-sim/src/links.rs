//! The links between NOC routers, when `NocTiming::link_contention` is on
//! (the default since 2026-11-30).
//!
//! Each NOC is a one-way torus (`soc::route`): every router has one
//! outgoing link along x and one along y per NOC, so a link is named by
//! its router, its axis and its NOC. tt-isa `WormholeB0/NoC/RoutingPaths.md`
//! ("Congestion"): two packets that want one link on the same virtual
//! channel take it one after the other; on different virtual channels
//! their flits interleave. A link carries one flit a cycle
//! (`NocTiming::bytes_per_cycle`).
//!
//! What is modelled, and what is simplified:
//!
//! - **Whole packets, one at a time.** A packet holds each link of its
//!   path for the cycles it takes to leave its NIU (its flits, or longer at
//!   a multicast's slower rate: routers cut through, so a packet's flits
//!   pass each link at the rate they were sent). A packet whose link is
//!   taken waits for the first gap of its length at or after its head
//!   arrives (`noc::Link::book`), then its head moves on to the next
//!   router `hop_cycles` later. Within a class virtual channels are
//!   ignored: two packets on different VCs would interleave their flits,
//!   which costs the pair the same link time but lets the first finish
//!   later than here.
//! - **Requests and responses apart.** Requests (read requests, write
//!   data, atomics) and responses (read data, acks) travel on different
//!   virtual channels (tt-isa `WormholeB0/DRAMTile/README.md`: 12 VCs for
//!   requests, 4 for responses on each link), so their flits interleave: a
//!   link is booked per class, and a one-flit read request does not wait
//!   behind another tile's 8 KiB response crossing its path. The link time
//!   the two classes share is not charged (heavy traffic of both classes
//!   on one link runs here at up to twice the link's rate).
//! - **No back-pressure upstream.** A packet waiting for a link does not
//!   hold the links behind it (as if routers buffered whole packets), so
//!   a blocked packet never blocks a third one.
//! - **Booked at issue.** Packets are booked when the chip schedules them,
//!   which is not device-time order across the cores of a slice: a gap
//!   before a booking already made is taken when the packet fits there
//!   (`Link` keeps intervals, not a "free at" cycle). Bookings that ended
//!   before device time are dropped when their link is next used.
//! - **Only waiting is added.** A packet on free links costs exactly what
//!   it costs with the option off (`noc::trip`), so a lone transfer's
//!   figures do not move.
//! - **Multicast** books the links of its tree once each: from the sender
//!   along x to the rectangle's first column, along y to each receiver's
//!   row, then along x to the receiver (tt-isa `RoutingPaths.md`:
//!   "major axis, then minor, then major again"; X is the major axis
//!   unless `NOC_CMD_BRCST_XY`, which the firmware never sets, and the
//!   first leg going to the rectangle's first column is this model's
//!   reading of that page's diagrams). The packet is late by its latest
//!   receiver's wait. The receivers' acks are not booked.
//! - Ejection into a core (several packets landing at one core at once)
//!   is not modelled: see the `noc` module doc (known bug 6).

use crate::noc::Link;
use cqlab_abi::arch::{GridSize, Noc};
use cqlab_abi::noc::Coord;
use cqlab_abi::soc::{path_links, torus_step, ChipLayout};

/// Which virtual channels a packet travels on (module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    /// Read requests, write data, atomics: from the requesting NIU.
    Request,
    /// Read data, write and atomic acks: back to the requesting NIU.
    Response,
}

/// A packet entering the links of its path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Packet {
    /// The cycle its head flit enters the first link.
    pub head: u64,
    /// Cycles it holds each link.
    pub hold: u64,
}

/// Every router-to-router link of the chip, both NOCs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mesh {
    /// The grid, to number routers (NOC0 row-major, as tiles are) and walk
    /// paths.
    grid: GridSize,
    /// Cycles from one router to the next (`NocTiming::hop_cycles`).
    hop: u64,
    /// By [`Mesh::index`].
    links: Vec<Link>,
    /// [`Mesh::multicast`]'s scratch, by link index: where the link booked
    /// for the tree put the head at its far end (`u64::MAX`: not booked),
    /// and the indices it set, to clear. Always cleared between calls.
    reached: Vec<u64>,
    touched: Vec<usize>,
}

impl Mesh {
    pub fn new(layout: &ChipLayout, hop_cycles: u64) -> Self {
        let g = layout.grid();
        let n = g.x as usize * g.y as usize * 8;
        Mesh {
            grid: g,
            hop: hop_cycles,
            links: vec![Link::default(); n],
            reached: vec![u64::MAX; n],
            touched: Vec::new(),
        }
    }

    /// The link from router `from` to its neighbour `to` (NOC0
    /// coordinates) on `noc`, for `class`: one per router, axis, NOC and
    /// class.
    fn index(&self, noc: Noc, class: Class, from: Coord, to: Coord) -> usize {
        let axis = usize::from(from.x == to.x);
        let router = from.y as usize * self.grid.x as usize + from.x as usize;
        ((router * 2 + axis) * 2 + noc.index() as usize) * 2 + usize::from(class == Class::Response)
    }

    /// Books `p` on each link of the path from `from` to `to` on `noc`
    /// (`soc::route`'s) for `class` in turn; returns the cycles its head
    /// reaches the end later than on free links. `now`: device time
    /// (bookings that ended by then are dropped).
    pub fn pass(&mut self, noc: Noc, class: Class, from: Coord, to: Coord, p: Packet, now: u64) -> u64 {
        // `path_links`' walk, leg by leg (NOC0 along x then y, NOC1 y then
        // x), with the link index stepped along: every packet walks its
        // path here, and the generic walk cost ~85 host instructions a hop.
        let (gx, gy) = (self.grid.x, self.grid.y);
        let forward = noc == Noc::Noc0;
        let low = noc.index() as usize * 2 + usize::from(class == Class::Response);
        let (mut at, mut hops) = (p.head, 0);
        let (mut x, mut y) = (from.x, from.y);
        for along_x in if forward { [true, false] } else { [false, true] } {
            loop {
                let (v, end, n) = if along_x { (x, to.x, gx) } else { (y, to.y, gy) };
                if v == end {
                    break;
                }
                // Named by the router the link leaves, as `index` names it.
                let router = y as usize * gx as usize + x as usize;
                let k = ((router * 2 + usize::from(!along_x)) * 2) * 2 + low;
                at = self.links[k].book_after(now, at, p.hold) + self.hop;
                hops += 1;
                let next = torus_step(v, n, forward);
                if along_x {
                    x = next;
                } else {
                    y = next;
                }
            }
        }
        at - (p.head + hops * self.hop)
    }

    /// Books a multicast from `from` on `noc` to `receivers`, whose
    /// rectangle's first column (in the NOC's direction) is `first_x`,
    /// on its tree (module doc); returns the latest receiver's wait.
    pub fn multicast(
        &mut self,
        noc: Noc,
        from: Coord,
        first_x: u8,
        receivers: impl Iterator<Item = Coord>,
        p: Packet,
        now: u64,
    ) -> u64 {
        // The receivers' paths share their prefixes: each link is booked
        // for the tree once, the first time a path meets it.
        let corner = Coord::new(first_x, from.y);
        let grid = self.grid;
        // The first leg is every receiver's: walked once.
        let (mut at_corner, mut hops_corner) = (p.head, 0);
        for (a, b) in path_links(grid, noc, from, corner) {
            at_corner = self.tree_link(noc, a, b, at_corner, p.hold, now);
            hops_corner += 1;
        }
        let mut late = 0;
        for r in receivers {
            let turn = Coord::new(first_x, r.y);
            let (mut at, mut hops) = (at_corner, hops_corner);
            for (a, b) in path_links(grid, noc, corner, turn).chain(path_links(grid, noc, turn, r)) {
                at = self.tree_link(noc, a, b, at, p.hold, now);
                hops += 1;
            }
            // A link met twice on one path (the first leg wraps past a
            // column the last leg uses) is booked once: never early.
            late = late.max(at.saturating_sub(p.head + hops * self.hop));
        }
        for k in self.touched.drain(..) {
            self.reached[k] = u64::MAX;
        }
        late
    }

    /// The multicast tree's link `a` -> `b`, its head there at `at`: booked
    /// the first time the tree meets it; where the head is at its far end.
    fn tree_link(&mut self, noc: Noc, a: Coord, b: Coord, at: u64, hold: u64, now: u64) -> u64 {
        let k = self.index(noc, Class::Request, a, b);
        if self.reached[k] == u64::MAX {
            let link = &mut self.links[k];
            link.forget_before(now);
            self.reached[k] = link.book(at, hold) + self.hop;
            self.touched.push(k);
        }
        // Met again on this path: the head is not back in time.
        at.max(self.reached[k])
    }

    /// Every link, for the chip's digest.
    pub fn links(&self) -> impl Iterator<Item = &Link> {
        self.links.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::noc::packet_flits;
    use cqlab_abi::soc::Board;

    /// Books `p` on the path `r`, as the chip books a packet on its route.
    fn pass(m: &mut Mesh, r: &cqlab_abi::soc::Route, class: Class, p: Packet, now: u64) -> u64 {
        let (from, to) = (r.tiles[0], *r.tiles.last().expect("a path has its source"));
        m.pass(r.noc, class, from, to, p, now)
    }

    fn mesh(board: Board) -> (ChipLayout, Mesh) {
        let layout = ChipLayout::new(board, board.default_harvesting()).unwrap();
        let m = Mesh::new(&layout, 9);
        (layout, m)
    }

    #[test]
    fn packets_sharing_a_link_queue_and_disjoint_ones_do_not() {
        let (_, mut m) = mesh(Board::WormholeN150);
        let flits = packet_flits(8192, 32);
        let p = Packet { head: 100, hold: flits };
        // Two senders in one row write east (NOC0, +x) to the same far
        // core: the links from (2,2) on are shared.
        let (a, b, dst) = (Coord::new(1, 2), Coord::new(2, 2), Coord::new(6, 2));
        assert_eq!(m.pass(Noc::Noc0, Class::Request, a, dst, p, 0), 0, "the first finds every link free");
        // The first holds (2,2)->(3,2) over [109, 109 + flits); the
        // second's head is there at 100, too short a gap before it, so it
        // follows the first's tail.
        let late = m.pass(Noc::Noc0, Class::Request, b, dst, p, 0);
        assert_eq!(late, 9 + flits);
        // A packet one row down shares no link with them.
        assert_eq!(m.pass(Noc::Noc0, Class::Request, Coord::new(1, 3), Coord::new(6, 3), p, 0), 0);
        // Nor a response on the first packets' links: its own virtual channels.
        let late = m.pass(Noc::Noc0, Class::Response, b, dst, p, 0);
        assert_eq!(late, 0, "a response interleaves with the requests");
        // Nor does the way back on NOC1 (-x): its own links.
        assert_eq!(m.pass(Noc::Noc1, Class::Request, dst, a, p, 0), 0);
    }

    #[test]
    fn the_second_of_two_packets_on_one_path_lands_later_by_its_flits() {
        for board in [Board::WormholeN150, Board::BlackholeP150a] {
            let (layout, mut m) = mesh(board);
            let bpc = board.arch().params().noc.flit_bytes as u64;
            let p = Packet { head: 1000, hold: packet_flits(4096, bpc) };
            let path = layout.route(Noc::Noc0, Coord::new(1, 1), Coord::new(4, 5));
            assert_eq!(pass(&mut m, &path, Class::Request, p, 0), 0);
            assert_eq!(pass(&mut m, &path, Class::Request, p, 0), p.hold, "{board}");
            // Earlier in time but booked after: goes first where it fits.
            assert_eq!(pass(&mut m, &path, Class::Request, Packet { head: 0, ..p }, 0), 0, "{board}");
        }
    }

    #[test]
    fn each_noc_runs_one_way_on_its_own_links() {
        let (layout, mut m) = mesh(Board::WormholeN150);
        let p = Packet { head: 0, hold: 10 };
        let (a, b) = (Coord::new(2, 3), Coord::new(5, 3));
        // NOC0 runs +x: a -> b takes the three links between them.
        let east = layout.route(Noc::Noc0, a, b);
        assert_eq!(east.hops(), 3);
        assert_eq!(pass(&mut m, &east, Class::Request, p, 0), 0);
        // NOC1 runs -x: b -> a takes three links of its own.
        let west = layout.route(Noc::Noc1, b, a);
        assert_eq!(west.hops(), 3);
        assert_eq!(pass(&mut m, &west, Class::Request, p, 0), 0);
        // NOC0 from b to a laps the row the other way round: other links.
        let lap = layout.route(Noc::Noc0, b, a);
        assert_eq!(lap.hops() as u8, layout.grid().x - 3);
        assert_eq!(pass(&mut m, &lap, Class::Request, p, 0), 0);
        // Through (3,3)->(4,3) on NOC0, held over [9, 19): too short a gap
        // before, so it waits until 19.
        let through = layout.route(Noc::Noc0, Coord::new(3, 3), Coord::new(4, 3));
        assert_eq!(pass(&mut m, &through, Class::Request, p, 0), 19);
        // NOC1 routes y first (-y): from (5,3) up column 5, clear of row 3.
        let up = layout.route(Noc::Noc1, b, Coord::new(2, 1));
        assert_eq!(up.tiles[1], Coord::new(5, 2));
        assert_eq!(pass(&mut m, &up, Class::Request, p, 0), 0);
    }

    #[test]
    fn old_bookings_are_forgotten_and_never_delay() {
        let (layout, mut m) = mesh(Board::BlackholeP150a);
        let path = layout.route(Noc::Noc1, Coord::new(7, 9), Coord::new(1, 2));
        pass(&mut m, &path, Class::Request, Packet { head: 0, hold: 100 }, 0);
        assert_eq!(pass(&mut m, &path, Class::Request, Packet { head: 1000, hold: 100 }, 1000), 0);
        assert!(m.links().all(|l| l.busy().iter().all(|&(_, e)| e > 1000)), "only live bookings kept");
    }

    #[test]
    fn a_multicast_books_its_tree_once_and_waits_for_its_latest_receiver() {
        let (layout, mut m) = mesh(Board::WormholeN150);
        let from = Coord::new(1, 1);
        let receivers = [Coord::new(3, 2), Coord::new(4, 2), Coord::new(3, 3), Coord::new(4, 3)];
        let p = Packet { head: 0, hold: 20 };
        // Its branches share their first links without waiting on each other.
        assert_eq!(m.multicast(Noc::Noc0, from, 3, receivers.into_iter(), p, 0), 0);
        // A unicast through the tree's first leg (row 1, held [9, 29)) waits.
        let cross = layout.route(Noc::Noc0, Coord::new(2, 1), Coord::new(3, 1));
        assert_eq!(pass(&mut m, &cross, Class::Request, Packet { head: 9, hold: 5 }, 0), 20);
        // A packet booked first on column 3's (3,2)->(3,3) over [18, 48):
        // the tree's head is due there at 27, waits until 48, and the
        // receivers below are 21 cycles late.
        let (_, mut m) = mesh(Board::WormholeN150);
        let down = layout.route(Noc::Noc0, Coord::new(3, 2), Coord::new(3, 3));
        pass(&mut m, &down, Class::Request, Packet { head: 18, hold: 30 }, 0);
        assert_eq!(m.multicast(Noc::Noc0, from, 3, receivers.into_iter(), p, 0), 21);
    }
}
