//! Programs: kernels placed on core ranges with their runtime arguments,
//! what `CommandQueue::enqueue_program` dispatches.
//!
//! ```ignore
//! let spin = Arc::new(KernelImage::load(&dir.join("spin"))?);
//! let mut program = Program::new();
//! let k = program.add_kernel(spin, &[CoreRange::new((0, 0), (3, 3))])?;
//! program.set_common_args(k, &[1000])?;
//! program.set_unique_args(k, (2, 1), &[7, 8])?;
//! cq.enqueue_program(&program)?;
//! ```

use crate::command_queue::CoreRange;
use crate::error::{DriverError, Result};
use crate::kernel::KernelImage;
use cqlab_abi::program::{MAX_COMMON_ARGS, MAX_KERNEL_GROUPS, MAX_UNIQUE_ARGS};
use std::collections::HashMap;
use std::sync::Arc;

/// One kernel of a program.
#[derive(Clone, Debug)]
pub struct KernelSpec {
    pub image: Arc<KernelImage>,
    /// Rectangles it runs on (each becomes one kernel group).
    pub ranges: Vec<CoreRange>,
    /// Unique args by logical core; cores without an entry get zeroes.
    pub unique: HashMap<(u8, u8), Vec<u32>>,
    /// Args every core of the kernel sees (written once per range, multicast).
    pub common: Vec<u32>,
}

impl KernelSpec {
    /// Unique words per core: the longest any core of the kernel has.
    pub fn unique_count(&self) -> u32 {
        self.unique.values().map(|v| v.len() as u32).max().unwrap_or(0)
    }
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

    /// Places `image` on `ranges`. A core runs at most one kernel per
    /// program, and a program names at most `MAX_KERNEL_GROUPS` ranges.
    pub fn add_kernel(&mut self, image: Arc<KernelImage>, ranges: &[CoreRange]) -> Result<KernelHandle> {
        if ranges.is_empty() {
            return Err(DriverError::Invalid(format!("kernel {} placed on no core range", image.name)));
        }
        let groups = self.kernels.iter().map(|k| k.ranges.len()).sum::<usize>() + ranges.len();
        if groups > MAX_KERNEL_GROUPS {
            return Err(DriverError::Invalid(format!(
                "a program names at most {MAX_KERNEL_GROUPS} core ranges, this one {groups}"
            )));
        }
        for (i, r) in ranges.iter().enumerate() {
            if r.start.0 > r.end.0 || r.start.1 > r.end.1 {
                return Err(DriverError::OutOfRange { what: "core range", detail: format!("{r:?} is empty") });
            }
            let mut earlier = self.kernels.iter().flat_map(|k| k.ranges.iter()).chain(&ranges[..i]);
            if let Some(o) = earlier.find(|o| overlaps(o, r)) {
                return Err(DriverError::Invalid(format!(
                    "core ranges {o:?} and {r:?} overlap: a core runs one kernel per program"
                )));
            }
        }
        self.kernels.push(KernelSpec { image, ranges: ranges.to_vec(), unique: HashMap::new(), common: Vec::new() });
        Ok(KernelHandle(self.kernels.len() - 1))
    }

    /// Args every core of kernel `k` sees (at most `MAX_COMMON_ARGS` words).
    pub fn set_common_args(&mut self, k: KernelHandle, args: &[u32]) -> Result<()> {
        if args.len() > MAX_COMMON_ARGS as usize {
            return Err(DriverError::Invalid(format!("{} common args (at most {MAX_COMMON_ARGS})", args.len())));
        }
        self.kernel(k)?.common = args.to_vec();
        Ok(())
    }

    /// Args of one core of kernel `k` (at most `MAX_UNIQUE_ARGS` words).
    pub fn set_unique_args(&mut self, k: KernelHandle, core: (u8, u8), args: &[u32]) -> Result<()> {
        if args.len() > MAX_UNIQUE_ARGS as usize {
            return Err(DriverError::Invalid(format!("{} unique args (at most {MAX_UNIQUE_ARGS})", args.len())));
        }
        let spec = self.kernel(k)?;
        if !spec.ranges.iter().any(|r| contains(r, core)) {
            return Err(DriverError::OutOfRange {
                what: "unique args",
                detail: format!("core {core:?} is not in the ranges of kernel {}", spec.image.name),
            });
        }
        spec.unique.insert(core, args.to_vec());
        Ok(())
    }

    pub fn kernels(&self) -> &[KernelSpec] {
        &self.kernels
    }

    fn kernel(&mut self, k: KernelHandle) -> Result<&mut KernelSpec> {
        let n = self.kernels.len();
        self.kernels.get_mut(k.0).ok_or_else(|| DriverError::Invalid(format!("kernel handle {} of {n}", k.0)))
    }

    /// Checks every range against a `cols` x `rows` grid.
    pub(crate) fn check_grid(&self, cols: u8, rows: u8) -> Result<()> {
        if self.kernels.is_empty() {
            return Err(DriverError::Invalid("a program without kernels".into()));
        }
        for r in self.kernels.iter().flat_map(|k| k.ranges.iter()) {
            if r.end.0 >= cols || r.end.1 >= rows {
                return Err(DriverError::OutOfRange {
                    what: "core range",
                    detail: format!("{r:?} on a {cols}x{rows} grid"),
                });
            }
        }
        Ok(())
    }
}

pub(crate) fn contains(r: &CoreRange, (c, row): (u8, u8)) -> bool {
    (r.start.0..=r.end.0).contains(&c) && (r.start.1..=r.end.1).contains(&row)
}

fn overlaps(a: &CoreRange, b: &CoreRange) -> bool {
    a.start.0 <= b.end.0 && b.start.0 <= a.end.0 && a.start.1 <= b.end.1 && b.start.1 <= a.end.1
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
        assert!(p.check_grid(4, 4).is_err());
        p.check_grid(8, 8).unwrap();
    }
}
