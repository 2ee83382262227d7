//! What the host knows about the workers' program memory, so it can reuse
//! it safely without asking the device (as tt-metal's host tracks its
//! kernel-config ring and launch-message buffer): which kernel image sits
//! in which text slot of each worker, which kernel-config ring bytes hold
//! arguments of programs that may still run, and which launch-ring entries
//! may still be unread.
//!
//! Programs are named by *launch numbers*: their position in the stream of
//! launches of the queue owning the workers. Reusing anything a program used
//! needs that launch to have finished on every worker; the planner returns
//! the latest such launch, and the queue asks the dispatcher to wait for it
//! by distance (`WaitFlags::WAIT_LAUNCH`) when no earlier WAIT in the stream
//! covers it and it is recent enough to still be running (the dispatcher
//! only reuses a launch-ring entry once its previous launch has finished, so
//! anything further back has). Launch-ring entries themselves are the
//! dispatcher's to track.

use crate::error::DriverError;
use crate::geometry::CoreRange;
use crate::program::Program;
use cqlab_abi::arch::Arch;
use cqlab_abi::noc_map::{MAX_GRID_COLS, MAX_GRID_ROWS};
use cqlab_abi::program::{kernel_slot, CONFIG_RING, CONFIG_RING_SIZE, KERNEL_SLOTS, MAX_KERNEL_GROUPS};
use std::collections::VecDeque;

const SLOTS: usize = KERNEL_SLOTS as usize;

/// The most unique args, in words, a core of a range may have over the
/// program's kernels there for every core of the range to be sent each
/// kernel's whole block in one multicast; past it each core is sent its
/// own (a `WRITE_PACKED` with one block a core holding all its kernels'
/// args, as tt-metal sends every program's unique args). A multicast's
/// bytes grow with the range and a packed write's per core do not, so past
/// some number of words a core, the same whatever the range, the blocks
/// cost more.
/// Measured on the calibrated model (`bench dispatch --axis unique_args`,
/// the full grid, docs/performance.md 2026-11-29): on a Wormhole n150 the
/// multicast is cheaper at three kernels of 80 words (240 a core) and at
/// one of 128, dearer at three of 96 (288); on a Blackhole p150a cheaper
/// at three of 96 (288), and at three of 112 the blocks no longer fit the
/// ring.
const fn multicast_unique_max(arch: Arch) -> u32 {
    match arch {
        Arch::Wormhole => 256,
        Arch::Blackhole => 288,
    }
}

/// Whether a blob of `len` bytes is staged by an enqueue whose smallest
/// staged blob is `min` (0: none staged).
pub(super) fn stages(len: u32, min: u32) -> bool {
    min > 0 && len >= min
}

/// A set of workers, one bit each (row-major on the grid), for the largest grid.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct CoreSet([u64; (MAX_GRID_COLS * MAX_GRID_ROWS).div_ceil(64)]);

impl CoreSet {
    /// Workers `lo..lo + n` (row-major indices), one row of a range:
    /// `1 <= n <= MAX_GRID_COLS`.
    fn add_run(&mut self, lo: usize, n: usize) {
        const _: () = assert!(MAX_GRID_COLS <= 64);
        let (word, bit) = (lo / 64, lo % 64);
        let run = u64::MAX >> (64 - n);
        self.0[word] |= run << bit;
        if bit + n > 64 {
            self.0[word + 1] |= run >> (64 - bit);
        }
    }

    /// The workers of `program`'s kernel `k` on a grid `cols` wide.
    fn of_kernel(cols: u8, program: &Program, k: usize) -> Self {
        let mut set = Self::default();
        for range in &program.kernels[k].ranges {
            for r in range.start.1..=range.end.1 {
                let row = r as usize * cols as usize;
                set.add_run(row + range.start.0 as usize, (range.end.0 - range.start.0) as usize + 1);
            }
        }
        set
    }

    fn intersects(&self, other: &Self) -> bool {
        self.0.iter().zip(&other.0).any(|(a, b)| a & b != 0)
    }

    /// Whether every worker of `other` is in this set.
    fn covers(&self, other: &Self) -> bool {
        self.0.iter().zip(&other.0).all(|(a, b)| b & !a == 0)
    }

    fn union(&mut self, other: &Self) {
        self.0.iter_mut().zip(&other.0).for_each(|(a, b)| *a |= b);
    }

    fn remove(&mut self, other: &Self) {
        self.0.iter_mut().zip(&other.0).for_each(|(a, b)| *a &= !b);
    }

    fn is_empty(&self) -> bool {
        self.0.iter().all(|&w| w == 0)
    }
}

/// What one text slot holds on a set of workers: the build id there, if
/// known, and the launch number of the last program that ran from it there.
/// A slot's uses have disjoint worker sets; a worker in none of them holds
/// nothing known and never ran from the slot (launch 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct SlotUse {
    cores: CoreSet,
    id: Option<u64>,
    last: u64,
}

/// One command queue's view: its share of the kernel text slots and of the
/// kernel-config ring (queues never reuse each other's).
#[derive(Clone, Debug)]
pub(crate) struct ProgramState {
    cols: u8,
    /// This queue's slots: `slot_lo..slot_lo + slot_n`.
    slot_lo: usize,
    slot_n: usize,
    /// This queue's part of the kernel-config ring.
    config_base: u32,
    config_size: u32,
    /// Every worker of the grid.
    grid: CoreSet,
    /// Per text slot, what it holds where (a few worker sets, not one entry
    /// per worker, so planning and recording a program cost the same on a
    /// 64-core range as on one core).
    slots: Vec<Vec<SlotUse>>,
    /// Kernel-config ring: absolute write position and live allocations
    /// `(start, end, launch)` in absolute bytes.
    config_wr: u64,
    config_allocs: VecDeque<(u64, u64, u64)>,
    /// `multicast_unique_max` of the chip.
    multicast_unique_max: u32,
}

/// Where one kernel goes and whether its image must be sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SlotChoice {
    pub slot: u32,
    pub upload: bool,
}

/// One kernel group (range) of a planned program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct GroupPlan {
    pub kernel: usize,
    pub range: usize,
    pub unique_addr: u32,
    pub unique_count: u32,
    /// Each core is sent its own unique args alone, at `unique_addr`
    /// (`cqlab_abi::program::UNIQUE_OWN`), not the range's whole block.
    pub unique_own: bool,
    pub common_addr: u32,
    pub common_count: u32,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Plan {
    /// Latest launch that must have finished before this program's writes
    /// (kernel text and args land on memory it used); 0 for none.
    pub wait_for: u64,
    pub slots: Vec<SlotChoice>,
    pub groups: Vec<GroupPlan>,
    config: Option<(u64, u64)>,
    /// Per kernel, its workers.
    cores: Vec<CoreSet>,
}

impl ProgramState {
    /// Queue `cq` of `cqs` on a chip of `arch`, nothing known: every slot
    /// may hold anything, nothing is in use.
    pub fn new(arch: Arch, cols: u8, rows: u8, cq: u8, cqs: u8) -> Self {
        let mut grid = CoreSet::default();
        (0..rows as usize).for_each(|r| grid.add_run(r * cols as usize, cols as usize));
        let slot_n = SLOTS / cqs.max(1) as usize;
        let config_size = (CONFIG_RING_SIZE / cqs.max(1) as u32) & !15;
        Self {
            cols,
            slot_lo: cq as usize * slot_n,
            slot_n,
            config_base: CONFIG_RING + cq as u32 * config_size,
            config_size,
            grid,
            slots: vec![Vec::new(); SLOTS],
            config_wr: 0,
            config_allocs: VecDeque::new(),
            multicast_unique_max: multicast_unique_max(arch),
        }
    }

    /// Whether every worker of `cores` holds build `id` in slot `s`.
    fn holds(&self, s: usize, cores: &CoreSet, id: u64) -> bool {
        let mut have = CoreSet::default();
        self.slots[s].iter().filter(|u| u.id == Some(id)).for_each(|u| have.union(&u.cores));
        have.covers(cores)
    }

    /// Whether every worker of `program`'s kernel `k` holds build `id` in
    /// text slot `slot` (a capture relying on it records this).
    pub fn holds_kernel(&self, slot: u32, program: &Program, k: usize) -> bool {
        let cores = CoreSet::of_kernel(self.cols, program, k);
        self.holds(slot as usize, &cores, program.kernels[k].image.build_id)
    }

    /// Plans sending `program`'s kernel `k` into text slot `slot` outside
    /// any program (a replay whose trace relied on it being there): the
    /// launch that must have finished first, 0 for none. `commit_upload`
    /// records it.
    pub fn upload_wait(&self, slot: u32, program: &Program, k: usize) -> u64 {
        self.busy(slot as usize, &CoreSet::of_kernel(self.cols, program, k))
    }

    /// Records `program`'s kernel `k` as resident in `slot`, its workers'
    /// last use of the slot unchanged (no launch ran from it yet).
    pub fn commit_upload(&mut self, slot: u32, program: &Program, k: usize) {
        let cores = CoreSet::of_kernel(self.cols, program, k);
        let uses = &mut self.slots[slot as usize];
        let last = uses.iter().filter(|u| u.cores.intersects(&cores)).map(|u| u.last).max().unwrap_or(0);
        uses.iter_mut().for_each(|u| u.cores.remove(&cores));
        uses.retain(|u| !u.cores.is_empty());
        uses.push(SlotUse { cores, id: Some(program.kernels[k].image.build_id), last });
    }

    /// The last launch that ran from slot `s` on a worker of `cores`.
    fn busy(&self, s: usize, cores: &CoreSet) -> u64 {
        self.slots[s].iter().filter(|u| u.cores.intersects(cores)).map(|u| u.last).max().unwrap_or(0)
    }

    /// Plans `program` (already checked against the grid) without changing
    /// anything; `commit` records it once its commands are submitted.
    /// `stage_min`: the smallest unique-arg block the enqueue would stage
    /// (0: none staged, as in a trace capture).
    pub fn plan(&self, program: &Program, stage_min: u32) -> Result<Plan, DriverError> {
        let mut wait_for = 0;
        let mut slots = Vec::with_capacity(program.kernels.len());
        let mut kernel_cores = vec![CoreSet::default(); program.kernels.len()];
        let mine = self.slot_lo..self.slot_lo + self.slot_n;
        for (k, spec) in program.kernels.iter().enumerate() {
            let id = spec.image.build_id;
            let cores = CoreSet::of_kernel(self.cols, program, k);
            kernel_cores[k] = cores;
            let choice = match mine.clone().find(|&s| self.holds(s, &cores, id)) {
                Some(s) => SlotChoice { slot: s as u32, upload: false },
                None => {
                    // The slot whose last use finished earliest on these cores.
                    let (busy, s) =
                        mine.clone().map(|s| (self.busy(s, &cores), s)).min().expect("every queue has a slot");
                    wait_for = wait_for.max(busy);
                    SlotChoice { slot: s as u32, upload: true }
                }
            };
            slots.push(choice);
        }
        // One arg plan per kernel and range (a launch group holds the plans
        // of every core's kernel on one rectangle). Each range's unique args
        // are one block of every core's, multicast, unless a rectangle's
        // cores have more words over its kernels than that is worth and
        // they are not staged (a staged block is written once and named
        // after; each core's own would be written into the issue queue at
        // every enqueue), or the program's do not fit the ring so: then
        // each core is sent its own. Per rectangle: its cores' words over
        // the kernels on it, and whether every block of them is staged.
        let mut ranges: Vec<(CoreRange, u32, bool)> = Vec::new();
        for k in &program.kernels {
            for (r, &range) in k.ranges.iter().enumerate() {
                let words = k.unique_count();
                let staged = words == 0 || stages(k.unique_block(r).len() as u32, stage_min);
                match ranges.iter_mut().find(|(o, _, _)| *o == range) {
                    Some((_, w, s)) => (*w, *s) = (*w + words, *s && staged),
                    None => ranges.push((range, words, staged)),
                }
            }
        }
        let multicast = ranges.iter().all(|&(_, words, staged)| words <= self.multicast_unique_max || staged);
        let (mut groups, mut need) = Self::lay_out_args(program, !multicast);
        if need > self.config_size && multicast {
            (groups, need) = Self::lay_out_args(program, true);
        }
        if need > self.config_size {
            return Err(DriverError::OutOfRange {
                what: "runtime args",
                detail: format!(
                    "{need} bytes exceed this queue's {}-byte part of the kernel-config ring",
                    self.config_size
                ),
            });
        }
        let mut config = None;
        if need > 0 {
            let size = self.config_size as u64;
            let mut start = self.config_wr;
            if start % size + need as u64 > size {
                start += size - start % size;
            }
            let end = start + need as u64;
            // Bytes of older allocations this one lands on (one lap back).
            // Allocations are in ring order, so those starting before this
            // one's end a lap back are a prefix, the last of them the latest.
            let lap_end = end.saturating_sub(size);
            let landed = self.config_allocs.iter().take_while(|&&(s, _, _)| s < lap_end).last();
            if let Some(&(_, e, mark)) = landed {
                if e + size > start {
                    wait_for = wait_for.max(mark);
                }
            }
            let base = self.config_base + (start % size) as u32;
            for g in &mut groups {
                g.unique_addr += base;
                g.common_addr += base;
            }
            config = Some((start, end));
        }
        for g in &mut groups {
            if g.unique_count == 0 {
                g.unique_addr = 0;
            }
            if g.common_count == 0 {
                g.common_addr = 0;
            }
        }
        Ok(Plan { wait_for, slots, groups, config, cores: kernel_cores })
    }

    /// Each kernel group's args at offsets from the start of the program's
    /// allocation, and the bytes it needs: per group its unique args (the
    /// range's block of every core's, or with `own` one core's), then its
    /// common args, each 16-byte aligned.
    fn lay_out_args(program: &Program, own: bool) -> (Vec<GroupPlan>, u32) {
        let mut groups = Vec::with_capacity(MAX_KERNEL_GROUPS);
        let mut need = 0u32;
        for (k, spec) in program.kernels.iter().enumerate() {
            let unique = spec.unique_count();
            let common = spec.common_count();
            for (r, range) in spec.ranges.iter().enumerate() {
                let cores = if own { 1 } else { range.count() };
                let ub = (cores * unique * 4).next_multiple_of(16);
                let cb = (common * 4).next_multiple_of(16);
                groups.push(GroupPlan {
                    kernel: k,
                    range: r,
                    unique_addr: need,
                    unique_count: unique,
                    unique_own: own && unique > 0,
                    common_addr: need + ub,
                    common_count: common,
                });
                need += ub + cb;
            }
        }
        (groups, need)
    }

    /// Records a submitted program, launch number `mark`.
    pub fn commit(&mut self, program: &Program, plan: &Plan, mark: u64) {
        for (k, choice) in plan.slots.iter().enumerate() {
            let cores = plan.cores[k];
            let uses = &mut self.slots[choice.slot as usize];
            uses.iter_mut().for_each(|u| u.cores.remove(&cores));
            uses.retain(|u| !u.cores.is_empty());
            uses.push(SlotUse { cores, id: Some(program.kernels[k].image.build_id), last: mark });
        }
        if let Some((start, end)) = plan.config {
            let size = self.config_size as u64;
            // Allocations are in ring order: those a lap behind are a prefix.
            while self.config_allocs.front().is_some_and(|&(_, e, _)| e + size <= end) {
                self.config_allocs.pop_front();
            }
            self.config_allocs.push_back((start, end, mark));
            self.config_wr = end;
        }
    }

    /// Everything the state holds about programs, with launch numbers moved
    /// from `from` to `to` (a replay rebases its capture onto the queue's).
    pub fn rebased(&self, from: u64, to: u64) -> Self {
        // 0 stays "never"; numbers before `from` cannot occur.
        let m = |x: u64| if x == 0 { 0 } else { x + to - from };
        let mut s = self.clone();
        s.slots.iter_mut().flatten().for_each(|u| u.last = m(u.last));
        s.config_allocs.iter_mut().for_each(|a| a.2 = m(a.2));
        s
    }

    /// The state a trace captures from: the slot contents known now, and
    /// every slot and config byte in use by launch `before`. A replay may
    /// find other contents, so the capture lists the residency it relied on
    /// (checked again at each replay, see `CommandQueue::execute_trace`).
    pub fn all_in_use(&self, before: u64) -> Self {
        let mut slots = self.slots.clone();
        for uses in &mut slots {
            uses.retain(|u| u.id.is_some());
            let mut unknown = self.grid;
            for u in uses.iter_mut() {
                u.last = before;
                unknown.remove(&u.cores);
            }
            if !unknown.is_empty() {
                uses.push(SlotUse { cores: unknown, id: None, last: before });
            }
        }
        let mut s = Self { slots, ..self.clone() };
        s.config_allocs.clear();
        let size = self.config_size as u64;
        s.config_wr = size;
        s.config_allocs.push_back((0, size, before));
        s
    }

    /// Workers of `program`'s kernel `k`'s range `r`, row-major, as (col, row).
    pub fn range_cores(program: &Program, k: usize, r: usize) -> Vec<(u8, u8)> {
        program.kernels[k].ranges[r].cores().collect()
    }
}

/// L1 address of slot `choice`.
pub(crate) fn slot_addr(choice: SlotChoice) -> u32 {
    kernel_slot(choice.slot)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geometry::CoreRange;
    use crate::kernel::KernelImage;
    use cqlab_abi::arch::tensix::Processor;
    use std::sync::Arc;

    fn program(name: &str, range: CoreRange, common: usize) -> Program {
        let mut p = Program::new();
        let k = p.add_kernel(Arc::new(KernelImage::test_image(name)), &[range]).unwrap();
        p.set_common_args(k, &vec![1; common]).unwrap();
        p
    }

    #[test]
    fn resident_kernels_are_not_resent_and_slots_are_reused_only_after_their_programs() {
        let mut st = ProgramState::new(Arch::Wormhole, 8, 8, 0, 4);
        let a = program("a", CoreRange::new((0, 0), (3, 3)), 0);
        let plan = st.plan(&a, 0).unwrap();
        assert_eq!(plan.slots, vec![SlotChoice { slot: 0, upload: true }]);
        assert_eq!(plan.wait_for, 0);
        st.commit(&a, &plan, 1);
        let again = st.plan(&a, 0).unwrap();
        assert_eq!(again.slots, vec![SlotChoice { slot: 0, upload: false }]);
        // Queue 0 of 4 has four slots. Three other kernels on overlapping
        // cores take slots 1..3; a fourth must wait for the program that
        // last used slot 0.
        let mut mark = 1;
        for (i, name) in ["b", "c", "d"].iter().enumerate() {
            let p = program(name, CoreRange::new((2, 2), (5, 5)), 0);
            let plan = st.plan(&p, 0).unwrap();
            assert_eq!(plan.slots[0], SlotChoice { slot: i as u32 + 1, upload: true });
            assert_eq!(plan.wait_for, 0);
            mark += 1;
            st.commit(&p, &plan, mark);
        }
        let e = program("e", CoreRange::new((3, 3), (3, 3)), 0);
        let plan = st.plan(&e, 0).unwrap();
        assert_eq!(plan.slots[0], SlotChoice { slot: 0, upload: true });
        assert_eq!(plan.wait_for, 1);
    }

    #[test]
    fn a_slot_is_resident_only_where_every_core_holds_it_and_busy_only_where_used() {
        let mut st = ProgramState::new(Arch::Wormhole, 8, 8, 0, 8);
        // Queue 0 of 8 has slots 0 and 1.
        let a = program("a", CoreRange::new((0, 0), (7, 7)), 0);
        let plan = st.plan(&a, 0).unwrap();
        st.commit(&a, &plan, 1);
        let b = program("b", CoreRange::new((6, 6), (7, 7)), 0);
        let plan = st.plan(&b, 0).unwrap();
        assert_eq!(plan.slots[0], SlotChoice { slot: 1, upload: true });
        st.commit(&b, &plan, 2);
        // c on b's cores: slot 0 last ran a there (1), slot 1 ran b (2).
        let c = program("c", CoreRange::new((6, 6), (7, 7)), 0);
        let plan = st.plan(&c, 0).unwrap();
        assert_eq!((plan.slots[0], plan.wait_for), (SlotChoice { slot: 0, upload: true }, 1));
        st.commit(&c, &plan, 3);
        assert!(st.plan(&a, 0).unwrap().slots[0].upload, "a lost cores (6,6)..(7,7) of slot 0");
        // a on the cores c did not take is still resident in slot 0.
        let mut a_rest = Program::new();
        a_rest.add_kernel(a.kernels[0].image.clone(), &[CoreRange::new((0, 0), (5, 7))]).unwrap();
        assert_eq!(st.plan(&a_rest, 0).unwrap().slots[0], SlotChoice { slot: 0, upload: false });
        // d on rows 2..3: slot 0 last ran a there (1), slot 1 never ran there.
        let d = program("d", CoreRange::new((0, 2), (7, 3)), 0);
        let plan = st.plan(&d, 0).unwrap();
        assert_eq!((plan.slots[0], plan.wait_for), (SlotChoice { slot: 1, upload: true }, 0));
        // e on (7,7): slot 0 last ran c there (3), slot 1 ran b (2).
        let e = program("e", CoreRange::single(7, 7), 0);
        let plan = st.plan(&e, 0).unwrap();
        assert_eq!((plan.slots[0], plan.wait_for), (SlotChoice { slot: 1, upload: true }, 2));
    }

    #[test]
    fn a_capture_keeps_what_is_resident_and_waits_for_the_launch_before_it_to_reuse_anything() {
        let mut st = ProgramState::new(Arch::Wormhole, 8, 8, 0, 8);
        let a = program("a", CoreRange::new((0, 0), (3, 3)), 0);
        let plan = st.plan(&a, 0).unwrap();
        st.commit(&a, &plan, 1);
        let cap = st.all_in_use(5);
        // Resident where it was: not sent, nothing to wait for.
        let plan = cap.plan(&a, 0).unwrap();
        assert_eq!((plan.slots[0], plan.wait_for), (SlotChoice { slot: 0, upload: false }, 0));
        assert!(cap.holds_kernel(0, &a, 0));
        // Anything sent waits for the launch before the trace.
        let b = program("b", CoreRange::new((2, 2), (5, 5)), 0);
        let plan = cap.plan(&b, 0).unwrap();
        assert!(plan.slots[0].upload);
        assert_eq!(plan.wait_for, 5);
        let wider = program("a", CoreRange::new((0, 0), (4, 4)), 0);
        assert!(!cap.holds_kernel(0, &wider, 0), "a is not resident on (4, 4)");
        assert_eq!(cap.plan(&wider, 0).unwrap().wait_for, 5);
        // Args wait for it too.
        let c = program("a", CoreRange::new((0, 0), (3, 3)), 4);
        assert_eq!(cap.plan(&c, 0).unwrap().wait_for, 5);
    }

    /// Unique args go as each range's block of every core's while no range
    /// has more than `multicast_unique_max` words a core over its kernels
    /// (or their blocks are staged) and the program's args fit the ring so,
    /// else each core gets its own: one core's room a group, common args
    /// still once a group.
    #[test]
    fn unique_args_take_one_cores_room_when_many_a_core_or_every_cores_would_not_fit() {
        let range = CoreRange::new((0, 0), (7, 7));
        // Kernel a with common args only; b and c with `words[i]` unique
        // args a core (b with common args too).
        let with_unique = |words: [usize; 2]| {
            let mut p = program("a", range, 3);
            for (i, (name, processor)) in [("b", Processor::Ncrisc), ("c", Processor::Trisc0)].into_iter().enumerate() {
                let k = p.add_kernel_on(Arc::new(KernelImage::test_image(name)), &[range], processor).unwrap();
                if i == 0 {
                    p.set_common_args(k, &[5]).unwrap();
                }
                for core in range.cores() {
                    p.set_unique_args(k, core, &vec![7; words[i]]).unwrap();
                }
            }
            p
        };
        let own = |plan: &Plan| -> Vec<bool> { plan.groups.iter().map(|g| g.unique_own).collect() };
        assert_eq!(multicast_unique_max(Arch::Wormhole), 256);
        let st = ProgramState::new(Arch::Wormhole, 8, 8, 0, 1);
        // 64 cores x 256 words over two kernels: one block a kernel.
        let plan = st.plan(&with_unique([128, 128]), 0).unwrap();
        assert_eq!(own(&plan), [false; 3]);
        assert_eq!(plan.groups[1].common_addr - plan.groups[1].unique_addr, 64 * 128 * 4);
        // Four words more: each core its own, though every core's would fit.
        let plan = st.plan(&with_unique([128, 132]), 0).unwrap();
        assert_eq!(own(&plan), [false, true, true], "a group without unique args sends none");
        assert_eq!(plan.groups[1].common_addr - plan.groups[1].unique_addr, 128 * 4);
        // Unless every block is staged.
        assert_eq!(own(&st.plan(&with_unique([128, 132]), 4096).unwrap()), [false; 3]);
        assert_eq!(own(&st.plan(&with_unique([128, 132]), 64 * 130 * 4).unwrap()), [false, true, true]);
        // A Blackhole multicasts that many.
        let bh = ProgramState::new(Arch::Blackhole, 8, 8, 0, 1);
        assert_eq!(own(&bh.plan(&with_unique([128, 132]), 0).unwrap()), [false; 3]);
        // Kernels on other rectangles do not add up.
        let mut p = Program::new();
        for (name, r) in [("d", CoreRange::new((0, 0), (7, 3))), ("e", CoreRange::new((0, 4), (7, 7)))] {
            let k = p.add_kernel(Arc::new(KernelImage::test_image(name)), &[r]).unwrap();
            r.cores().for_each(|core| p.set_unique_args(k, core, &[9; 200]).unwrap());
        }
        assert_eq!(own(&st.plan(&p, 0).unwrap()), [false; 2]);
        // Two kernels of 64 words on a queue of four's 32 KiB of the ring:
        // 32 KiB of blocks and the common args do not fit.
        let st = ProgramState::new(Arch::Wormhole, 8, 8, 0, 4);
        let plan = st.plan(&with_unique([64, 64]), 0).unwrap();
        assert_eq!(own(&plan), [false, true, true]);
        let (b, c) = (plan.groups[1], plan.groups[2]);
        assert_eq!((b.common_addr - b.unique_addr, c.unique_addr - b.unique_addr), (256, 256 + 16));
        assert_eq!(plan.groups[0].common_addr, CONFIG_RING);
    }

    #[test]
    fn the_config_ring_waits_for_what_it_overwrites() {
        let mut st = ProgramState::new(Arch::Wormhole, 8, 8, 0, 4);
        let p = program("a", CoreRange::new((0, 0), (7, 7)), 256);
        let per = 1024u64;
        let fit = (CONFIG_RING_SIZE / 4) as u64 / per;
        for i in 0..fit + 2 {
            let plan = st.plan(&p, 0).unwrap();
            // Launch numbers count from 1: program i is launch i + 1.
            let config_wait = if i >= fit { i + 1 - fit } else { 0 };
            assert_eq!(plan.wait_for, config_wait, "program {i}");
            assert_eq!(plan.groups[0].common_addr, CONFIG_RING + ((i % fit) * per) as u32);
            st.commit(&p, &plan, i + 1);
        }
    }
}
