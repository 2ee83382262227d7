//! ISA test `isa-ecall-exit`: ecall without tohost exits with a0.
#![no_std]
#![no_main]
#![allow(unsafe_code)] // firmware HAL: a guest program in assembly (docs/design.md, "Where `unsafe` lives")

core::arch::global_asm!(include_str!("../../asm/ecall_exit.S"));

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    loop {}
}
