//! ISA test `isa-smc`: stores into already-executed code take effect.
#![no_std]
#![no_main]

core::arch::global_asm!(include_str!("../../asm/common.S"), include_str!("../../asm/smc.S"));

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    loop {}
}
