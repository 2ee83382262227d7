//! f32 matmul on the chip's `matmul` worker, with the inputs tiled the way the
//! kernel reads them, the result checked against a host reference computed in
//! the same order, and the DRAM bytes the simulator counted for the kernel.

use cqlab_driver::buffer::{Buffer, Placement};
use cqlab_driver::error::{DriverError, Result};
use cqlab_driver::CoreRange;
use cqlab_driver::Device;

/// Loop order of the `matmul` kernel (its `order` argument).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    OutputStationary = 0,
    WeightStationary = 1,
    InputStationary = 2,
}

#[derive(Clone, Debug)]
pub struct MatmulRun {
    pub c: Vec<f32>,
    /// Elements whose bits differ from the host reference.
    pub mismatches: usize,
    /// DRAM bytes read and written while the kernel ran (simulator only).
    pub dram_read: Option<u64>,
    pub dram_written: Option<u64>,
    pub device_cycles: u64,
}

/// Deterministic test inputs: A is `m x k`, B is `k x n`, row-major.
pub fn inputs(m: usize, n: usize, k: usize) -> (Vec<f32>, Vec<f32>) {
    let a = (0..m * k).map(|i| ((i * 37 % 101) as f32 - 50.0) / 7.0).collect();
    let b = (0..k * n).map(|i| ((i * 53 % 97) as f32 - 48.0) / 3.0).collect();
    (a, b)
}

/// `C = A x B` summing k ascending, as the kernel does.
pub fn reference(a: &[f32], b: &[f32], m: usize, n: usize, k: usize) -> Vec<f32> {
    let mut c = vec![0f32; m * n];
    for i in 0..m {
        for j in 0..n {
            c[i * n + j] = (0..k).fold(0f32, |acc, x| acc + a[i * k + x] * b[x * n + j]);
        }
    }
    c
}

/// Row-major `rows x cols` as T x T tiles, tile (i, k) at page `i * cols/T + k`.
pub fn tiled(m: &[f32], rows: usize, cols: usize, t: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(m.len() * 4);
    for ti in 0..rows / t {
        for tk in 0..cols / t {
            for r in 0..t {
                for c in 0..t {
                    out.extend(m[(ti * t + r) * cols + tk * t + c].to_le_bytes());
                }
            }
        }
    }
    out
}

pub fn untiled(bytes: &[u8], rows: usize, cols: usize, t: usize) -> Vec<f32> {
    let mut m = vec![0f32; rows * cols];
    let mut words = bytes.chunks_exact(4).map(|w| f32::from_le_bytes(w.try_into().expect("4 bytes")));
    for ti in 0..rows / t {
        for tk in 0..cols / t {
            for r in 0..t {
                for c in 0..t {
                    m[(ti * t + r) * cols + tk * t + c] = words.next().unwrap_or(f32::NAN);
                }
            }
        }
    }
    m
}

fn base(b: &Buffer) -> u32 {
    match b.placement {
        Placement::Dram { base, .. } => base,
        Placement::L1 { .. } => unreachable!("matmul buffers are in DRAM"),
    }
}

/// Runs `C = A x B` on worker (0,0) (k-outer orders run on one core) of a
/// device booted with the `matmul` worker. `m`, `n`, `k` must be multiples of `t`.
pub fn run(
    dev: &mut Device,
    a: &[f32],
    b: &[f32],
    dims: (usize, usize, usize),
    t: usize,
    order: Order,
) -> Result<MatmulRun> {
    let (m, n, k) = dims;
    if t == 0 || t > 16 || m % t != 0 || n % t != 0 || k % t != 0 || m == 0 || n == 0 || k == 0 {
        return Err(DriverError::Invalid(format!(
            "matmul {m}x{n}x{k} with tile {t}: dims must be nonzero multiples of a tile of at most 16"
        )));
    }
    if a.len() != m * k || b.len() != k * n {
        return Err(DriverError::Invalid("matmul inputs do not match their dimensions".into()));
    }
    let page = (t * t * 4) as u32;
    let ab = dev.alloc_dram((m * k * 4) as u32, page)?;
    let bb = dev.alloc_dram((k * n * 4) as u32, page)?;
    let cb = dev.alloc_dram((m * n * 4) as u32, page)?;
    let banks = dev.chip().dram_banks();
    let cols = dev.chip().cols() as u32;
    let mut cq = dev.cq(0)?;
    cq.write_buffer(&ab, 0, &tiled(a, m, k, t))?;
    cq.write_buffer(&bb, 0, &tiled(b, k, n, t))?;
    cq.finish()?;
    if let Some(s) = dev.backend().introspect() {
        s.reset_dram_traffic()?;
    }
    let c0 = dev.now();
    let (mt, nt, kt) = ((m / t) as u32, (n / t) as u32, (k / t) as u32);
    let args = [base(&ab), base(&bb), base(&cb), mt, nt, kt, banks, cols, 1, t as u32, order as u32];
    let mut cq = dev.cq(0)?;
    cq.launch(CoreRange::single(0, 0), &args)?;
    cq.finish()?;
    let device_cycles = dev.now() - c0;
    let traffic = match dev.backend().introspect() {
        Some(s) => s.dram_traffic()?,
        None => None,
    };
    let c = untiled(&dev.cq(0)?.read_buffer(&cb, 0, (m * n * 4) as u32)?, m, n, t);
    let want = reference(a, b, m, n, k);
    let mismatches = c.iter().zip(&want).filter(|(x, y)| x.to_bits() != y.to_bits()).count();
    Ok(MatmulRun {
        c,
        mismatches,
        dram_read: traffic.map(|t| t.read_bytes),
        dram_written: traffic.map(|t| t.write_bytes),
        device_cycles,
    })
}
