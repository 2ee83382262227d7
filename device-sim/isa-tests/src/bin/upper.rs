//! ISA test `isa-upper`: lui and auipc.
#![no_std]
#![no_main]

core::arch::global_asm!(include_str!("../../asm/common.S"), include_str!("../../asm/upper.S"));

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    loop {}
}
