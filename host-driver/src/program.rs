//! Programs: kernels placed on core ranges with their runtime arguments,
//! what `CommandQueue::enqueue_program` dispatches.
//!
//! ```ignore
//! let spin = Arc::new(device.load_kernel("spin")?);
//! let mut program = Program::new();
//! let k = program.add_kernel(spin.clone(), &[CoreRange::new((0, 0), (3, 3))])?;
//! program.set_common_args(k, &[1000])?;
//! program.set_unique_args(k, (2, 1), &[7, 8])?;
//! // The same rectangle's NCRISC runs another kernel at the same time.
//! program.add_kernel_on(spin.clone(), &[CoreRange::new((0, 0), (3, 3))], Processor::Ncrisc)?;
//! // And its three TRISCs one compute kernel, whose args they share.
//! program.add_compute_kernel(spin, &[CoreRange::new((0, 0), (3, 3))])?;
//! cq.enqueue_program(&program)?;
//! ```
//!
//! A kernel names the core of each tile it runs on ([`Processor`]; BRISC
//! unless told), or the three TRISCs at once: a compute kernel, as
//! tt-metal's `ComputeConfig` kernel, one image and one set of runtime
//! args that all three read. BRISC and NCRISC kernels may use the NOC (NOC0 and NOC1),
//! TRISC kernels run plain RISC-V code (a NOC access halts the core with
//! `DeviceError::NoNoc`) on a smaller stack: a Wormhole TRISC has 2 KiB of
//! local memory, so a kernel whose largest stack frame does not fit is
//! refused before it is sent ([`Program::check`]). Kernels on different
//! cores may share a rectangle exactly (the tile runs them side by side);
//! otherwise a tile runs one kernel per core per program.

use crate::error::{DriverError, Result};
use crate::geometry::{CoreRange, Topology};
use crate::kernel::KernelImage;
use cqlab_abi::arch::tensix::Processor;
use cqlab_abi::memory_map::{firmware_stack_top, local_mem};
use cqlab_abi::program::{MAX_COMMON_ARGS, MAX_KERNEL_GROUPS, MAX_UNIQUE_ARGS};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// One kernel of a program. Its runtime args are kept as the bytes the
/// workers read (little-endian words, each range's unique args in the block
/// layout of `KernelGroup::unique_addr`), laid out when they are set, so an
/// enqueue copies each block into the issue queue once.
#[derive(Clone, Debug)]
pub struct KernelSpec {
    pub image: Arc<KernelImage>,
    /// The cores of each tile it runs on: one, or the three TRISCs of a
    /// compute kernel.
    processors: Vec<Processor>,
    /// Rectangles it runs on (each becomes one kernel group).
    pub ranges: Vec<CoreRange>,
    /// Per range: the unique args of its cores, row-major, each core's
    /// zero-padded to `unique_count` words (cores without args get zeroes);
    /// empty until a core is given some.
    unique: Vec<Vec<u8>>,
    /// Per range: how many words each core (row-major) was given.
    unique_lens: Vec<Vec<u16>>,
    /// Words per core in `unique`: the most any core of the kernel was given.
    unique_count: u32,
    /// Names the bytes of `unique` as they are now (`next_stamp`,
    /// renewed by every change): a staged copy of a block with the same
    /// stamp holds the same bytes.
    unique_stamp: u64,
    /// Args every core of the kernel sees (written once per range, multicast).
    common: Vec<u8>,
}

impl KernelSpec {
    fn new(image: Arc<KernelImage>, ranges: &[CoreRange], processors: &[Processor]) -> Self {
        Self {
            image,
            processors: processors.to_vec(),
            ranges: ranges.to_vec(),
            // Laid out by the first `set_unique` (most programs have none).
            unique: Vec::new(),
            unique_lens: Vec::new(),
            unique_count: 0,
            unique_stamp: 0,
            common: Vec::new(),
        }
    }

    /// The cores of each tile it runs on, all reading the same args.
    pub fn processors(&self) -> &[Processor] {
        &self.processors
    }

    /// Unique words per core: the longest any core of the kernel has.
    pub fn unique_count(&self) -> u32 {
        self.unique_count
    }

    /// Common args, in words.
    pub fn common_count(&self) -> u32 {
        (self.common.len() / 4) as u32
    }

    /// The unique args of `core`, zero-padded to `unique_count` words, if
    /// the core is one of the kernel's.
    pub fn unique_args(&self, core: (u8, u8)) -> Option<Vec<u32>> {
        let (r, i) = self.core_index(core)?;
        let n = self.unique_count as usize;
        if n == 0 {
            return Some(Vec::new());
        }
        Some(words(&self.unique[r][4 * n * i..4 * n * (i + 1)]))
    }

    pub fn common_args(&self) -> Vec<u32> {
        words(&self.common)
    }

    /// Range `r`'s unique-arg block: `4 * unique_count` bytes per core, row-major.
    pub(crate) fn unique_block(&self, r: usize) -> &[u8] {
        &self.unique[r]
    }

    /// Core `i`'s (row-major) part of range `r`'s unique-arg block.
    pub(crate) fn unique_of(&self, r: usize, i: usize) -> &[u8] {
        let n = 4 * self.unique_count as usize;
        &self.unique[r][n * i..n * (i + 1)]
    }

    /// The common args as the workers read them.
    pub(crate) fn common_bytes(&self) -> &[u8] {
        &self.common
    }

    /// Which range holds `core`, and the core's row-major index in it.
    fn core_index(&self, core: (u8, u8)) -> Option<(usize, usize)> {
        self.ranges.iter().enumerate().find(|(_, range)| range.contains(core)).map(|(r, range)| {
            let cols = (range.end.0 - range.start.0 + 1) as usize;
            (r, (core.1 - range.start.1) as usize * cols + (core.0 - range.start.0) as usize)
        })
    }

    /// Sets core `i` of range `r` to `args` (at most `MAX_UNIQUE_ARGS` words).
    fn set_unique(&mut self, r: usize, i: usize, args: &[u32]) {
        if self.unique_lens.is_empty() {
            self.unique = vec![Vec::new(); self.ranges.len()];
            self.unique_lens = self.ranges.iter().map(|r| vec![0; r.count() as usize]).collect();
        }
        self.unique_lens[r][i] = args.len() as u16;
        let count = self.unique_lens.iter().flatten().copied().max().unwrap_or(0) as u32;
        if count != self.unique_count {
            // A new stride: every block is laid out again.
            let (old, new) = (4 * self.unique_count as usize, 4 * count as usize);
            for (block, range) in self.unique.iter_mut().zip(&self.ranges) {
                let mut b = vec![0u8; range.count() as usize * new];
                for j in 0..range.count() as usize {
                    let keep = old.min(new);
                    b[j * new..j * new + keep].copy_from_slice(&block[j * old..j * old + keep]);
                }
                *block = b;
            }
            self.unique_count = count;
        }
        let n = 4 * count as usize;
        let mine = &mut self.unique[r][n * i..n * (i + 1)];
        mine.fill(0);
        for (w, a) in mine.chunks_exact_mut(4).zip(args) {
            w.copy_from_slice(&a.to_le_bytes());
        }
        self.unique_stamp = next_stamp();
    }

    /// The stamp of the unique args as they are now.
    pub(crate) fn unique_stamp(&self) -> u64 {
        self.unique_stamp
    }
}

/// A fresh value for a set of runtime args: never handed out twice in a
/// process, so equal stamps mean equal bytes.
pub(crate) fn next_stamp() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// Little-endian words of `bytes`.
fn words(bytes: &[u8]) -> Vec<u32> {
    bytes.chunks_exact(4).map(|w| u32::from_le_bytes(w.try_into().expect("4 bytes"))).collect()
}

/// Which kernel of a program (returned by `add_kernel`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelHandle(usize);

/// Kernels with their placement and arguments.
#[derive(Clone, Debug, Default)]
pub struct Program {
    pub(crate) kernels: Vec<KernelSpec>,
}

impl Program {
    pub fn new() -> Self {
        Self::default()
    }

    /// Places `image` on BRISC of every tile of `ranges`.
    pub fn add_kernel(&mut self, image: Arc<KernelImage>, ranges: &[CoreRange]) -> Result<KernelHandle> {
        self.add_kernel_on(image, ranges, Processor::Brisc)
    }

    /// Places `image` on core `processor` of every tile of `ranges`. A
    /// core runs at most one kernel per program; kernels on different
    /// cores share a rectangle exactly or not at all (each distinct
    /// rectangle is one kernel group of the launch), and a program names
    /// at most `MAX_KERNEL_GROUPS` rectangles.
    pub fn add_kernel_on(
        &mut self,
        image: Arc<KernelImage>,
        ranges: &[CoreRange],
        processor: Processor,
    ) -> Result<KernelHandle> {
        self.place(image, ranges, &[processor])
    }

    /// Places `image` on the three TRISCs of every tile of `ranges` as one
    /// kernel: one set of runtime args, which all three read, as tt-metal's
    /// compute kernel (`Processor::COMPUTE`). The rules of
    /// [`add_kernel_on`](Self::add_kernel_on) hold for each TRISC.
    pub fn add_compute_kernel(&mut self, image: Arc<KernelImage>, ranges: &[CoreRange]) -> Result<KernelHandle> {
        self.place(image, ranges, &Processor::COMPUTE)
    }

    fn place(
        &mut self,
        image: Arc<KernelImage>,
        ranges: &[CoreRange],
        processors: &[Processor],
    ) -> Result<KernelHandle> {
        if ranges.is_empty() {
            return Err(DriverError::Invalid(format!("kernel {} placed on no core range", image.name)));
        }
        for (i, r) in ranges.iter().enumerate() {
            if r.start.0 > r.end.0 || r.start.1 > r.end.1 {
                return Err(DriverError::OutOfRange { what: "core range", detail: format!("{r:?} is empty") });
            }
            let earlier = self
                .kernels
                .iter()
                .flat_map(|k| k.processors.iter().flat_map(move |&p| k.ranges.iter().map(move |o| (p, o))));
            let mine = ranges[..i].iter().flat_map(|o| processors.iter().map(move |&p| (p, o)));
            let clash = |(p, o): &(Processor, &CoreRange)| o.overlaps(r) && (processors.contains(p) || *o != r);
            if let Some((p, o)) = earlier.chain(mine).find(clash) {
                let why = if processors.contains(&p) {
                    format!("a {} runs one kernel per program", p.name())
                } else {
                    "kernels on different cores of a tile share a rectangle exactly or not at all".into()
                };
                return Err(DriverError::Invalid(format!("core ranges {o} ({}) and {r} overlap: {why}", p.name())));
            }
        }
        let mut rects: Vec<CoreRange> = self.kernels.iter().flat_map(|k| k.ranges.iter().copied()).collect();
        rects.extend_from_slice(ranges);
        rects.sort_by_key(|r| (r.start, r.end));
        rects.dedup();
        if rects.len() > MAX_KERNEL_GROUPS {
            return Err(DriverError::Invalid(format!(
                "a program names at most {MAX_KERNEL_GROUPS} distinct core ranges, this one {}",
                rects.len()
            )));
        }
        self.kernels.push(KernelSpec::new(image, ranges, processors));
        Ok(KernelHandle(self.kernels.len() - 1))
    }

    /// Args every core of kernel `k` sees (at most `MAX_COMMON_ARGS` words).
    pub fn set_common_args(&mut self, k: KernelHandle, args: &[u32]) -> Result<()> {
        if args.len() > MAX_COMMON_ARGS as usize {
            return Err(DriverError::Invalid(format!("{} common args (at most {MAX_COMMON_ARGS})", args.len())));
        }
        self.kernel(k)?.common = args.iter().flat_map(|a| a.to_le_bytes()).collect();
        Ok(())
    }

    /// Args of one core of kernel `k` (at most `MAX_UNIQUE_ARGS` words).
    pub fn set_unique_args(&mut self, k: KernelHandle, core: (u8, u8), args: &[u32]) -> Result<()> {
        if args.len() > MAX_UNIQUE_ARGS as usize {
            return Err(DriverError::Invalid(format!("{} unique args (at most {MAX_UNIQUE_ARGS})", args.len())));
        }
        let spec = self.kernel(k)?;
        let Some((r, i)) = spec.core_index(core) else {
            return Err(DriverError::OutOfRange {
                what: "unique args",
                detail: format!("core {core:?} is not in the ranges of kernel {}", spec.image.name),
            });
        };
        spec.set_unique(r, i, args);
        Ok(())
    }

    pub fn kernels(&self) -> &[KernelSpec] {
        &self.kernels
    }

    fn kernel(&mut self, k: KernelHandle) -> Result<&mut KernelSpec> {
        let n = self.kernels.len();
        self.kernels.get_mut(k.0).ok_or_else(|| DriverError::Invalid(format!("kernel handle {} of {n}", k.0)))
    }

    /// Checks the program against `chip` before anything is sent: every
    /// range on the compute grid (a refusal says why the grid is the size
    /// it is: harvested lines, command-queue lines), and every kernel's
    /// largest stack frame within the stack its core has (a Wormhole TRISC:
    /// 2 KiB of local memory less the NOC state at its top).
    pub fn check(&self, chip: &Topology) -> Result<()> {
        if self.kernels.is_empty() {
            return Err(DriverError::Invalid("a program without kernels".into()));
        }
        for k in &self.kernels {
            for r in &k.ranges {
                chip.check_range("kernel range", r)?;
            }
            for &p in &k.processors {
                let room = firmware_stack_top(chip.params(), p) - local_mem(chip.params(), p).base;
                if k.image.max_frame > room {
                    return Err(DriverError::Invalid(format!(
                        "kernel {} allocates a {}-byte stack frame; a {} {} has {room} bytes of stack ({} bytes of \
                         local memory less the NOC state): run it on a core with more",
                        k.image.name,
                        k.image.max_frame,
                        chip.arch(),
                        p.name(),
                        local_mem(chip.params(), p).size
                    )));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn image() -> Arc<KernelImage> {
        Arc::new(KernelImage::test_image("k"))
    }

    #[test]
    fn overlapping_ranges_and_too_many_args_are_refused() {
        let mut p = Program::new();
        let k = p.add_kernel(image(), &[CoreRange::new((0, 0), (3, 3))]).unwrap();
        assert!(p.add_kernel(image(), &[CoreRange::new((3, 3), (4, 4))]).is_err());
        assert!(p.add_kernel(image(), &[CoreRange::single(5, 5), CoreRange::new((5, 4), (5, 6))]).is_err());
        p.add_kernel(image(), &[CoreRange::single(5, 5)]).unwrap();
        assert!(p.set_common_args(k, &[0; 257]).is_err());
        assert!(p.set_unique_args(k, (1, 1), &[0; 257]).is_err());
        assert!(p.set_unique_args(k, (5, 5), &[1]).is_err(), "core of another kernel");
        p.set_unique_args(k, (1, 1), &[1, 2]).unwrap();
        assert_eq!(p.kernels()[0].unique_count(), 2);
        assert_eq!(p.kernels()[0].unique_args((1, 1)), Some(vec![1, 2]));
        let small =
            Topology::for_board(cqlab_abi::soc::Board::WormholeN150, Some("rows=1,2,3,4,5,7,8".parse().unwrap()), 1)
                .unwrap();
        assert_eq!((small.cols(), small.rows()), (8, 2));
        let e = p.check(&small).unwrap_err().to_string();
        assert!(e.contains("8x2") && e.contains("(0,0)..=(3,3)"), "{e}");
        p.check(&Topology::for_board(cqlab_abi::soc::Board::WormholeN150, None, 2).unwrap()).unwrap();
    }

    #[test]
    fn kernels_of_different_cores_share_a_rectangle_exactly_and_trisc_stacks_are_checked() {
        let r = CoreRange::new((0, 0), (1, 1));
        let mut p = Program::new();
        p.add_kernel(image(), &[r]).unwrap();
        p.add_kernel_on(image(), &[r], Processor::Ncrisc).unwrap();
        let e = p.add_kernel_on(image(), &[r], Processor::Ncrisc).unwrap_err().to_string();
        assert!(e.contains("one kernel per program"), "{e}");
        let e = p.add_kernel_on(image(), &[CoreRange::new((1, 1), (2, 2))], Processor::Trisc0).unwrap_err();
        assert!(e.to_string().contains("share a rectangle exactly"), "{e}");
        // A frame of 2032 bytes: too big for a Wormhole TRISC (2016 bytes
        // of stack), fine on BRISC and on a Blackhole TRISC.
        let mut big = KernelImage::test_image("big");
        big.max_frame = 2032;
        let big = Arc::new(big);
        let mut p = Program::new();
        p.add_kernel_on(big.clone(), &[r], Processor::Trisc1).unwrap();
        let wh = Topology::for_board(cqlab_abi::soc::Board::WormholeN150, None, 1).unwrap();
        let e = p.check(&wh).unwrap_err().to_string();
        assert!(e.contains("2032") && e.contains("2016") && e.contains("trisc1"), "{e}");
        p.check(&Topology::for_board(cqlab_abi::soc::Board::BlackholeP150a, None, 1).unwrap()).unwrap();
        let mut p = Program::new();
        p.add_kernel(big.clone(), &[r]).unwrap();
        p.check(&wh).unwrap();
        // A compute kernel holds all three TRISCs, and each has its stack checked.
        let mut p = Program::new();
        p.add_compute_kernel(image(), &[r]).unwrap();
        p.add_kernel_on(image(), &[r], Processor::Ncrisc).unwrap();
        let e = p.add_kernel_on(image(), &[r], Processor::Trisc2).unwrap_err().to_string();
        assert!(e.contains("trisc2 runs one kernel per program"), "{e}");
        let e = p.add_compute_kernel(image(), &[CoreRange::single(1, 1)]).unwrap_err().to_string();
        assert!(e.contains("trisc0 runs one kernel per program"), "{e}");
        assert_eq!(p.kernels()[0].processors(), Processor::COMPUTE);
        let mut p = Program::new();
        p.add_compute_kernel(big, &[r]).unwrap();
        let e = p.check(&wh).unwrap_err().to_string();
        assert!(e.contains("2032") && e.contains("trisc0"), "{e}");
    }

    #[test]
    fn unique_args_are_laid_out_as_workers_read_them_whatever_order_they_are_set_in() {
        let mut p = Program::new();
        let ranges = [CoreRange::new((0, 0), (2, 1)), CoreRange::single(5, 5)];
        let k = p.add_kernel(image(), &ranges).unwrap();
        p.set_unique_args(k, (1, 0), &[10, 11]).unwrap();
        p.set_unique_args(k, (2, 1), &[20, 21, 22, 23]).unwrap();
        p.set_unique_args(k, (5, 5), &[50]).unwrap();
        p.set_common_args(k, &[7, 8]).unwrap();
        let spec = &p.kernels()[0];
        assert_eq!(spec.unique_count(), 4);
        // Range 0 is 3 x 2 cores, row-major; each core's block 4 words.
        let block: Vec<u32> = super::words(spec.unique_block(0));
        let mut want = vec![0u32; 6 * 4];
        want[4..6].copy_from_slice(&[10, 11]);
        want[20..24].copy_from_slice(&[20, 21, 22, 23]);
        assert_eq!(block, want);
        assert_eq!(super::words(spec.unique_block(1)), vec![50, 0, 0, 0]);
        assert_eq!(spec.common_args(), vec![7, 8]);
        assert_eq!(spec.common_bytes(), [7u8, 0, 0, 0, 8, 0, 0, 0]);
        // The longest core shrinks: every block takes the new stride, and a
        // core's old words beyond its new args read zero.
        p.set_unique_args(k, (2, 1), &[30]).unwrap();
        p.set_unique_args(k, (1, 0), &[40]).unwrap();
        let spec = &p.kernels()[0];
        assert_eq!(spec.unique_count(), 1);
        assert_eq!(super::words(spec.unique_block(0)), vec![0, 40, 0, 0, 0, 30]);
        assert_eq!(super::words(spec.unique_block(1)), vec![50]);
        assert_eq!(spec.unique_args((0, 1)), Some(vec![0]));
        assert_eq!(spec.unique_args((4, 4)), None);
        // A kernel never given unique args has none, on every core.
        let mut q = Program::new();
        q.add_kernel(image(), &ranges).unwrap();
        assert_eq!((q.kernels()[0].unique_count(), q.kernels()[0].unique_args((2, 1))), (0, Some(vec![])));
    }
}
