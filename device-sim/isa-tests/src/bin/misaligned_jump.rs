//! ISA test `isa-misaligned-jump`: a jump to a 2-aligned address halts the hart.
#![no_std]
#![no_main]
#![allow(unsafe_code)] // firmware HAL: a guest program in assembly (docs/design.md, "Where `unsafe` lives")

core::arch::global_asm!(include_str!("../../asm/common.S"), include_str!("../../asm/misaligned_jump.S"));

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    loop {}
}
