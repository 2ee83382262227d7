//! Loop orders (dataflow strategies) and the tile access stream each one issues.
//!
//! `i` walks tiles along M, `j` along N, `k` along K. A tile whose index does not depend on
//! the innermost loop is the *stationary* operand of that loop: the compute core keeps it
//! in its own L1 and requests it once per middle-loop iteration, not once per step. That is
//! what makes a schedule "stationary", and it is what the caches below the core see.
//!
//! | strategy | loops | per middle iteration | per inner step |
//! |---|---|---|---|
//! | weight-stationary (WS) | k -> i -> j | read `A[i,k]` | read `B[k,j]`, accumulate `C[i,j]` |
//! | input-stationary (IS) | k -> j -> i | read `B[k,j]` | read `A[i,k]`, accumulate `C[i,j]` |
//! | output-stationary (OS) | i -> j -> k | — | read `A[i,k]`, read `B[k,j]`; after the k loop write `C[i,j]` |
//!
//! With k outermost (WS, IS) a C tile is a partial sum between k steps: the first k step
//! writes it whole ([`AccessKind::Write`], nothing to fetch), later steps read-modify-write
//! it ([`AccessKind::Update`]), which fetches it back if it left the caches. OS keeps the
//! accumulator in the core and writes each C tile once.
//!
//! WS on `(M, N, K)` issues exactly the stream of IS on the transposed problem `(N, M, K)`
//! with A and B exchanged; the property tests rely on that symmetry.

use crate::error::ScheduleError;
use crate::problem::{Tensor, TileGrid};
use serde::Serialize;
use std::str::FromStr;

/// A GEMM tile loop order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Strategy {
    /// Loops k -> i -> j: the B row panel `B[k, :]` is reused across all of A's rows.
    WeightStationary,
    /// Loops k -> j -> i: the A column panel `A[:, k]` is reused across all of B's columns.
    InputStationary,
    /// Loops i -> j -> k: each C tile is accumulated to completion in the core.
    OutputStationary,
}

impl Strategy {
    /// All strategies in report order.
    pub const ALL: [Strategy; 3] = [Strategy::WeightStationary, Strategy::InputStationary, Strategy::OutputStationary];

    /// "ws", "is" or "os".
    pub fn short(self) -> &'static str {
        match self {
            Strategy::WeightStationary => "ws",
            Strategy::InputStationary => "is",
            Strategy::OutputStationary => "os",
        }
    }

    /// The full name.
    pub fn name(self) -> &'static str {
        match self {
            Strategy::WeightStationary => "weight-stationary",
            Strategy::InputStationary => "input-stationary",
            Strategy::OutputStationary => "output-stationary",
        }
    }

    /// The loop order, outermost first.
    pub fn loop_order(self) -> &'static str {
        match self {
            Strategy::WeightStationary => "k->i->j",
            Strategy::InputStationary => "k->j->i",
            Strategy::OutputStationary => "i->j->k",
        }
    }

    /// The strategy whose stream on the transposed problem equals this one's (with A and B swapped).
    pub fn transposed(self) -> Strategy {
        match self {
            Strategy::WeightStationary => Strategy::InputStationary,
            Strategy::InputStationary => Strategy::WeightStationary,
            Strategy::OutputStationary => Strategy::OutputStationary,
        }
    }
}

impl FromStr for Strategy {
    type Err = ScheduleError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "ws" | "weight-stationary" => Ok(Strategy::WeightStationary),
            "is" | "input-stationary" => Ok(Strategy::InputStationary),
            "os" | "output-stationary" => Ok(Strategy::OutputStationary),
            _ => Err(ScheduleError::BadStrategy { input: s.to_string() }),
        }
    }
}

impl std::fmt::Display for Strategy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.short())
    }
}

/// What the compute core does with a tile.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum AccessKind {
    /// Read an input tile.
    Read,
    /// Read-modify-write a partial-sum tile (fetched if absent, then dirty).
    Update,
    /// Write a whole tile without reading it (first partial sum, or a finished OS tile).
    Write,
}

/// One tile request from the compute core.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Access {
    /// Which operand.
    pub tensor: Tensor,
    /// Tile row within that tensor.
    pub row: u32,
    /// Tile column within that tensor.
    pub col: u32,
    /// Read, update or write.
    pub kind: AccessKind,
}

/// Issue the tile access stream of `strategy` over `grid`, in order, to `sink`.
///
/// This is the order a worker kernel would walk; a caller that wants to run the same
/// schedule on a device can drive its loop from here.
pub fn for_each_access(strategy: Strategy, grid: &TileGrid, mut sink: impl FnMut(Access)) {
    let (mt, nt, kt) = grid.tiles();
    let read = |tensor, row, col| Access { tensor, row, col, kind: AccessKind::Read };
    let acc = |i, j, k| Access { tensor: Tensor::C, row: i, col: j, kind: partial_sum_kind(k) };
    match strategy {
        Strategy::WeightStationary => {
            for k in 0..kt {
                for i in 0..mt {
                    sink(read(Tensor::A, i, k));
                    for j in 0..nt {
                        sink(read(Tensor::B, k, j));
                        sink(acc(i, j, k));
                    }
                }
            }
        }
        Strategy::InputStationary => {
            for k in 0..kt {
                for j in 0..nt {
                    sink(read(Tensor::B, k, j));
                    for i in 0..mt {
                        sink(read(Tensor::A, i, k));
                        sink(acc(i, j, k));
                    }
                }
            }
        }
        Strategy::OutputStationary => {
            for i in 0..mt {
                for j in 0..nt {
                    for k in 0..kt {
                        sink(read(Tensor::A, i, k));
                        sink(read(Tensor::B, k, j));
                    }
                    sink(Access { tensor: Tensor::C, row: i, col: j, kind: AccessKind::Write });
                }
            }
        }
    }
}

#[inline]
fn partial_sum_kind(k: u32) -> AccessKind {
    if k == 0 {
        AccessKind::Write
    } else {
        AccessKind::Update
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::problem::{Gemm, Tiling};

    fn stream(s: Strategy, m: u64, n: u64, k: u64) -> Vec<Access> {
        let grid = TileGrid::new(&Gemm::new(m, n, k, 1).unwrap(), &Tiling::square(1).unwrap()).unwrap();
        let mut v = Vec::new();
        for_each_access(s, &grid, |a| v.push(a));
        v
    }

    #[test]
    fn names_round_trip() {
        for s in Strategy::ALL {
            assert_eq!(s.short().parse::<Strategy>().unwrap(), s);
            assert_eq!(s.name().parse::<Strategy>().unwrap(), s);
        }
        assert!("xs".parse::<Strategy>().is_err());
    }

    #[test]
    fn every_product_is_computed_once() {
        for s in Strategy::ALL {
            let v = stream(s, 3, 2, 4);
            let c_accesses = v.iter().filter(|a| a.tensor == Tensor::C).count();
            let writes = v.iter().filter(|a| a.kind == AccessKind::Write).count();
            // Every C tile is written whole exactly once (first k step or OS completion).
            assert_eq!(writes, 3 * 2, "{s}");
            match s {
                Strategy::OutputStationary => assert_eq!(c_accesses, 3 * 2),
                _ => assert_eq!(c_accesses, 3 * 2 * 4, "{s}"),
            }
        }
    }

    #[test]
    fn ws_hoists_a_and_is_hoists_b() {
        let ws = stream(Strategy::WeightStationary, 2, 3, 1);
        assert_eq!(ws.iter().filter(|a| a.tensor == Tensor::A).count(), 2);
        assert_eq!(ws.iter().filter(|a| a.tensor == Tensor::B).count(), 6);
        let is = stream(Strategy::InputStationary, 2, 3, 1);
        assert_eq!(is.iter().filter(|a| a.tensor == Tensor::A).count(), 6);
        assert_eq!(is.iter().filter(|a| a.tensor == Tensor::B).count(), 3);
    }
}
