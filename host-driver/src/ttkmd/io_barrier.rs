//! The I/O barriers of the hardware path.
//!
//! The write barrier ([`io_write_barrier`]): every store this thread issued before it, to
//! pinned host memory (cacheable, read by the card's DMA) or through a TLB window (device
//! memory), reaches its observer before any access after it, to device memory or host memory.
//! The tt-kmd backend runs it between the bytes it publishes and the word that publishes them
//! (a fetch-queue entry after the issue-ring bytes it names; a write's last word after the rest:
//! `super::backend`), as Linux's `writel` runs `__iowmb()` before its store. The read barrier
//! ([`io_read_barrier`]) is its counterpart after a load of a word the device wrote.
//!
//! `std::sync::atomic::fence` is no such barrier: it orders memory among CPUs, which on aarch64
//! is `dmb ish` (inner shareable: a PCIe device is outside that domain) and on riscv64 `fence
//! rw,rw` (no device input or output in either set). Each instruction below is the one Linux
//! uses for the same job, cited beside it. Other architectures are refused at compile time
//! rather than given a CPU-only fence that would compile and silently not order the doorbell.
#![allow(unsafe_code)] // BAR/mmap layer: docs/design.md, "Where `unsafe` lives"

/// Orders every earlier store before every later access (module docs).
#[inline]
pub(crate) fn io_write_barrier() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `mfence` only waits for earlier loads and stores (write-combining buffers
    // included) to be globally visible; it touches no register or memory of ours. Without
    // `nomem` the asm is also a compiler barrier: no access moves across it.
    unsafe {
        // What this path always ran (`fence(SeqCst)` compiles to it on x86-64). Stores to
        // write-back and uncached memory are already kept in order by x86; `mfence` also drains
        // write-combining buffers, which Linux's `wmb()` does with `sfence`
        // (arch/x86/include/asm/barrier.h).
        core::arch::asm!("mfence", options(nostack, preserves_flags));
    }
    #[cfg(target_arch = "aarch64")]
    // SAFETY: `dsb st` only waits for earlier stores to complete; it touches no register or
    // memory of ours, and without `nomem` is a compiler barrier too.
    unsafe {
        // Linux's `wmb()`: `__wmb()` is `dsb(st)` (arch/arm64/include/asm/barrier.h). `writel`'s
        // own `__iowmb()` is `dma_wmb()`, `dmb(oshst)` (arch/arm64/include/asm/io.h), which orders
        // Normal memory stores (pinned sysmem) before a Device store; `dsb st` is a superset of
        // it (full system, and completes rather than orders), which write-combined (Normal-NC)
        // stores before a Device store need, and, as a DSB holds every later instruction until
        // the stores complete, it also keeps a later uncached read behind them.
        core::arch::asm!("dsb st", options(nostack, preserves_flags));
    }
    #[cfg(target_arch = "riscv64")]
    // SAFETY: `fence` only orders earlier accesses before later ones; it touches no register or
    // memory of ours, and without `nomem` is a compiler barrier too.
    unsafe {
        // Predecessors `ow`: Linux's `wmb()` is `RISCV_FENCE(ow,ow)` (arch/riscv/include/asm/
        // barrier.h), a superset of `writel`'s `__io_bw()`, `RISCV_FENCE(w,o)`
        // (arch/riscv/include/asm/io.h): memory writes (pinned sysmem; a Svpbmt NC, i.e.
        // write-combined, mapping is memory) and device output (an IO-typed window). Successors
        // `iorw` rather than `ow`: the backend also runs this before an uncached read that must
        // see those stores, so device input and memory reads are held back as well.
        core::arch::asm!("fence ow, iorw", options(nostack, preserves_flags));
    }
    #[cfg(test)]
    order_log::record(order_log::Access::Barrier);
}

/// Orders a load of a word the device wrote (a queue pointer in pinned sysmem) before every
/// access after it: the records that pointer publishes are read after it, and ring space it
/// frees is written after it. `Ordering::Acquire` is no such barrier for a device either: it is
/// `dmb ishld` (or `ldar`) on aarch64 and `fence r,rw` on riscv64, ordered for the inner
/// shareable domain and for memory alone.
#[inline]
pub(crate) fn io_read_barrier() {
    // x86 keeps loads in order with later loads and stores: Linux's `dma_rmb()` there is
    // `barrier()`, the compiler's alone (arch/x86/include/asm/barrier.h).
    #[cfg(target_arch = "x86_64")]
    std::sync::atomic::compiler_fence(std::sync::atomic::Ordering::SeqCst);
    #[cfg(target_arch = "aarch64")]
    // SAFETY: `dmb oshld` only orders earlier loads before later loads and stores; it touches
    // no register or memory of ours, and without `nomem` is a compiler barrier too.
    unsafe {
        // Linux's `dma_rmb()`: `__dma_rmb()` is `dmb(oshld)` (arch/arm64/include/asm/barrier.h),
        // outer shareable, the domain a PCIe device writes in.
        core::arch::asm!("dmb oshld", options(nostack, preserves_flags));
    }
    #[cfg(target_arch = "riscv64")]
    // SAFETY: `fence` only orders earlier accesses before later ones; it touches no register or
    // memory of ours, and without `nomem` is a compiler barrier too.
    unsafe {
        // Predecessors `ir` as Linux's `rmb()`, `RISCV_FENCE(ir,ir)` (arch/riscv/include/asm/
        // barrier.h; `dma_rmb()` falls back to it, include/asm-generic/barrier.h). Successors
        // `iorw` rather than `ir`: after the issue ring's read pointer the host writes the
        // space it frees, and RISC-V lets a later store pass an earlier load.
        core::arch::asm!("fence ir, iorw", options(nostack, preserves_flags));
    }
    #[cfg(test)]
    order_log::record(order_log::Access::ReadBarrier);
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64", target_arch = "riscv64")))]
compile_error!(
    "the tt-kmd backend needs its I/O barriers for this architecture (host-driver/src/ttkmd/io_barrier.rs): \
     add the instructions Linux's wmb() and dma_rmb() use, or build without the `ttkmd` feature"
);

/// Tests only: the order in which this thread stored to host memory, stored to device memory
/// and ran the barrier, so a test can check that the barrier sits between the bytes and the
/// word that publishes them (the order itself is what the barrier is for, and no memory
/// inspection after the fact can see it).
#[cfg(test)]
pub(crate) mod order_log {
    use std::cell::RefCell;

    /// One access, as the BAR/mmap layer issued it.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub(crate) enum Access {
        /// Bytes copied into pinned host memory.
        HostMemory,
        /// [`super::io_write_barrier`].
        Barrier,
        /// A 32-bit word of pinned memory the device writes (a queue pointer), loaded whole.
        DeviceWrittenWord,
        /// [`super::io_read_barrier`].
        ReadBarrier,
        /// A 32-bit store through a window.
        DeviceWord,
        /// A run of words through a window, of this many bytes.
        DeviceBlock(usize),
    }

    thread_local! {
        static LOG: RefCell<Vec<Access>> = const { RefCell::new(Vec::new()) };
    }

    pub(crate) fn record(access: Access) {
        LOG.with(|log| log.borrow_mut().push(access));
    }

    /// What this thread did since the last call.
    pub(crate) fn take() -> Vec<Access> {
        LOG.with(|log| std::mem::take(&mut *log.borrow_mut()))
    }
}
