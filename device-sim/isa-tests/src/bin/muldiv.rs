//! ISA test `isa-muldiv`: RV32M multiply, divide, remainder, division by zero and overflow.
#![no_std]
#![no_main]
#![allow(unsafe_code)] // firmware HAL: a guest program in assembly (docs/design.md, "Where `unsafe` lives")

core::arch::global_asm!(include_str!("../../asm/common.S"), include_str!("../../asm/muldiv.S"));

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    loop {}
}
