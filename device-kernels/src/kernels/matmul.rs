//! `matmul`: C = A x B in f32, output-stationary over square tiles.
//!
//! Matrices live in interleaved DRAM as row-major T x T tiles, one tile per
//! page: tile (i, k) of an `rows x cols`-tile matrix is page `i * cols + k`.
//! args: [a_base, b_base, c_base, mt, nt, kt, banks, grid_cols, cores, t].
//! Core `c` computes output tiles c, c + cores, ... For each it reads A(i,k)
//! and B(k,j) for k = 0..kt, accumulates in f32 (soft-float: RV32IM has no
//! FPU) summing k ascending, and writes C(i,j) once. DRAM traffic per output
//! tile: 2 * kt tile reads + 1 tile write. Results equal a host loop doing
//! `acc = acc + a * b` in the same order, bit for bit.

use super::{core_index, wait_reads, wait_writes};
use crate::platform::Platform;
use crate::report::fail;
use cqlab_abi::mailbox::{DeviceError, LaunchMsg, LAUNCH};
use cqlab_abi::memory_map::{interleaved_page, KERNEL_SCRATCH};
use cqlab_abi::noc::{dram_bank, NocAddr};

/// Largest tile edge (three f32 tiles must fit the stack-side buffers).
pub const MAX_TILE: u32 = 16;
const MAX_ELEMS: usize = (MAX_TILE * MAX_TILE) as usize;

pub fn matmul(p: &mut impl Platform, msg: &LaunchMsg) {
    let [a_base, b_base, c_base, mt, nt, kt, banks, cols, cores, t, ..] = msg.args;
    if msg.nargs < 10 || t == 0 || t > MAX_TILE || banks == 0 || cores == 0 {
        fail(p, DeviceError::BadSize, LAUNCH, t, msg.nargs, msg.seq);
    }
    let (elems, tile_bytes) = ((t * t) as usize, t * t * 4);
    let (a_l1, b_l1) = (KERNEL_SCRATCH.base, KERNEL_SCRATCH.base + tile_bytes);
    let mut a = [0f32; MAX_ELEMS];
    let mut b = [0f32; MAX_ELEMS];
    let mut tile = core_index(p, cols);
    while tile < mt * nt {
        let (i, j) = (tile / nt, tile % nt);
        let mut acc = [0f32; MAX_ELEMS];
        for k in 0..kt {
            read_tile(p, a_base, i * kt + k, tile_bytes, banks, a_l1);
            read_tile(p, b_base, k * nt + j, tile_bytes, banks, b_l1);
            wait_reads(p);
            load(p, a_l1, &mut a[..elems]);
            load(p, b_l1, &mut b[..elems]);
            let t = t as usize;
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
        for (n, v) in acc[..elems].iter().enumerate() {
            p.write_u32(a_l1 + 4 * n as u32, v.to_bits());
        }
        let (bank, off) = interleaved_page(c_base, tile, tile_bytes, banks);
        p.noc_write(a_l1, NocAddr::unicast(dram_bank(bank as u8), off), tile_bytes);
        wait_writes(p);
        tile += cores;
    }
}

fn read_tile(p: &mut impl Platform, base: u32, page: u32, bytes: u32, banks: u32, l1: u32) {
    let (bank, off) = interleaved_page(base, page, bytes, banks);
    p.noc_read(NocAddr::unicast(dram_bank(bank as u8), off), l1, bytes);
}

fn load(p: &impl Platform, l1: u32, out: &mut [f32]) {
    for (n, v) in out.iter_mut().enumerate() {
        *v = f32::from_bits(p.read_u32(l1 + 4 * n as u32));
    }
}
