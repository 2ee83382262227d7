//! The GEMM problem, its tiling and the dense tile index space.
//!
//! `C[M x N] = A[M x K] x B[K x N]`. Tiles are `Tm x Tk` for A, `Tk x Tn` for B and
//! `Tm x Tn` for C. Tiles are identified by `(tensor, tile row, tile column)`; the
//! [`TileGrid`] maps that triple to a dense index so the caches can use plain arrays.
//! Edge tiles (a dimension not divisible by its tile) carry their true byte size.

use crate::error::{Result, ScheduleError};
use serde::Serialize;
use std::ops::{Index, IndexMut};

/// Most tiles (A + B + C) the simulator keeps state for.
pub const MAX_TILES: u64 = 1 << 22;
/// Most tile steps (`ceil(M/Tm) * ceil(N/Tn) * ceil(K/Tk)`) the simulator runs.
pub const MAX_STEPS: u64 = 1 << 28;

/// One of the three GEMM operands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum Tensor {
    /// The `M x K` input.
    A,
    /// The `K x N` input (the weights).
    B,
    /// The `M x N` output.
    C,
}

impl Tensor {
    /// All tensors in report order.
    pub const ALL: [Tensor; 3] = [Tensor::A, Tensor::B, Tensor::C];

    /// "A", "B" or "C".
    pub fn name(self) -> &'static str {
        match self {
            Tensor::A => "A",
            Tensor::B => "B",
            Tensor::C => "C",
        }
    }
}

/// One value per tensor.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct PerTensor<T> {
    /// Value for A.
    pub a: T,
    /// Value for B.
    pub b: T,
    /// Value for C.
    pub c: T,
}

impl<T> PerTensor<T> {
    /// Apply `f` to each value.
    pub fn map<U>(&self, mut f: impl FnMut(Tensor, &T) -> U) -> PerTensor<U> {
        PerTensor { a: f(Tensor::A, &self.a), b: f(Tensor::B, &self.b), c: f(Tensor::C, &self.c) }
    }
}

impl<T> Index<Tensor> for PerTensor<T> {
    type Output = T;
    fn index(&self, t: Tensor) -> &T {
        match t {
            Tensor::A => &self.a,
            Tensor::B => &self.b,
            Tensor::C => &self.c,
        }
    }
}

impl<T> IndexMut<Tensor> for PerTensor<T> {
    fn index_mut(&mut self, t: Tensor) -> &mut T {
        match t {
            Tensor::A => &mut self.a,
            Tensor::B => &mut self.b,
            Tensor::C => &mut self.c,
        }
    }
}

/// Shape and element size of `C = A x B`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Gemm {
    /// Rows of A and C.
    pub m: u64,
    /// Columns of B and C.
    pub n: u64,
    /// Columns of A, rows of B (the reduction dimension).
    pub k: u64,
    /// Bytes per element (4 for f32).
    pub elem_size: u64,
}

impl Gemm {
    /// Validate a problem: all dimensions and the element size positive, byte sizes within `u64`.
    pub fn new(m: u64, n: u64, k: u64, elem_size: u64) -> Result<Self> {
        for (what, v) in [("M", m), ("N", n), ("K", k), ("element size", elem_size)] {
            if v == 0 {
                return Err(ScheduleError::Zero { what });
            }
        }
        let g = Gemm { m, n, k, elem_size };
        for t in Tensor::ALL {
            let (rows, cols) = g.dims(t);
            rows.checked_mul(cols).and_then(|e| e.checked_mul(elem_size)).ok_or(ScheduleError::Overflow {
                tensor: t.name(),
                rows,
                cols,
                elem_size,
            })?;
        }
        // The sum of the three must fit too, so totals never overflow.
        let sizes = g.tensor_bytes();
        sizes.a.checked_add(sizes.b).and_then(|s| s.checked_add(sizes.c)).ok_or(ScheduleError::Overflow {
            tensor: "A+B+C",
            rows: m,
            cols: n,
            elem_size,
        })?;
        Ok(g)
    }

    /// `(rows, cols)` of a tensor in elements.
    pub fn dims(&self, t: Tensor) -> (u64, u64) {
        match t {
            Tensor::A => (self.m, self.k),
            Tensor::B => (self.k, self.n),
            Tensor::C => (self.m, self.n),
        }
    }

    /// Byte size of each tensor; also the minimum DRAM traffic (inputs read once, C written once).
    pub fn tensor_bytes(&self) -> PerTensor<u64> {
        PerTensor { a: self.m * self.k, b: self.k * self.n, c: self.m * self.n }.map(|_, e| e * self.elem_size)
    }

    /// The transposed problem `C^T = B^T x A^T`: M and N swap, A and B swap roles.
    pub fn transposed(&self) -> Gemm {
        Gemm { m: self.n, n: self.m, ..*self }
    }
}

/// Tile extents in elements along M, N and K.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Tiling {
    /// Tile extent along M (rows of A and C tiles).
    pub tm: u64,
    /// Tile extent along N (columns of B and C tiles).
    pub tn: u64,
    /// Tile extent along K (columns of A tiles, rows of B tiles).
    pub tk: u64,
}

impl Tiling {
    /// The default square tile edge: 128, i.e. 64 KiB per f32 tile. Three such tiles (A, B and
    /// the C accumulator) double-buffered use 384 KiB, a quarter of a 1.5 MiB core L1, and the
    /// headline 32768 x 7168 x 7168 problem becomes a 256 x 56 x 56 loop nest that simulates
    /// in milliseconds.
    pub const DEFAULT_EDGE: u64 = 128;

    /// Separate tile extents; each must be positive.
    pub fn new(tm: u64, tn: u64, tk: u64) -> Result<Self> {
        for (what, v) in [("tile size Tm", tm), ("tile size Tn", tn), ("tile size Tk", tk)] {
            if v == 0 {
                return Err(ScheduleError::Zero { what });
            }
        }
        Ok(Tiling { tm, tn, tk })
    }

    /// A square tile `T x T x T`.
    pub fn square(t: u64) -> Result<Self> {
        if t == 0 {
            return Err(ScheduleError::Zero { what: "tile size" });
        }
        Ok(Tiling { tm: t, tn: t, tk: t })
    }

    /// Parse `T` or `TMxTNxTK` (for example `128` or `64x128x32`).
    pub fn parse(s: &str) -> Result<Self> {
        let bad = || ScheduleError::BadTile { input: s.to_string() };
        let parts: Vec<u64> =
            s.trim().split(['x', 'X']).map(|p| p.trim().parse::<u64>().map_err(|_| bad())).collect::<Result<_>>()?;
        match parts.as_slice() {
            [t] => Tiling::square(*t),
            [tm, tn, tk] => Tiling::new(*tm, *tn, *tk),
            _ => Err(bad()),
        }
    }

    /// The tiling of the transposed problem (Tm and Tn swap).
    pub fn transposed(&self) -> Tiling {
        Tiling { tm: self.tn, tn: self.tm, tk: self.tk }
    }
}

impl Default for Tiling {
    fn default() -> Self {
        Tiling { tm: Self::DEFAULT_EDGE, tn: Self::DEFAULT_EDGE, tk: Self::DEFAULT_EDGE }
    }
}

/// One tiled dimension: how many tiles and how long the last one is.
#[derive(Clone, Copy, Debug)]
struct Axis {
    tiles: u32,
    tile: u64,
    last: u64,
}

impl Axis {
    fn new(len: u64, tile: u64) -> Self {
        let tiles = len.div_ceil(tile);
        Axis { tiles: tiles as u32, tile, last: len - (tiles - 1) * tile }
    }

    #[inline]
    fn extent(&self, idx: u32) -> u64 {
        if idx + 1 == self.tiles {
            self.last
        } else {
            self.tile
        }
    }
}

/// Dense indexing of all tiles of A, B and C, with their true byte sizes.
#[derive(Clone, Debug)]
pub struct TileGrid {
    m: Axis,
    n: Axis,
    k: Axis,
    elem_size: u64,
    b_base: u32,
    c_base: u32,
    total: u32,
}

impl TileGrid {
    /// Build the grid, refusing problems beyond [`MAX_TILES`] or [`MAX_STEPS`].
    pub fn new(gemm: &Gemm, tiling: &Tiling) -> Result<Self> {
        let (mt, nt, kt) = (gemm.m.div_ceil(tiling.tm), gemm.n.div_ceil(tiling.tn), gemm.k.div_ceil(tiling.tk));
        // Each count is at most 2^64 / 1, so use u128 to multiply without overflow.
        let tiles = u128::from(mt) * u128::from(kt) + u128::from(kt) * u128::from(nt) + u128::from(mt) * u128::from(nt);
        if tiles > u128::from(MAX_TILES) {
            return Err(ScheduleError::TooManyTiles {
                tiles: tiles.min(u128::from(u64::MAX)) as u64,
                limit: MAX_TILES,
            });
        }
        let steps = u128::from(mt) * u128::from(nt) * u128::from(kt);
        if steps > u128::from(MAX_STEPS) {
            return Err(ScheduleError::TooManySteps {
                steps: steps.min(u128::from(u64::MAX)) as u64,
                limit: MAX_STEPS,
            });
        }
        let (m, n, k) = (Axis::new(gemm.m, tiling.tm), Axis::new(gemm.n, tiling.tn), Axis::new(gemm.k, tiling.tk));
        let b_base = m.tiles * k.tiles;
        let c_base = b_base + k.tiles * n.tiles;
        let total = c_base + m.tiles * n.tiles;
        Ok(TileGrid { m, n, k, elem_size: gemm.elem_size, b_base, c_base, total })
    }

    /// Tile counts along M, N and K.
    pub fn tiles(&self) -> (u32, u32, u32) {
        (self.m.tiles, self.n.tiles, self.k.tiles)
    }

    /// Number of tiles of A, B and C together.
    pub fn total_tiles(&self) -> usize {
        self.total as usize
    }

    /// Dense index and true byte size of tile `(row, col)` of `tensor`.
    #[inline]
    pub fn locate(&self, tensor: Tensor, row: u32, col: u32) -> (u32, u64) {
        let (id, rows, cols) = match tensor {
            Tensor::A => (row * self.k.tiles + col, self.m.extent(row), self.k.extent(col)),
            Tensor::B => (self.b_base + row * self.n.tiles + col, self.k.extent(row), self.n.extent(col)),
            Tensor::C => (self.c_base + row * self.n.tiles + col, self.m.extent(row), self.n.extent(col)),
        };
        (id, rows * cols * self.elem_size)
    }

    /// Which tensor a dense index belongs to.
    #[inline]
    pub fn tensor_of(&self, id: u32) -> Tensor {
        if id < self.b_base {
            Tensor::A
        } else if id < self.c_base {
            Tensor::B
        } else {
            Tensor::C
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_dims_and_tiles_are_rejected() {
        assert_eq!(Gemm::new(0, 1, 1, 4), Err(ScheduleError::Zero { what: "M" }));
        assert_eq!(Gemm::new(1, 1, 1, 0), Err(ScheduleError::Zero { what: "element size" }));
        assert!(Tiling::square(0).is_err());
        assert!(Tiling::new(1, 0, 1).is_err());
        assert!(matches!(Gemm::new(u64::MAX, 2, 2, 4), Err(ScheduleError::Overflow { .. })));
    }

    #[test]
    fn tiles_parse() {
        assert_eq!(Tiling::parse("128").unwrap(), Tiling::square(128).unwrap());
        assert_eq!(Tiling::parse("64x128x32").unwrap(), Tiling { tm: 64, tn: 128, tk: 32 });
        for bad in ["", "0", "12x3", "ax1x1", "1x1x0", "-3"] {
            assert!(Tiling::parse(bad).is_err(), "{bad:?} should not parse");
        }
    }

    #[test]
    fn edge_tiles_carry_true_sizes_and_ids_are_dense() {
        let g = Gemm::new(130, 70, 33, 2).unwrap();
        let grid = TileGrid::new(&g, &Tiling::new(64, 32, 16).unwrap()).unwrap();
        assert_eq!(grid.tiles(), (3, 3, 3));
        // Last A tile is 2 rows x 1 column.
        assert_eq!(grid.locate(Tensor::A, 2, 2).1, 2 * 2);
        assert_eq!(grid.locate(Tensor::B, 0, 2).1, 16 * 6 * 2);
        // Sum of tile sizes is exactly the tensor size; every id appears once.
        let mut seen = vec![false; grid.total_tiles()];
        let mut sums = PerTensor::<u64>::default();
        for t in Tensor::ALL {
            for i in 0..3 {
                for j in 0..3 {
                    let (id, bytes) = grid.locate(t, i, j);
                    assert!(!seen[id as usize]);
                    seen[id as usize] = true;
                    assert_eq!(grid.tensor_of(id), t);
                    sums[t] += bytes;
                }
            }
        }
        assert!(seen.iter().all(|&s| s));
        assert_eq!(sums, g.tensor_bytes());
    }

    #[test]
    fn huge_grids_are_refused() {
        let g = Gemm::new(1 << 20, 1 << 20, 1 << 20, 4).unwrap();
        assert!(matches!(TileGrid::new(&g, &Tiling::square(1).unwrap()), Err(ScheduleError::TooManyTiles { .. })));
        let g = Gemm::new(1 << 16, 1 << 16, 1 << 16, 4).unwrap();
        assert!(matches!(TileGrid::new(&g, &Tiling::square(64).unwrap()), Err(ScheduleError::TooManySteps { .. })));
    }
}
