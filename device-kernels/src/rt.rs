//! Start-up code and panic handler of every firmware image, and the entry
//! of every kernel image.

use crate::boot::set_waypoint;
use crate::hal::{halt, Device};
use cqlab_abi::waypoint::PANIC;

#[panic_handler]
fn panic(_info: &core::panic::PanicInfo) -> ! {
    set_waypoint(&mut Device, PANIC);
    halt()
}

/// Declares the firmware's main function: `cqlab_kernels::entry!(main);`
/// with `fn main() -> !`. Emits the start-up code at the first byte of CODE
/// (see linker/cqlab.x): set the stack (in local memory), zero .bss (the host
/// loads .text/.data; .bss is NOLOAD), run `main`.
#[macro_export]
macro_rules! entry {
    ($main:path) => {
        core::arch::global_asm!(
            r#"
    .section .text.start, "ax"
    .globl _start
_start:
    la sp, __stack_top
    la t0, __bss_start
    la t1, __bss_end
1:
    bgeu t0, t1, 2f
    sw zero, 0(t0)
    addi t0, t0, 4
    j 1b
2:
    call __cqlab_main
3:
    ecall
    j 3b
"#
        );

        // SAFETY: the one symbol the start-up code calls; defined once per image.
        #[unsafe(no_mangle)]
        pub extern "C" fn __cqlab_main() -> ! {
            let main: fn() -> ! = $main;
            main()
        }
    };
}

/// A kernel image: `cqlab_kernels::kernel!(worker::spin);` with a
/// `fn(&mut Device, &KernelCtx)`. The kernel function is the image's first
/// byte (section `.text.kernel_entry`, placed first by linker/kernel.x, as
/// `_kstart`), so the resident worker firmware calls it directly, with a
/// pointer to its `KernelCtx` (C ABI, on the firmware's stack): no
/// trampoline jump on every launch. The image runs from any kernel text slot
/// once the host has relocated its absolute references.
#[macro_export]
macro_rules! kernel {
    ($kernel:expr) => {
        // SAFETY: the image's entry symbol, defined once per image, and the
        // only code in its entry section (so it is the image's first byte).
        #[unsafe(export_name = "_kstart")]
        #[unsafe(link_section = ".text.kernel_entry")]
        pub extern "C" fn __cqlab_kernel(ctx: &cqlab_abi::program::KernelCtx) {
            let kernel: fn(&mut $crate::hal::Device, &cqlab_abi::program::KernelCtx) = $kernel;
            kernel(&mut $crate::hal::Device, ctx)
        }

        /// The image's own entry address: every image carries at least one
        /// relocation (this one), so the host can tell an image linked
        /// without `--emit-relocs` from one whose code needs none.
        #[used]
        static KERNEL_ENTRY: extern "C" fn(&cqlab_abi::program::KernelCtx) = __cqlab_kernel;
    };
}

/// A kernel image padded with `bytes` of read-only data, so kernels of a
/// given binary size exist for dispatch benchmarks (the padding is uploaded
/// like any other kernel text).
#[macro_export]
macro_rules! padded_kernel {
    ($kernel:expr, $bytes:expr) => {
        $crate::kernel!($kernel);

        #[used]
        #[unsafe(link_section = ".kernel_pad")]
        static KERNEL_PAD: [u8; $bytes] = [0xA5; $bytes];
    };
}

/// The resident worker firmware image: boots, then serves launches,
/// calling each kernel at its slot: `cqlab_kernels::worker_firmware!();`
#[macro_export]
macro_rules! worker_firmware {
    () => {
        $crate::entry!(main);

        fn main() -> ! {
            use $crate::hal::{core_xy, cycle, Device};
            let mut dev = Device;
            let id = cqlab_abi::firmware::FirmwareId::Worker;
            $crate::boot::announce(&mut dev, id, core_xy(), $crate::build_id(), cycle());
            $crate::worker::serve(&mut dev, |_, entry, ctx| $crate::hal::call_kernel(entry, ctx))
        }
    };
}

/// A command-queue firmware image (`Prefetcher` or `Dispatcher`): boots,
/// reads its `CqConfig` and runs: `cqlab_kernels::cq_firmware!(Prefetch, Prefetcher);` with the type in scope.
#[macro_export]
macro_rules! cq_firmware {
    ($id:ident, $core:ident) => {
        $crate::entry!(main);

        fn main() -> ! {
            use $crate::hal::{core_xy, cycle, Device};
            use $crate::memory::Memory;
            let mut dev = Device;
            let id = cqlab_abi::firmware::FirmwareId::$id;
            $crate::boot::announce(&mut dev, id, core_xy(), $crate::build_id(), cycle());
            let cfg: cqlab_abi::mailbox::CqConfig = dev.read_struct(cqlab_abi::mailbox::CQ_CONFIG);
            <$core<_>>::new(&mut dev, cfg).run()
        }
    };
}
