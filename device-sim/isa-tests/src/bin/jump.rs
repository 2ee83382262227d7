//! ISA test `isa-jump`: jal/jalr links, targets and bit-0 clearing.
#![no_std]
#![no_main]

core::arch::global_asm!(include_str!("../../asm/common.S"), include_str!("../../asm/jump.S"));

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    loop {}
}
