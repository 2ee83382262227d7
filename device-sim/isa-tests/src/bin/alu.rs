//! ISA test `isa-alu`: integer register-register and immediate arithmetic/logic, x0 writes.
#![no_std]
#![no_main]
#![allow(unsafe_code)] // firmware HAL: a guest program in assembly (docs/design.md, "Where `unsafe` lives")

core::arch::global_asm!(include_str!("../../asm/common.S"), include_str!("../../asm/alu.S"));

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    loop {}
}
