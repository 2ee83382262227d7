//! ISA test `isa-ecall-exit`: ecall without tohost exits with a0.
#![no_std]
#![no_main]

core::arch::global_asm!(include_str!("../../asm/ecall_exit.S"));

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    loop {}
}
