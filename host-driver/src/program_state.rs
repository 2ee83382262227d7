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

use crate::program::Program;
use cqlab_abi::program::{kernel_slot, CONFIG_RING, CONFIG_RING_SIZE, KERNEL_SLOTS, MAX_KERNEL_GROUPS};
use std::collections::VecDeque;

const SLOTS: usize = KERNEL_SLOTS as usize;

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
    /// Per worker (row-major): the build id in each text slot, if known.
    resident: Vec<[Option<u64>; SLOTS]>,
    /// Per worker and slot: launch number of the last program that ran from it.
    last_use: Vec<[u64; SLOTS]>,
    /// Kernel-config ring: absolute write position and live allocations
    /// `(start, end, launch)` in absolute bytes.
    config_wr: u64,
    config_allocs: VecDeque<(u64, u64, u64)>,
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
}

impl ProgramState {
    /// Queue `cq` of `cqs`, nothing known: every slot may hold anything,
    /// nothing is in use.
    pub fn new(cols: u8, rows: u8, cq: u8, cqs: u8) -> Self {
        // Each worker's residency, row-major.
        let n = cols as usize * rows as usize;
        let slot_n = SLOTS / cqs.max(1) as usize;
        let config_size = (CONFIG_RING_SIZE / cqs.max(1) as u32) & !15;
        Self {
            cols,
            slot_lo: cq as usize * slot_n,
            slot_n,
            config_base: CONFIG_RING + cq as u32 * config_size,
            config_size,
            resident: vec![[None; SLOTS]; n],
            last_use: vec![[0; SLOTS]; n],
            config_wr: 0,
            config_allocs: VecDeque::new(),
        }
    }

    fn index(&self, (c, r): (u8, u8)) -> usize {
        r as usize * self.cols as usize + c as usize
    }

    /// Workers of `program`'s kernel `k`, as indices.
    fn cores(&self, program: &Program, k: usize) -> Vec<usize> {
        let mut v = Vec::with_capacity(program.kernels[k].ranges.iter().map(|r| r.count() as usize).sum());
        for range in &program.kernels[k].ranges {
            for r in range.start.1..=range.end.1 {
                for c in range.start.0..=range.end.0 {
                    v.push(self.index((c, r)));
                }
            }
        }
        v
    }

    /// Plans `program` (already checked against the grid) without changing
    /// anything; `commit` records it once its commands are submitted.
    pub fn plan(&self, program: &Program) -> Result<Plan, String> {
        let mut wait_for = 0;
        let mut slots = Vec::new();
        for (k, spec) in program.kernels.iter().enumerate() {
            let cores = self.cores(program, k);
            let id = spec.image.build_id;
            let mine = self.slot_lo..self.slot_lo + self.slot_n;
            let cached = mine.clone().find(|&s| cores.iter().all(|&c| self.resident[c][s] == Some(id)));
            let choice = match cached {
                Some(s) => SlotChoice { slot: s as u32, upload: false },
                None => {
                    // The slot whose last use finished earliest on these cores.
                    let busy = |s: usize| cores.iter().map(|&c| self.last_use[c][s]).max().unwrap_or(0);
                    let s = mine.min_by_key(|&s| (busy(s), s)).expect("every queue has a slot");
                    wait_for = wait_for.max(busy(s));
                    SlotChoice { slot: s as u32, upload: true }
                }
            };
            slots.push(choice);
        }
        let mut groups = Vec::new();
        let mut need = 0u32;
        for (k, spec) in program.kernels.iter().enumerate() {
            let unique = spec.unique_count();
            let common = spec.common.len() as u32;
            for (r, range) in spec.ranges.iter().enumerate() {
                // Every core's block, row-major: one multicast per range.
                let ub = (range.count() * unique * 4).next_multiple_of(16);
                let cb = (common * 4).next_multiple_of(16);
                groups.push(GroupPlan {
                    kernel: k,
                    range: r,
                    unique_addr: need,
                    unique_count: unique,
                    common_addr: need + ub,
                    common_count: common,
                });
                need += ub + cb;
            }
        }
        debug_assert!(groups.len() <= MAX_KERNEL_GROUPS);
        if need > self.config_size {
            return Err(format!(
                "{need} bytes of runtime args exceed this queue's {}-byte part of the kernel-config ring",
                self.config_size
            ));
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
            for &(s, e, mark) in &self.config_allocs {
                if s < end.saturating_sub(size) && e + size > start {
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
        Ok(Plan { wait_for, slots, groups, config })
    }

    /// Records a submitted program, launch number `mark`.
    pub fn commit(&mut self, program: &Program, plan: &Plan, mark: u64) {
        for (k, choice) in plan.slots.iter().enumerate() {
            let id = program.kernels[k].image.build_id;
            for c in self.cores(program, k) {
                self.resident[c][choice.slot as usize] = Some(id);
                self.last_use[c][choice.slot as usize] = mark;
            }
        }
        if let Some((start, end)) = plan.config {
            let size = self.config_size as u64;
            self.config_allocs.retain(|&(_, e, _)| e + size > end);
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
        s.last_use.iter_mut().flatten().for_each(|x| *x = m(*x));
        s.config_allocs.iter_mut().for_each(|a| a.2 = m(a.2));
        s
    }

    /// Unknown slot contents, and every slot and config byte in use by
    /// launch `before`: the state a trace captures from.
    pub fn all_in_use(&self, before: u64) -> Self {
        let mut s = Self { resident: vec![[None; SLOTS]; self.resident.len()], ..self.clone() };
        s.last_use.iter_mut().flatten().for_each(|x| *x = before);
        s.config_allocs.clear();
        let size = self.config_size as u64;
        s.config_wr = size;
        s.config_allocs.push_back((0, size, before));
        s
    }

    /// Workers of `program`'s kernel `k`'s range `r`, row-major, as (col, row).
    pub fn range_cores(program: &Program, k: usize, r: usize) -> Vec<(u8, u8)> {
        let range = program.kernels[k].ranges[r];
        let mut v = Vec::new();
        for row in range.start.1..=range.end.1 {
            for col in range.start.0..=range.end.0 {
                v.push((col, row));
            }
        }
        v
    }
}

/// L1 address of slot `choice`.
pub(crate) fn slot_addr(choice: SlotChoice) -> u32 {
    kernel_slot(choice.slot)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command_queue::CoreRange;
    use crate::kernel::KernelImage;
    use std::sync::Arc;

    fn program(name: &str, range: CoreRange, common: usize) -> Program {
        let mut p = Program::new();
        let k = p.add_kernel(Arc::new(KernelImage::test_image(name)), &[range]).unwrap();
        p.set_common_args(k, &vec![1; common]).unwrap();
        p
    }

    #[test]
    fn resident_kernels_are_not_resent_and_slots_are_reused_only_after_their_programs() {
        let mut st = ProgramState::new(8, 8, 0, 4);
        let a = program("a", CoreRange::new((0, 0), (3, 3)), 0);
        let plan = st.plan(&a).unwrap();
        assert_eq!(plan.slots, vec![SlotChoice { slot: 0, upload: true }]);
        assert_eq!(plan.wait_for, 0);
        st.commit(&a, &plan, 1);
        let again = st.plan(&a).unwrap();
        assert_eq!(again.slots, vec![SlotChoice { slot: 0, upload: false }]);
        // Queue 0 of 4 has four slots. Three other kernels on overlapping
        // cores take slots 1..3; a fourth must wait for the program that
        // last used slot 0.
        let mut mark = 1;
        for (i, name) in ["b", "c", "d"].iter().enumerate() {
            let p = program(name, CoreRange::new((2, 2), (5, 5)), 0);
            let plan = st.plan(&p).unwrap();
            assert_eq!(plan.slots[0], SlotChoice { slot: i as u32 + 1, upload: true });
            assert_eq!(plan.wait_for, 0);
            mark += 1;
            st.commit(&p, &plan, mark);
        }
        let e = program("e", CoreRange::new((3, 3), (3, 3)), 0);
        let plan = st.plan(&e).unwrap();
        assert_eq!(plan.slots[0], SlotChoice { slot: 0, upload: true });
        assert_eq!(plan.wait_for, 1);
    }

    #[test]
    fn the_config_ring_waits_for_what_it_overwrites() {
        let mut st = ProgramState::new(8, 8, 0, 4);
        let p = program("a", CoreRange::new((0, 0), (7, 7)), 256);
        let per = 1024u64;
        let fit = (CONFIG_RING_SIZE / 4) as u64 / per;
        for i in 0..fit + 2 {
            let plan = st.plan(&p).unwrap();
            // Launch numbers count from 1: program i is launch i + 1.
            let config_wait = if i >= fit { i + 1 - fit } else { 0 };
            assert_eq!(plan.wait_for, config_wait, "program {i}");
            assert_eq!(plan.groups[0].common_addr, CONFIG_RING + ((i % fit) * per) as u32);
            st.commit(&p, &plan, i + 1);
        }
    }
}
