//! The PCT scheduler option ([`crate::config::Schedule::Pct`]): random core
//! priorities and `depth - 1` priority change points, all drawn from the
//! seed when the chip powers on.
//!
//! PCT (Burckhardt, Kothari, Musuvathi, Nagarakatte, ASPLOS 2010) runs one
//! thread at a time, always the highest-priority enabled one, and lowers the
//! running thread's priority at `d - 1` random steps; a bug of depth `d` is
//! then found with probability >= 1 / (n k^(d-1)) per run. Here a thread is a
//! core, a step is a scheduling slice, and a core that spent its last slice
//! in a pure polling loop (no side effects) counts as blocked: it keeps
//! polling every slice, so it sees the change it waits for, but it does not
//! take the slice from the cores below it.

use crate::rng::Rng;

/// What one slice of the PCT window does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Slice {
    /// Run this core (`Some`) — or none, if no core is enabled — plus every
    /// waiting core; hold every other core for the slice.
    Run(Option<usize>),
    /// The window is over: schedule as [`crate::config::Schedule::Slices`].
    Free,
}

#[derive(Clone, Debug)]
pub struct Pct {
    /// Per core; higher runs first. Initial priorities are `depth..depth + n`.
    priority: Vec<u64>,
    /// Slices (1-based) at which the running core's priority drops, sorted.
    change_points: Vec<u64>,
    next_change: usize,
    steps: u64,
    step: u64,
    depth: u32,
    /// Cores whose last slice was pure polling.
    waiting: Vec<bool>,
}

impl Pct {
    /// Draws priorities (a seeded permutation) and change points.
    pub fn new(depth: u32, steps: u64, cores: usize, rng: &mut Rng) -> Self {
        let mut priority: Vec<u64> = (0..cores as u64).map(|p| p + depth as u64).collect();
        for i in (1..cores).rev() {
            let j = rng.upto(i as u64) as usize;
            priority.swap(i, j);
        }
        let mut change_points: Vec<u64> = (1..depth).map(|_| 1 + rng.upto(steps - 1)).collect();
        change_points.sort_unstable();
        Pct { priority, change_points, next_change: 0, steps, step: 0, depth, waiting: vec![false; cores] }
    }

    /// Priority of each core (tests, tools).
    pub fn priorities(&self) -> &[u64] {
        &self.priority
    }

    pub fn change_points(&self) -> &[u64] {
        &self.change_points
    }

    /// Starts the next slice: which core runs, given which cores can run at
    /// all (out of reset, not halted). Applies change points.
    pub fn begin_slice(&mut self, runnable: impl Fn(usize) -> bool) -> Slice {
        self.step += 1;
        if self.step > self.steps {
            return Slice::Free;
        }
        let chosen =
            (0..self.priority.len()).filter(|&i| runnable(i) && !self.waiting[i]).max_by_key(|&i| self.priority[i]);
        while self.change_points.get(self.next_change) == Some(&self.step) {
            self.next_change += 1;
            if let Some(i) = chosen {
                // The i-th change point lowers the running core below every
                // initial priority (and below earlier lowered ones).
                self.priority[i] = (self.depth as u64).saturating_sub(self.next_change as u64 + 1);
            }
        }
        Slice::Run(chosen)
    }

    /// True if core `i` polls this slice even though it was not chosen.
    pub fn is_waiting(&self, i: usize) -> bool {
        self.waiting[i]
    }

    /// Records whether core `i` ran this slice without side effects.
    pub fn set_waiting(&mut self, i: usize, waiting: bool) {
        self.waiting[i] = waiting;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn priorities_are_a_seeded_permutation_and_change_points_lie_in_the_window() {
        let a = Pct::new(3, 100, 6, &mut Rng::new(5));
        let b = Pct::new(3, 100, 6, &mut Rng::new(5));
        let c = Pct::new(3, 100, 6, &mut Rng::new(6));
        assert_eq!((a.priorities(), a.change_points()), (b.priorities(), b.change_points()));
        assert!(a.priorities() != c.priorities() || a.change_points() != c.change_points());
        let mut p = a.priorities().to_vec();
        p.sort_unstable();
        assert_eq!(p, vec![3, 4, 5, 6, 7, 8]);
        assert_eq!(a.change_points().len(), 2);
        assert!(a.change_points().iter().all(|&s| (1..=100).contains(&s)));
    }

    #[test]
    fn the_highest_enabled_core_runs_and_drops_at_a_change_point() {
        let mut pct = Pct::new(2, 10, 3, &mut Rng::new(1));
        let top = (0..3).max_by_key(|&i| pct.priorities()[i]).unwrap();
        let change = pct.change_points()[0];
        for step in 1..=10 {
            let Slice::Run(Some(i)) = pct.begin_slice(|_| true) else { panic!("a core runs") };
            if step <= change {
                assert_eq!(i, top, "step {step}");
            } else {
                assert_ne!(i, top, "step {step}: the top core was lowered at step {change}");
            }
        }
        assert_eq!(pct.begin_slice(|_| true), Slice::Free);
        // Waiting and non-runnable cores are never chosen.
        let mut pct = Pct::new(1, 10, 2, &mut Rng::new(1));
        pct.set_waiting(0, true);
        assert_eq!(pct.begin_slice(|i| i == 0), Slice::Run(None));
        assert_eq!(pct.begin_slice(|_| true), Slice::Run(Some(1)));
    }
}
