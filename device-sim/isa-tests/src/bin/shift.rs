//! ISA test `isa-shift`: shifts, sign fill, shift amounts masked to 5 bits.
#![no_std]
#![no_main]

core::arch::global_asm!(include_str!("../../asm/common.S"), include_str!("../../asm/shift.S"));

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    loop {}
}
