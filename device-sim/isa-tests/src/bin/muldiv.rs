//! ISA test `isa-muldiv`: RV32M multiply, divide, remainder, division by zero and overflow.
#![no_std]
#![no_main]

core::arch::global_asm!(include_str!("../../asm/common.S"), include_str!("../../asm/muldiv.S"));

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    loop {}
}
