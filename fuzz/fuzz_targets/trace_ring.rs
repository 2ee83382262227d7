//! Feeds arbitrary bytes to the trace-ring reader as the contents of a
//! core's trace ring (header and records, as a corrupted or hostile device
//! could leave them): it returns records or an error, never panics, and
//! never returns more than the ring holds.
#![no_main]

use cqlab_abi::memory_map::TRACE_RING;
use cqlab_abi::arch::ArchParams;
use cqlab_abi::noc::NocAddr;
use cqlab_abi::soc::{Board, Harvesting};
use cqlab_abi::trace::CAPACITY;
use cqlab_driver::backend::Backend;
use cqlab_driver::{Device, DeviceConfig};
use libfuzzer_sys::fuzz_target;

/// A device whose only content is one core's trace ring, from the input.
struct Ring {
    l1: Vec<u8>,
}

impl Backend for Ring {
    fn name(&self) -> String {
        "fuzzed trace ring".into()
    }
    fn params(&self) -> &'static ArchParams {
        &cqlab_abi::arch::WORMHOLE
    }
    /// A Wormhole n150 (no ARC to ask: every read is the fuzzed ring).
    fn identify(&mut self) -> cqlab_driver::Result<(Board, Harvesting)> {
        Ok((Board::WormholeN150, Board::WormholeN150.default_harvesting()))
    }
    fn write(&mut self, _: NocAddr, _: &[u8]) -> cqlab_driver::Result<()> {
        Ok(())
    }
    fn read(&mut self, addr: NocAddr, buf: &mut [u8]) -> cqlab_driver::Result<()> {
        buf.fill(0);
        let base = TRACE_RING.base as u64;
        for (i, b) in buf.iter_mut().enumerate() {
            let at = addr.local() + i as u64;
            if let Some(v) = at.checked_sub(base).and_then(|o| self.l1.get(o as usize)) {
                *b = *v;
            }
        }
        Ok(())
    }
    fn sysmem_len(&self) -> usize {
        0
    }
    fn sysmem_read(&mut self, _: usize, buf: &mut [u8]) -> cqlab_driver::Result<()> {
        buf.fill(0);
        Ok(())
    }
    fn sysmem_claim(&mut self, offset: usize, len: usize) -> cqlab_driver::Result<&mut [u8]> {
        Err(cqlab_driver::DriverError::Invalid(format!("no sysmem ({len} bytes at {offset})")))
    }
    fn poll(&mut self) -> cqlab_driver::Result<u64> {
        Ok(0)
    }
    fn now(&self) -> u64 {
        0
    }
}

fuzz_target!(|data: &[u8]| {
    let l1 = data[..data.len().min(TRACE_RING.size as usize)].to_vec();
    let ring = Ring { l1 };
    let mut dev = Device::with_backend(Box::new(ring), DeviceConfig::default()).expect("default config is valid");
    let max = data.first().copied().unwrap_or(0) as u32;
    let core = dev.chip().worker(0, 0).expect("an n150 has compute cores");
    if let Ok(t) = dev.read_trace_tail(core, max) {
        assert!(t.records.len() as u32 <= max.min(CAPACITY));
    }
    if let Ok(t) = dev.read_trace(core) {
        assert!(t.records.len() as u32 <= CAPACITY);
    }
});
