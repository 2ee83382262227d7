//! Host memory the chip does not hold (`Sysmem::Host`, a libttsim host's
//! DMA callbacks): device writes and reads reach the host access by access,
//! and a host that unwinds out of an access (a C++ exception through the
//! callback) loses that access only; the chip runs on.

use super::tests::{boot, halted, host, niu, tiles, BOARDS};
use super::*;
use crate::asm::ECALL;
use crate::memory::HostMemory;
use cqlab_abi::memory_map::USER;
use cqlab_abi::soc::Board;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex};

/// Host memory in a vector, logging each access; an access at `refuse`
/// unwinds as a host's exception would.
struct TestHost {
    mem: Mutex<Vec<u8>>,
    log: Mutex<Vec<(&'static str, u64, usize)>>,
    refuse: Option<u64>,
}

impl TestHost {
    fn check(&self, what: &'static str, offset: u64, len: usize) {
        self.log.lock().unwrap().push((what, offset, len));
        if self.refuse.is_some_and(|r| (offset..offset + len as u64).contains(&r)) {
            panic!("the host refuses a {what} at {offset:#x}");
        }
    }
}

impl HostMemory for Arc<TestHost> {
    fn len(&self) -> usize {
        self.mem.lock().unwrap().len()
    }
    fn read(&self, offset: u64, buf: &mut [u8]) {
        self.check("read", offset, buf.len());
        let mem = self.mem.lock().unwrap();
        buf.copy_from_slice(&mem[offset as usize..offset as usize + buf.len()]);
    }
    fn write(&self, offset: u64, data: &[u8]) {
        self.check("write", offset, data.len());
        self.mem.lock().unwrap()[offset as usize..offset as usize + data.len()].copy_from_slice(data);
    }
}

fn chip_on(board: Board, refuse: Option<u64>) -> (Chip, Arc<TestHost>) {
    let cfg = super::tests::small(board);
    let h = Arc::new(TestHost { mem: Mutex::new(vec![0; cfg.sysmem_size]), log: Mutex::default(), refuse });
    let chip = Chip::with_sysmem(cfg, Sysmem::Host(Box::new(h.clone()))).unwrap();
    (chip, h)
}

/// A core writes 64 bytes of its L1 to host offset `to`, then reads host
/// offset `from` back into L1 `USER + 0x200`, then halts.
fn round_trip(chip: &Chip, w: Coord, to: u64, from: u64) -> Vec<u32> {
    let niu = niu(chip, Noc::Noc0);
    let mut p = niu.write(w, USER.base, host(chip, to), 64);
    p.extend(niu.wait_counter(counter::NIU_MST_WR_ACK_RECEIVED, 1));
    p.extend(niu.read(w, host(chip, from), USER.base + 0x200, 64, 0));
    p.extend(niu.wait_counter(counter::NIU_MST_RD_RESP_RECEIVED, 1));
    p.push(ECALL);
    p
}

#[test]
fn device_dma_reaches_the_hosts_memory_access_by_access() {
    for board in BOARDS {
        let (mut chip, h) = chip_on(board, None);
        let w = tiles(&chip)[2];
        let payload: Vec<u8> = (0..64u8).map(|i| i ^ 0x5a).collect();
        chip.write(NocAddr::unicast(w, USER.base as u64), &payload).unwrap();
        let p = round_trip(&chip, w, 0x3000, 0x3000);
        boot(&mut chip, w, &p);
        chip.run_until(|c| halted(c, w), 100_000).unwrap();
        assert_eq!(&h.mem.lock().unwrap()[0x3000..0x3040], &payload[..], "{board}");
        let mut back = [0u8; 64];
        chip.read(NocAddr::unicast(w, USER.base as u64 + 0x200), &mut back).unwrap();
        assert_eq!(&back[..], &payload[..], "{board}: read back from the host");
        let log = h.log.lock().unwrap().clone();
        assert_eq!(log.first(), Some(&("write", 0x3000, 64)), "{board}");
        assert!(log.iter().any(|&(k, o, _)| k == "read" && o == 0x3000), "{board}: {log:?}");
        // The host's memory is not device state: the digest does not read it.
        let n = log.len();
        let _ = chip.digest();
        assert_eq!(h.log.lock().unwrap().len(), n, "{board}");
        // Host accesses through the chip reach it too.
        chip.write_u32(host(&chip, 0x10), 0xabcd).unwrap();
        assert_eq!(chip.read_u32(host(&chip, 0x10)).unwrap(), 0xabcd);
    }
}

#[test]
fn a_host_that_unwinds_loses_that_access_and_the_chip_runs_on() {
    for board in BOARDS {
        // The write to 0x4000 and the read back from it are both refused.
        let (mut chip, h) = chip_on(board, Some(0x4000));
        let w = tiles(&chip)[1];
        chip.write(NocAddr::unicast(w, USER.base as u64), &[7; 64]).unwrap();
        chip.write(NocAddr::unicast(w, USER.base as u64 + 0x200), &[9; 64]).unwrap();
        let p = round_trip(&chip, w, 0x4000, 0x4000);
        boot(&mut chip, w, &p);
        let mut unwound = 0;
        let done = loop {
            match catch_unwind(AssertUnwindSafe(|| chip.run_until(|c| halted(c, w), 100_000))) {
                Ok(r) => break r,
                Err(_) => unwound += 1,
            }
            assert!(unwound < 10, "{board}: unwinding for ever");
        };
        done.unwrap();
        assert!(unwound >= 2, "{board}: the write and the read both unwound through the chip ({unwound})");
        assert!(h.mem.lock().unwrap()[0x4000..0x4040].iter().all(|&b| b == 0), "{board}: the write did not land");
        // The chip ran on: the write was acknowledged (it reached the PCIe
        // tile), the read completed without data (its destination is as it
        // was), the core halted normally, nothing is left in flight.
        let mut back = [0u8; 64];
        chip.read(NocAddr::unicast(w, USER.base as u64 + 0x200), &mut back).unwrap();
        assert_eq!(back, [9; 64], "{board}");
        let halt = chip.core_debug(super::tests::brisc(w)).unwrap().halt.map(|h| h.reason);
        assert_eq!(halt, Some(crate::hart::HaltReason::Ecall), "{board}");
        assert_eq!(chip.in_flight(), 0, "{board}");
    }
}
