//! ISA test `isa-smc`: stores into already-executed code take effect.
#![no_std]
#![no_main]
#![allow(unsafe_code)] // firmware HAL: a guest program in assembly (docs/design.md, "Where `unsafe` lives")

core::arch::global_asm!(include_str!("../../asm/common.S"), include_str!("../../asm/smc.S"));

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    loop {}
}
