//! Start-up code and panic handler of every firmware image.

use crate::boot::set_waypoint;
use crate::hal::{halt, Device};
use cqlab_abi::waypoint::PANIC;

// Entry at the first byte of CODE (see linker/cqlab.x): set the stack, zero
// .bss (the host loads .text/.data; .bss is NOLOAD), run the firmware.
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

#[panic_handler]
fn panic(_info: &core::panic::PanicInfo) -> ! {
    set_waypoint(&mut Device, PANIC);
    halt()
}

/// Declares the firmware's main function: `cqlab_kernels::entry!(main);`
/// with `fn main() -> !`.
#[macro_export]
macro_rules! entry {
    ($main:path) => {
        // SAFETY: the one symbol the start-up code calls; defined once per image.
        #[unsafe(no_mangle)]
        pub extern "C" fn __cqlab_main() -> ! {
            let main: fn() -> ! = $main;
            main()
        }
    };
}

/// A worker firmware image: boots, then serves launches with `kernel`
/// (`fn(&mut Device, &LaunchMsg)`): `cqlab_kernels::worker_firmware!(Spin, worker::spin);`
#[macro_export]
macro_rules! worker_firmware {
    ($id:ident, $kernel:expr) => {
        $crate::entry!(main);

        fn main() -> ! {
            use $crate::hal::{core_xy, cycle, Device};
            let mut dev = Device;
            let id = cqlab_abi::firmware::FirmwareId::$id;
            $crate::boot::announce(&mut dev, id, core_xy(), $crate::build_id(), cycle());
            $crate::worker::serve(&mut dev, id, $kernel)
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
