//! Taken-branch history, from which a hart's last retired PCs are rebuilt
//! for hang dumps. Recording a PC per instruction would cost the interpreter
//! a store on every step; recording `(from, to)` on taken branches and jumps
//! only is nearly free and exact: between two taken transfers the hart
//! retires consecutive words.

/// Transfers kept; at least this many PCs can always be reconstructed.
pub const HISTORY_LEN: usize = 32;

#[derive(Clone, Debug)]
pub struct BranchHistory {
    from: [u32; HISTORY_LEN],
    to: [u32; HISTORY_LEN],
    /// Transfers ever recorded.
    count: u64,
}

impl Default for BranchHistory {
    fn default() -> Self {
        BranchHistory { from: [0; HISTORY_LEN], to: [0; HISTORY_LEN], count: 0 }
    }
}

impl BranchHistory {
    /// A taken transfer from the instruction at `from` to `to` (`from` =
    /// `u32::MAX` marks a reset to `to`).
    #[inline(always)]
    pub fn record(&mut self, from: u32, to: u32) {
        let i = (self.count as usize) % HISTORY_LEN;
        self.from[i] = from;
        self.to[i] = to;
        self.count += 1;
    }

    /// Up to `n` retired PCs, newest first, given the next PC to execute.
    pub fn last_pcs(&self, next_pc: u32, n: usize) -> Vec<u32> {
        let mut out = Vec::with_capacity(n);
        let kept = self.count.min(HISTORY_LEN as u64);
        // Block k (newest first) ran from to[k] up to (and including) the
        // branch that left it: from[k+1], or next_pc - 4 for the newest.
        let mut end_exclusive = next_pc as u64;
        for k in 0..kept {
            let i = ((self.count - 1 - k) as usize) % HISTORY_LEN;
            let start = self.to[i] as u64;
            let mut pc = end_exclusive;
            while pc >= start + 4 && out.len() < n {
                pc -= 4;
                out.push(pc as u32);
            }
            if out.len() >= n || self.from[i] == u32::MAX {
                break;
            }
            end_exclusive = self.from[i] as u64 + 4;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rebuilds_straight_line_and_loops() {
        let mut h = BranchHistory::default();
        h.record(u32::MAX, 0x100);
        // 0x100, 0x104, 0x108 (branch back to 0x104), 0x104, 0x108 (fall through), 0x10c
        h.record(0x108, 0x104);
        assert_eq!(h.last_pcs(0x110, 10), vec![0x10c, 0x108, 0x104, 0x108, 0x104, 0x100]);
        assert_eq!(h.last_pcs(0x110, 3), vec![0x10c, 0x108, 0x104]);
    }

    #[test]
    fn a_jump_to_itself_repeats_its_pc() {
        let mut h = BranchHistory::default();
        h.record(u32::MAX, 0x200);
        for _ in 0..5 {
            h.record(0x200, 0x200);
        }
        assert_eq!(h.last_pcs(0x200, 4), vec![0x200; 4]);
    }

    #[test]
    fn wrapped_history_stops_at_what_it_kept() {
        let mut h = BranchHistory::default();
        h.record(u32::MAX, 0);
        for i in 0..100u32 {
            h.record(i * 8 + 4, (i + 1) * 8);
        }
        let pcs = h.last_pcs(100 * 8 + 4, 1000);
        assert_eq!(pcs[0], 800);
        assert!(pcs.len() >= HISTORY_LEN);
    }
}
