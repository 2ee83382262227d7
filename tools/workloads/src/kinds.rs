//! The named workloads: what each enqueues per iteration, on which queues
//! and cores, and what one iteration counts for throughput.
//!
//! Each workload only enqueues through [`Ctx`]; the runner owns timing,
//! events, synchronisation and trace collection. Workloads launch the
//! worker firmware the device booted (`DeviceConfig::worker_kernel`); when
//! the program API lands, `Ctx::launch` is the one place to move over.

use crate::ctx::Ctx;
use crate::matmul::{reference, tiled, untiled};
use cqlab_driver::buffer::{Buffer, Placement};
use cqlab_driver::error::{DriverError, Result};
use cqlab_driver::Trace;
use serde::Serialize;

/// Every workload, by its CLI name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    CopyStress,
    DispatchLatency,
    TinyKernels,
    MatmulPeak,
    LargeGemm,
    Hetero,
}

impl Kind {
    pub const ALL: [Kind; 6] =
        [Self::CopyStress, Self::DispatchLatency, Self::TinyKernels, Self::MatmulPeak, Self::LargeGemm, Self::Hetero];

    pub fn name(self) -> &'static str {
        match self {
            Self::CopyStress => "copy_stress",
            Self::DispatchLatency => "dispatch_latency",
            Self::TinyKernels => "tiny_kernels",
            Self::MatmulPeak => "matmul_peak",
            Self::LargeGemm => "large_gemm",
            Self::Hetero => "hetero",
        }
    }

    pub fn from_name(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.name() == s)
    }

    /// What the workload does, as a run's report says it: `validating` is
    /// false under `--skip-validation`, so the description never claims a
    /// check the run skipped.
    pub fn describe(self, validating: bool) -> &'static str {
        match self {
            Self::MatmulPeak if !validating => "tiled f32 matmul on every worker, not validated (--skip-validation); TFLOPS and utilization against the modelled peak",
            Self::CopyStress => "CQ0 replays a trace of worker kernels while the other queues copy to the device and read back, with record/wait events every iteration",
            Self::DispatchLatency => "one empty program per queue per iteration, timed from enqueue to completion",
            Self::TinyKernels => "many short programs per queue per iteration",
            Self::MatmulPeak => "tiled f32 matmul on every worker, validated bit for bit; TFLOPS and utilization against the modelled peak",
            Self::LargeGemm => "a larger GEMM with many k-steps per output tile (throughput baseline)",
            Self::Hetero => "tiny and large kernels interleaved over the queues on shared cores (queue switches, convoy effect)",
        }
    }

    /// Why the workload needs fast dispatch (the CQ firmware), if it does:
    /// slow dispatch cannot capture or replay a trace.
    pub fn needs_fast_dispatch(self) -> Option<&'static str> {
        match self {
            Self::CopyStress => Some("CQ0 replays a trace"),
            Self::DispatchLatency | Self::TinyKernels | Self::MatmulPeak | Self::LargeGemm | Self::Hetero => None,
        }
    }

    /// Worker firmware the device boots for this workload.
    pub fn worker_kernel(self) -> &'static str {
        match self {
            Self::DispatchLatency => "noop",
            Self::CopyStress | Self::TinyKernels | Self::Hetero => "spin",
            Self::MatmulPeak | Self::LargeGemm => "matmul",
        }
    }
}

/// Workload knobs (each workload reads the ones it uses).
#[derive(Clone, Debug, Serialize)]
pub struct Knobs {
    /// copy_stress: write/read-back pairs per iteration on each copy queue.
    pub copies: u32,
    /// copy_stress: distinct device buffers the copies rotate over.
    pub buffers: u32,
    /// copy_stress: copies enqueued before their read-backs are awaited.
    pub depth: u32,
    /// copy_stress: kernel launches in CQ0's trace.
    pub trace_kernels: u32,
    /// copy_stress: bytes per copy.
    pub bytes: u32,
    /// tiny_kernels / hetero: programs per queue (tiny) or per iteration (hetero).
    pub programs: u32,
    /// Cycles a tiny kernel spins.
    pub tiny_cycles: u32,
    /// hetero: cycles a large kernel spins.
    pub large_cycles: u32,
    /// hetero: consecutive kernels a queue issues before the next queue takes over.
    pub burst: u32,
    /// matmul: C (m x n) = A (m x k) x B (k x n), f32 tiles of `tile` x `tile`.
    pub m: u32,
    pub n: u32,
    pub k: u32,
    pub tile: u32,
}

impl Knobs {
    /// Defaults per workload (matmul sizes differ between matmul_peak and large_gemm).
    pub fn defaults(kind: Kind) -> Self {
        let (m, n, k) = match kind {
            Kind::LargeGemm => (128, 128, 128),
            _ => (128, 128, 16),
        };
        Self {
            copies: 2,
            buffers: 2,
            depth: 2,
            trace_kernels: 4,
            bytes: 16 * 1024,
            programs: 8,
            tiny_cycles: 200,
            large_cycles: 20_000,
            burst: 2,
            m,
            n,
            k,
            tile: 16,
        }
    }
}

/// What one iteration counts, for throughput.
#[derive(Clone, Debug, Serialize)]
pub struct Work {
    pub per_iteration: f64,
    /// Unit of one counted item ("programs", "bytes", "flop").
    pub unit: &'static str,
}

/// A workload's state across iterations.
pub trait Workload {
    fn setup(&mut self, ctx: &mut Ctx<'_>) -> Result<()>;
    /// Enqueues iteration `i` (the runner records events and synchronises).
    fn iteration(&mut self, ctx: &mut Ctx<'_>, i: u32) -> Result<()>;
    /// What one iteration over `cqs` queues counts.
    fn work(&self, cqs: u8) -> Work;
    /// Checks results after the run: `Ok(None)` when there is nothing to check.
    fn validate(&mut self, ctx: &mut Ctx<'_>) -> Result<Option<Validation>>;
}

#[derive(Clone, Debug, Serialize)]
pub struct Validation {
    pub checked: u64,
    pub mismatches: u64,
    pub what: String,
}

/// A knob that must be at least 1: zero is refused, never silently raised.
fn at_least_one(kind: Kind, flag: &str, v: u32) -> Result<u32> {
    if v == 0 {
        return Err(DriverError::Invalid(format!("{} --{flag} 0: must be at least 1", kind.name())));
    }
    Ok(v)
}

pub fn build(kind: Kind, knobs: &Knobs, seed: u64) -> Result<Box<dyn Workload>> {
    match kind {
        Kind::TinyKernels => {
            at_least_one(kind, "programs", knobs.programs)?;
        }
        Kind::Hetero => {
            at_least_one(kind, "programs", knobs.programs)?;
            at_least_one(kind, "burst", knobs.burst)?;
        }
        Kind::CopyStress => {
            at_least_one(kind, "copies", knobs.copies)?;
            at_least_one(kind, "trace-kernels", knobs.trace_kernels)?;
        }
        _ => {}
    }
    Ok(match kind {
        Kind::CopyStress => Box::new(CopyStress::new(knobs, seed)?),
        Kind::DispatchLatency => Box::new(Launches { programs: 1, cycles: 0 }),
        Kind::TinyKernels => Box::new(Launches { programs: knobs.programs, cycles: knobs.tiny_cycles }),
        Kind::MatmulPeak | Kind::LargeGemm => Box::new(Matmul::new(knobs, seed)?),
        Kind::Hetero => Box::new(Hetero::new(knobs)),
    })
}

/// A small xorshift stream for seeded payloads.
struct Rng(u64);
impl Rng {
    fn new(seed: u64) -> Self {
        Self(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// dispatch_latency (empty programs) and tiny_kernels (short spins): each
/// active queue launches `programs` programs on its own rows of workers.
struct Launches {
    programs: u32,
    cycles: u32,
}

impl Workload for Launches {
    fn setup(&mut self, _: &mut Ctx<'_>) -> Result<()> {
        Ok(())
    }
    fn iteration(&mut self, ctx: &mut Ctx<'_>, _: u32) -> Result<()> {
        for q in 0..ctx.cqs() {
            let cores = ctx.partition(q);
            for _ in 0..self.programs {
                ctx.launch(q, cores, &[self.cycles], if self.cycles == 0 { "empty" } else { "tiny" })?;
            }
        }
        Ok(())
    }
    fn work(&self, cqs: u8) -> Work {
        Work { per_iteration: self.programs as f64 * cqs as f64, unit: "programs" }
    }
    fn validate(&mut self, _: &mut Ctx<'_>) -> Result<Option<Validation>> {
        Ok(None)
    }
}

/// Page size of copy_stress's DRAM buffers.
const COPY_PAGE: u32 = 1024;

/// copy_stress: the two-queue pattern of the field notes.
struct CopyStress {
    knobs: Knobs,
    rng: Rng,
    buffers: Vec<Buffer>,
    trace: Option<Trace>,
    checked: u64,
    mismatches: u64,
    copy_queues: Vec<u8>,
}

impl CopyStress {
    fn new(knobs: &Knobs, seed: u64) -> Result<Self> {
        if knobs.buffers == 0 || knobs.bytes == 0 || knobs.depth == 0 {
            return Err(DriverError::Invalid("copy_stress needs --buffers, --bytes and --depth above 0".into()));
        }
        // Paged DRAM writes name their first page in a u16: a buffer of
        // COPY_PAGE-byte pages holds at most 65536 of them.
        let max = (u16::MAX as u64 + 1) * COPY_PAGE as u64;
        if knobs.bytes as u64 > max {
            return Err(DriverError::Invalid(format!(
                "copy_stress --bytes {}: at most {max} ({} pages of {COPY_PAGE} bytes)",
                knobs.bytes,
                u16::MAX as u32 + 1
            )));
        }
        Ok(Self {
            knobs: knobs.clone(),
            rng: Rng::new(seed),
            buffers: vec![],
            trace: None,
            checked: 0,
            mismatches: 0,
            copy_queues: vec![],
        })
    }
}

impl Workload for CopyStress {
    fn setup(&mut self, ctx: &mut Ctx<'_>) -> Result<()> {
        let (bytes, buffers) = (self.knobs.bytes, self.knobs.buffers);
        let too_big = |why: String| {
            DriverError::Invalid(format!(
                "copy_stress --buffers {buffers} --bytes {bytes}: does not fit in DRAM: {why}"
            ))
        };
        let size = bytes.checked_next_multiple_of(COPY_PAGE).ok_or_else(|| too_big("over 4 GiB".into()))?;
        for _ in 0..buffers {
            self.buffers.push(ctx.dev.alloc_dram(size, COPY_PAGE).map_err(|e| too_big(e.to_string()))?);
        }
        // CQ0 computes; every other queue copies (CQ0 too when it is alone).
        self.copy_queues = if ctx.cqs() == 1 { vec![0] } else { (1..ctx.cqs()).collect() };
        let all = ctx.all_workers();
        ctx.begin_trace(0)?;
        for _ in 0..self.knobs.trace_kernels {
            ctx.launch(0, all, &[self.knobs.tiny_cycles], "trace kernel")?;
        }
        self.trace = Some(ctx.end_trace(0)?);
        Ok(())
    }

    fn iteration(&mut self, ctx: &mut Ctx<'_>, _: u32) -> Result<()> {
        let trace = self.trace.as_ref().expect("set up");
        ctx.dev.cq(0)?.execute_trace(trace)?;
        let ev = ctx.dev.cq(0)?.record_event()?;
        let bytes = self.knobs.bytes;
        for &q in &self.copy_queues.clone() {
            if q != 0 {
                ctx.dev.cq(q)?.wait_for_event(ev)?;
            }
            let mut pending = Vec::new();
            for c in 0..self.knobs.copies {
                let buf = self.buffers[(c % self.knobs.buffers) as usize];
                let data: Vec<u8> = (0..bytes).map(|_| self.rng.next() as u8).collect();
                let mut cq = ctx.dev.cq(q)?;
                cq.write_buffer(&buf, 0, &data)?;
                pending.push((cq.enqueue_read(&buf, 0, bytes)?, data));
                if pending.len() as u32 >= self.knobs.depth || c + 1 == self.knobs.copies {
                    for (p, want) in pending.drain(..) {
                        let got = ctx.dev.complete_read(&p)?;
                        self.checked += want.len() as u64;
                        self.mismatches += got.iter().zip(&want).filter(|(a, b)| a != b).count() as u64
                            + want.len().abs_diff(got.len().min(want.len())) as u64;
                    }
                }
            }
        }
        Ok(())
    }

    fn work(&self, _: u8) -> Work {
        // Bytes written plus bytes read back, over every copy queue.
        let per = 2.0 * self.knobs.bytes as f64 * self.knobs.copies as f64 * self.copy_queues.len().max(1) as f64;
        Work { per_iteration: per, unit: "bytes" }
    }

    fn validate(&mut self, _: &mut Ctx<'_>) -> Result<Option<Validation>> {
        Ok(Some(Validation {
            checked: self.checked,
            mismatches: self.mismatches,
            what: "bytes read back vs written".into(),
        }))
    }
}

/// matmul_peak / large_gemm: one GEMM split over every queue's rows of
/// workers (output-stationary, core i computes tiles i, i + cores, ...).
struct Matmul {
    knobs: Knobs,
    a: Vec<f32>,
    b: Vec<f32>,
    bufs: Option<(Buffer, Buffer, Buffer)>,
}

fn dram_base(b: &Buffer) -> u32 {
    match b.placement {
        Placement::Dram { base, .. } => base,
        Placement::L1 { addr, .. } => addr,
    }
}

impl Matmul {
    fn new(knobs: &Knobs, seed: u64) -> Result<Self> {
        let (m, n, k, t) = (knobs.m, knobs.n, knobs.k, knobs.tile);
        if t == 0 || t > 16 || m == 0 || n == 0 || k == 0 || m % t != 0 || n % t != 0 || k % t != 0 {
            return Err(DriverError::Invalid(format!(
                "matmul {m}x{n}x{k} with tile {t}: dims must be nonzero multiples of a tile of at most 16"
            )));
        }
        let mut rng = Rng::new(seed);
        // Multiples of 1/8 in -1..=1: seeded, and the kernel sums k ascending
        // like the host reference, so the result must match bit for bit.
        let mut gen = |len: u32| (0..len).map(|_| ((rng.next() % 17) as f32 - 8.0) / 8.0).collect::<Vec<f32>>();
        let a = gen(m * k);
        let b = gen(k * n);
        Ok(Self { knobs: knobs.clone(), a, b, bufs: None })
    }

    /// Kernel args: every queue's launch covers its rows, and `cores` counts
    /// the workers of all queues, so together they compute every tile once.
    fn args(&self, ctx: &Ctx<'_>, bufs: &(Buffer, Buffer, Buffer)) -> [u32; 11] {
        let Knobs { m, n, k, tile: t, .. } = self.knobs;
        let chip = ctx.dev.chip();
        let cores = ctx.rows_per_cq() as u32 * ctx.cqs() as u32 * chip.cols() as u32;
        [
            dram_base(&bufs.0),
            dram_base(&bufs.1),
            dram_base(&bufs.2),
            m / t,
            n / t,
            k / t,
            chip.dram_banks(),
            chip.cols() as u32,
            cores,
            t,
            0,
        ]
    }
}

impl Workload for Matmul {
    fn setup(&mut self, ctx: &mut Ctx<'_>) -> Result<()> {
        let Knobs { m, n, k, tile: t, .. } = self.knobs;
        let page = t * t * 4;
        let (m_, n_, k_, t_) = (m as usize, n as usize, k as usize, t as usize);
        let ab = ctx.dev.alloc_dram(m * k * 4, page)?;
        let bb = ctx.dev.alloc_dram(k * n * 4, page)?;
        let cb = ctx.dev.alloc_dram(m * n * 4, page)?;
        let mut cq = ctx.dev.cq(0)?;
        cq.write_buffer(&ab, 0, &tiled(&self.a, m_, k_, t_))?;
        cq.write_buffer(&bb, 0, &tiled(&self.b, k_, n_, t_))?;
        cq.finish()?;
        self.bufs = Some((ab, bb, cb));
        Ok(())
    }

    fn iteration(&mut self, ctx: &mut Ctx<'_>, _: u32) -> Result<()> {
        let bufs = self.bufs.expect("set up");
        let args = self.args(ctx, &bufs);
        for q in 0..ctx.cqs() {
            let cores = ctx.partition(q);
            ctx.launch(q, cores, &args, "matmul")?;
        }
        Ok(())
    }

    fn work(&self, _: u8) -> Work {
        let Knobs { m, n, k, .. } = self.knobs;
        Work { per_iteration: 2.0 * m as f64 * n as f64 * k as f64, unit: "flop" }
    }

    fn validate(&mut self, ctx: &mut Ctx<'_>) -> Result<Option<Validation>> {
        let Knobs { m, n, k, tile: t, .. } = self.knobs;
        let bufs = self.bufs.expect("set up");
        let bytes = ctx.dev.cq(0)?.read_buffer(&bufs.2, 0, m * n * 4)?;
        let c = untiled(&bytes, m as usize, n as usize, t as usize);
        let want = reference(&self.a, &self.b, m as usize, n as usize, k as usize);
        let mismatches = c.iter().zip(&want).filter(|(x, y)| x.to_bits() != y.to_bits()).count() as u64;
        Ok(Some(Validation {
            checked: want.len() as u64,
            mismatches,
            what: "C elements vs the host reference, bit for bit".into(),
        }))
    }
}

/// hetero: `programs` kernels per iteration alternating tiny and large, on
/// one shared set of cores; queue `(k / burst) % cqs` issues kernel k. A
/// queue that takes over from another first waits for the other's event,
/// so the cores never get two launches at once: that hand-off is the
/// queue-switch overhead.
struct Hetero {
    knobs: Knobs,
    /// Queue that launched the previous kernel (across iterations).
    last: Option<u8>,
}

impl Hetero {
    fn new(knobs: &Knobs) -> Self {
        Self { knobs: knobs.clone(), last: None }
    }
}

impl Workload for Hetero {
    fn setup(&mut self, _: &mut Ctx<'_>) -> Result<()> {
        Ok(())
    }
    fn iteration(&mut self, ctx: &mut Ctx<'_>, _: u32) -> Result<()> {
        let cores = ctx.shared_cores();
        let burst = self.knobs.burst;
        for k in 0..self.knobs.programs {
            let q = ((k / burst) % ctx.cqs() as u32) as u8;
            if let Some(p) = self.last.filter(|&p| p != q) {
                let ev = ctx.dev.cq(p)?.record_event()?;
                ctx.dev.cq(q)?.wait_for_event(ev)?;
            }
            let (cycles, label) =
                if k % 2 == 0 { (self.knobs.tiny_cycles, "tiny") } else { (self.knobs.large_cycles, "large") };
            ctx.launch(q, cores, &[cycles], label)?;
            self.last = Some(q);
        }
        Ok(())
    }
    fn work(&self, _: u8) -> Work {
        Work { per_iteration: self.knobs.programs as f64, unit: "kernels" }
    }
    fn validate(&mut self, _: &mut Ctx<'_>) -> Result<Option<Validation>> {
        Ok(None)
    }
}
