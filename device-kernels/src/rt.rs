//! Start-up code and panic handlers of every firmware image, and the entry
//! of every kernel image.
#![allow(unsafe_code)] // firmware HAL: docs/design.md, "Where `unsafe` lives"

/// Declares the firmware's main function, the core it runs on and the
/// image's role: `cqlab_kernels::entry!(main, Brisc, FirmwareId::Worker);`
/// with `fn main() -> !` and a `hal` device type. Emits the start-up code at the first byte of the
/// core's code region (`memory_map::firmware_entry`, see linker/cqlab.x):
/// jump over the image's id (`cqlab_abi::boot::IMAGE_ID_OFFSET`), set the stack (in local memory, below the NOC state), zero .bss (the
/// host loads .text/.data; .bss is NOLOAD), run `main`; and the panic
/// handler, which shows `PANC` in the core's waypoint and halts.
#[macro_export]
macro_rules! entry {
    ($main:path, $device:ident, $id:expr) => {
        core::arch::global_asm!(
            r#"
    .section .text.start, "ax"
    .globl _start
_start:
    j 0f
    .word {magic}, {abi}, {arch}, {id}
0:
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
"#,
            magic = const cqlab_abi::boot::IMAGE_MAGIC,
            abi = const cqlab_abi::ABI_VERSION,
            arch = const cqlab_abi::boot::image_arch_code($crate::CHIP.arch),
            id = const $id as u32,
        );

        // SAFETY: the one symbol the start-up code calls; defined once per image.
        #[unsafe(no_mangle)]
        pub extern "C" fn __cqlab_main() -> ! {
            let main: fn() -> ! = $main;
            main()
        }

        #[panic_handler]
        fn panic(_info: &core::panic::PanicInfo) -> ! {
            $crate::report::waypoint(&mut $crate::hal::$device::default(), cqlab_abi::waypoint::PANIC);
            $crate::hal::halt()
        }
    };
}

/// A kernel image: `cqlab_kernels::kernel!(worker::spin);` with a
/// `fn(&mut impl Platform, &KernelCtx)`. The kernel function is the image's
/// first byte (section `.text.kernel_entry`, placed first by
/// linker/kernel.x, as `_kstart`), so the resident worker firmware calls
/// it directly, with a pointer to its `KernelCtx` (C ABI): no trampoline
/// jump on every launch. The image runs from any kernel text slot once the
/// host has relocated its absolute references, on any core of a tile:
/// `KernelCtx::processor` picks the core's device (BRISC NOC0, NCRISC
/// NOC1, a TRISC none). A kernel that panics halts its core; the waypoint
/// of its core shows what the firmware showed when it called it.
///
/// The image's id (the firmware's three words, see [`entry!`]) is in a
/// section the image does not load, `cqlab_abi::boot::KERNEL_ID_SECTION`
/// (flags `""`: not allocated; kept by linker/kernel.x): no loaded byte
/// moves for it, and the host refuses a kernel of another ABI or chip by it.
#[macro_export]
macro_rules! kernel {
    ($kernel:path) => {
        core::arch::global_asm!(
            r#"
    .pushsection .cqlab.image_id, "", @progbits
    .p2align 2
    .word {magic}, {abi}, {arch}
    .popsection
"#,
            magic = const cqlab_abi::boot::IMAGE_MAGIC,
            abi = const cqlab_abi::ABI_VERSION,
            arch = const cqlab_abi::boot::image_arch_code($crate::CHIP.arch),
        );

        // SAFETY: the image's entry symbol, defined once per image, and the
        // only code in its entry section (so it is the image's first byte).
        #[unsafe(export_name = "_kstart")]
        #[unsafe(link_section = ".text.kernel_entry")]
        pub extern "C" fn __cqlab_kernel(ctx: &cqlab_abi::program::KernelCtx) {
            match ctx.processor {
                0 => $kernel(&mut $crate::hal::Brisc::default(), ctx),
                1 => $kernel(&mut $crate::hal::Ncrisc::default(), ctx),
                2 => $kernel(&mut $crate::hal::Trisc0::default(), ctx),
                3 => $kernel(&mut $crate::hal::Trisc1::default(), ctx),
                _ => $kernel(&mut $crate::hal::Trisc2::default(), ctx),
            }
        }

        /// The image's own entry address: every image carries at least one
        /// relocation (this one), so the host can tell an image linked
        /// without `--emit-relocs` from one whose code needs none.
        #[used]
        static KERNEL_ENTRY: extern "C" fn(&cqlab_abi::program::KernelCtx) = __cqlab_kernel;

        #[panic_handler]
        fn panic(_info: &core::panic::PanicInfo) -> ! {
            $crate::hal::halt()
        }
    };
}

/// A kernel image padded with `bytes` of read-only data, so kernels of a
/// given binary size exist for dispatch benchmarks (the padding is uploaded
/// like any other kernel text).
#[macro_export]
macro_rules! padded_kernel {
    ($kernel:path, $bytes:expr) => {
        $crate::kernel!($kernel);

        // SAFETY: read-only padding that `linker/kernel.x` keeps at the end
        // of the image's read-only data; nothing refers to it by address.
        #[used]
        #[unsafe(link_section = ".kernel_pad")]
        static KERNEL_PAD: [u8; $bytes] = [0xA5; $bytes];
    };
}

/// BRISC's resident worker firmware: boots the tile (its subordinate cores
/// included), then serves launches, calling each kernel at its slot:
/// `cqlab_kernels::worker_firmware!();`
#[macro_export]
macro_rules! worker_firmware {
    () => {
        $crate::entry!(main, Brisc, cqlab_abi::firmware::FirmwareId::Worker);

        fn main() -> ! {
            let mut dev = $crate::hal::Brisc::default();
            dev.noc_init();
            $crate::worker::boot_brisc(&mut dev, $crate::build_id(), |_| $crate::hal::release_subordinates());
            $crate::worker::serve(&mut dev, |_, entry, ctx| $crate::hal::call_kernel(entry, ctx))
        }
    };
}

/// The worker firmware of a subordinate core (`Ncrisc`, `Trisc0`..`Trisc2`):
/// `cqlab_kernels::subordinate_firmware!(Ncrisc);`
#[macro_export]
macro_rules! subordinate_firmware {
    ($device:ident) => {
        $crate::entry!(main, $device, cqlab_abi::firmware::FirmwareId::worker($crate::hal::$device::PROCESSOR));

        fn main() -> ! {
            let mut dev = $crate::hal::$device::default();
            dev.noc_init();
            let processor = $crate::hal::$device::PROCESSOR;
            $crate::worker::subordinate(&mut dev, processor, $crate::build_id(), |_, entry, ctx| {
                $crate::hal::call_kernel(entry, ctx)
            })
        }
    };
}

/// A command-queue firmware image (`Prefetcher` or `Dispatcher`) on BRISC:
/// boots, checks its `NocMap`, reads its `CqConfig` and runs:
/// `cqlab_kernels::cq_firmware!(Prefetch, Prefetcher);` with the type in scope.
#[macro_export]
macro_rules! cq_firmware {
    ($id:ident, $core:ident) => {
        $crate::entry!(main, Brisc, cqlab_abi::firmware::FirmwareId::$id);

        fn main() -> ! {
            use $crate::memory::Memory;
            use $crate::platform::Platform;
            let mut dev = $crate::hal::Brisc::default();
            dev.noc_init();
            let id = cqlab_abi::firmware::FirmwareId::$id;
            $crate::report::waypoint(&mut dev, cqlab_abi::waypoint::BOOT);
            $crate::places::check(&mut dev);
            let (xy, cycle) = (dev.core_xy(), dev.cycle());
            $crate::boot::announce(&mut dev, id, xy, $crate::build_id(), cycle);
            let cfg: cqlab_abi::mailbox::CqConfig = dev.read_struct(cqlab_abi::mailbox::CQ_CONFIG);
            <$core<_>>::new(&mut dev, cfg).run()
        }
    };
}
