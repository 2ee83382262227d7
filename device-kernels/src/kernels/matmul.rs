//! `matmul`: C = A x B in f32 over square tiles, in one of three loop orders.
//!
//! Matrices live in interleaved DRAM as row-major T x T tiles, one tile per
//! page: tile (i, k) of an `rows x cols`-tile matrix is page `i * cols + k`.
//! args: [a_base, b_base, c_base, mt, nt, kt, banks, grid_cols, cores, t, order].
//!
//! Orders (the tile streams of `cqlab-schedule`'s strategies, with no cache
//! between the core and DRAM):
//! - 0, output-stationary (i -> j -> k): core `c` computes output tiles c,
//!   c + cores, ...; per tile it reads A(i,k) and B(k,j) for every k and
//!   writes C(i,j) once.
//! - 1, weight-stationary (k -> i -> j): reads A(i,k) once per (k, i), then
//!   per j reads B(k,j), reads the partial C(i,j) (not when k = 0), writes it.
//! - 2, input-stationary (k -> j -> i): the same with the roles of i and j.
//!
//! The k-outer orders keep partial sums in DRAM and run on one core (`cores`
//! must be 1). f32 is soft-float (RV32IM has no FPU); every order sums k
//! ascending, so the result equals a host loop doing `acc = acc + a * b`,
//! bit for bit.

use super::{core_index, wait_reads, wait_writes_sent};
use crate::platform::Platform;
use crate::report::fail;
use crate::worker::common_args;
use cqlab_abi::mailbox::DeviceError;
use cqlab_abi::memory_map::{interleaved_page, kernel_scratch};
use cqlab_abi::program::KernelCtx;

/// Largest tile edge (three f32 tiles must fit the stack-side buffers).
pub const MAX_TILE: u32 = 16;
const MAX_ELEMS: usize = (MAX_TILE * MAX_TILE) as usize;

/// The operands and geometry of one launch.
struct Gemm {
    a: u32,
    b: u32,
    c: u32,
    mt: u32,
    nt: u32,
    kt: u32,
    banks: u32,
    t: u32,
}

pub fn matmul(p: &mut impl Platform, ctx: &KernelCtx) {
    let [a, b, c, mt, nt, kt, banks, cols, cores, t, order] = common_args::<11>(p, ctx);
    if ctx.common_count < 10
        || t == 0
        || t > MAX_TILE
        || banks == 0
        || cores == 0
        || order > 2
        || (order > 0 && cores != 1)
    {
        fail(p, DeviceError::BadKernelArgs, ctx.common_addr, t, ctx.common_count, ctx.seq);
    }
    let g = Gemm { a, b, c, mt, nt, kt, banks, t };
    match order {
        0 => output_stationary(p, &g, core_index(p, cols), cores),
        _ => k_outer(p, &g, order == 1),
    }
}

/// Weight-stationary (`i_middle`) or input-stationary partial-sum order.
fn k_outer(p: &mut impl Platform, g: &Gemm, i_middle: bool) {
    let (elems, tile_bytes) = ((g.t * g.t) as usize, g.t * g.t * 4);
    let (a_l1, b_l1, c_l1) = (
        kernel_scratch(crate::CHIP).base,
        kernel_scratch(crate::CHIP).base + tile_bytes,
        kernel_scratch(crate::CHIP).base + 2 * tile_bytes,
    );
    let mut a = [0f32; MAX_ELEMS];
    let mut b = [0f32; MAX_ELEMS];
    let mut acc = [0f32; MAX_ELEMS];
    let (outer, inner) = if i_middle { (g.mt, g.nt) } else { (g.nt, g.mt) };
    for k in 0..g.kt {
        for m in 0..outer {
            // The stationary operand of the inner loop, read once per middle step.
            if i_middle {
                read_tile(p, g.a, m * g.kt + k, tile_bytes, g.banks, a_l1);
            } else {
                read_tile(p, g.b, k * g.nt + m, tile_bytes, g.banks, b_l1);
            }
            for n in 0..inner {
                let (i, j) = if i_middle { (m, n) } else { (n, m) };
                if i_middle {
                    read_tile(p, g.b, k * g.nt + j, tile_bytes, g.banks, b_l1);
                } else {
                    read_tile(p, g.a, i * g.kt + k, tile_bytes, g.banks, a_l1);
                }
                if k > 0 {
                    read_tile(p, g.c, i * g.nt + j, tile_bytes, g.banks, c_l1);
                }
                wait_reads(p);
                load(p, a_l1, &mut a[..elems]);
                load(p, b_l1, &mut b[..elems]);
                if k > 0 {
                    load(p, c_l1, &mut acc[..elems]);
                } else {
                    acc[..elems].fill(0.0);
                }
                mac(&mut acc, &a, &b, g.t as usize);
                store(p, g, &acc[..elems], i * g.nt + j, c_l1);
            }
        }
    }
}

/// `acc += a x b` for one tile, x ascending.
fn mac(acc: &mut [f32; MAX_ELEMS], a: &[f32; MAX_ELEMS], b: &[f32; MAX_ELEMS], t: usize) {
    for r in 0..t {
        for c in 0..t {
            let mut s = acc[r * t + c];
            for x in 0..t {
                s += a[r * t + x] * b[x * t + c];
            }
            acc[r * t + c] = s;
        }
    }
}

/// Writes an accumulator tile to C's page `tile` through L1 at `l1`.
fn store(p: &mut impl Platform, g: &Gemm, acc: &[f32], tile: u32, l1: u32) {
    // The previous store from this buffer must have left.
    wait_writes_sent(p);
    for (n, v) in acc.iter().enumerate() {
        p.write_u32(l1 + 4 * n as u32, v.to_bits());
    }
    let tile_bytes = g.t * g.t * 4;
    let (bank, off) = interleaved_page(g.c, tile, tile_bytes, g.banks);
    p.noc_write(l1, crate::places::dram(p, bank, off), tile_bytes);
    // `l1` is read into next: the write must have left it.
    wait_writes_sent(p);
}

fn output_stationary(p: &mut impl Platform, g: &Gemm, first: u32, cores: u32) {
    let (a_base, b_base, mt, nt, kt, banks, t) = (g.a, g.b, g.mt, g.nt, g.kt, g.banks, g.t);
    let (elems, tile_bytes) = ((t * t) as usize, t * t * 4);
    let (a_l1, b_l1) = (kernel_scratch(crate::CHIP).base, kernel_scratch(crate::CHIP).base + tile_bytes);
    let mut a = [0f32; MAX_ELEMS];
    let mut b = [0f32; MAX_ELEMS];
    let mut tile = first;
    while tile < mt * nt {
        let (i, j) = (tile / nt, tile % nt);
        let mut acc = [0f32; MAX_ELEMS];
        for k in 0..kt {
            read_tile(p, a_base, i * kt + k, tile_bytes, banks, a_l1);
            read_tile(p, b_base, k * nt + j, tile_bytes, banks, b_l1);
            wait_reads(p);
            load(p, a_l1, &mut a[..elems]);
            load(p, b_l1, &mut b[..elems]);
            mac(&mut acc, &a, &b, t as usize);
        }
        store(p, g, &acc[..elems], tile, a_l1);
        tile += cores;
    }
}

fn read_tile(p: &mut impl Platform, base: u32, page: u32, bytes: u32, banks: u32, l1: u32) {
    let (bank, off) = interleaved_page(base, page, bytes, banks);
    p.noc_read(crate::places::dram(p, bank, off), l1, bytes);
}

fn load(p: &impl Platform, l1: u32, out: &mut [f32]) {
    for (n, v) in out.iter_mut().enumerate() {
        *v = f32::from_bits(p.read_u32(l1 + 4 * n as u32));
    }
}
