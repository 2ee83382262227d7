//! What each fuzz target checks, one function a target: the cargo-fuzz
//! binaries (`fuzz_targets/*.rs`, nightly, coverage-guided) and the stable
//! replay of the checked-in corpus in `cargo xtask test`
//! (`tools/cqlab/tests/fuzz_corpus.rs`) include this file, so both run the
//! same checks. Every function takes arbitrary bytes and panics only on a
//! finding.

// Each fuzz binary calls one of these.
#![allow(dead_code)]

use cqlab_abi::arch::{Arch, ArchParams};
use cqlab_abi::decode::{decode_dispatch_partial, DispatchStream, PrefetchHeader, PrefetchStream};
use cqlab_abi::firmware::FirmwareId;
use cqlab_abi::memory_map::TRACE_RING;
use cqlab_abi::noc::NocAddr;
use cqlab_abi::soc::{Board, Harvesting};
use cqlab_abi::trace::CAPACITY;
use cqlab_driver::backend::spec::Spec;
use cqlab_driver::backend::Backend;
use cqlab_driver::daemon_backend::DaemonBackend;
use cqlab_driver::elf::FirmwareImage;
use cqlab_driver::{Device, DeviceConfig, KernelImage};
use cqlab_sim::daemon::proto::{read_frame, ChipInfo, CoreView, L0View, Reply, Request, Status};
use cqlab_sim::elf::ElfImage;
use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;

/// `decode`: every decoder entry point takes arbitrary bytes without a
/// panic, and so does the text form of each header it decodes (what
/// `cqlab decode` lists).
pub fn decode(data: &[u8]) {
    for cmd in PrefetchStream::new(data).flatten() {
        std::hint::black_box(cmd.1.header.to_string());
        if let PrefetchHeader::RelayInline { .. } = cmd.1.header {
            for (_, d) in DispatchStream::new(cmd.1.payload).flatten() {
                std::hint::black_box(d.header.to_string());
            }
        }
    }
    DispatchStream::new(data).for_each(drop);
    let mut at = 0;
    while let Ok((_, next)) = decode_dispatch_partial(data, at) {
        if next <= at {
            break;
        }
        at = next;
    }
}

/// `elf`: the ELF loaders (the simulator's `ElfImage`, the driver's
/// `FirmwareImage` and `KernelImage`) accept or refuse, never panic.
pub fn elf(data: &[u8]) {
    if let Ok(image) = ElfImage::parse(data) {
        let _ = image.symbol("tohost");
    }
    // Each image is checked against its core's code and data regions.
    for id in FirmwareId::ALL {
        for arch in Arch::ALL {
            let _ = FirmwareImage::parse("fuzz", data, id, arch);
        }
    }
    // A kernel: its id section, segments and relocations.
    for arch in Arch::ALL {
        let _ = KernelImage::parse("fuzz", data, arch);
    }
}

/// `daemon_proto`: the daemon's frames, requests, replies and reply bodies
/// decode or refuse without a panic, and whatever decodes encodes back to
/// the same value.
pub fn daemon_proto(data: &[u8]) {
    let mut stream = data;
    while let Ok(Some(frame)) = read_frame(&mut stream) {
        let _ = Request::decode(&frame);
    }
    if let Ok(req) = Request::decode(data) {
        assert_eq!(Request::decode(&req.encode()), Ok(req));
    }
    if let Ok(rep) = Reply::decode(data) {
        assert_eq!(Reply::decode(&rep.encode()), Ok(rep));
    }
    if let Ok(info) = ChipInfo::decode(data) {
        assert_eq!(ChipInfo::decode(&info.encode()), Ok(info));
    }
    if let Ok(view) = CoreView::decode(data) {
        assert_eq!(CoreView::decode(&CoreView::encode(view.as_ref())), Ok(view));
    }
    if let Ok(view) = L0View::decode(data) {
        assert_eq!(L0View::decode(&L0View::encode(view.as_ref())), Ok(view));
    }
    if let Ok(status) = Status::decode(data) {
        assert_eq!(Status::decode(&status.encode()), Ok(status));
    }
}

/// `device_spec`: the device-spec parser (`embedded:...`,
/// `sim:PATH?wait=SECS`, `/dev/...`) parses or refuses, never panics.
pub fn device_spec(data: &[u8]) {
    if let Ok(s) = std::str::from_utf8(data) {
        if let Ok(Spec::Daemon { rest }) = Spec::parse(s) {
            let _ = DaemonBackend::parse_spec(&rest);
        }
    }
}

/// A device whose only content is one core's trace ring.
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

/// `trace_ring`: the trace-ring reader, given arbitrary bytes as a core's
/// trace ring (header and records, as a corrupted or hostile device could
/// leave them), returns records or an error, never panics, and never
/// returns more records than the ring holds.
pub fn trace_ring(data: &[u8]) {
    let ring = Ring { l1: data[..data.len().min(TRACE_RING.size as usize)].to_vec() };
    let mut dev = Device::with_backend(Box::new(ring), DeviceConfig::default()).expect("default config is valid");
    let max = data.first().copied().unwrap_or(0) as u32;
    let core = dev.chip().worker(0, 0).expect("an n150 has compute cores");
    if let Ok(t) = dev.read_trace_tail(core, max) {
        assert!(t.records.len() as u32 <= max.min(CAPACITY));
    }
    if let Ok(t) = dev.read_trace(core) {
        assert!(t.records.len() as u32 <= CAPACITY);
    }
}

/// `cli_args`: the CLI's parser and checks (`cqlab::check`: parse,
/// validate, run nothing) accept, print help, or refuse with the usage
/// status 2 and a reason; they never panic. The input is the argument
/// vector, arguments separated by NUL bytes (any other bytes, UTF-8 or
/// not, are the arguments' own).
pub fn cli_args(data: &[u8]) {
    let args = data.split(|&b| b == 0).map(|a| std::ffi::OsStr::from_bytes(a).to_owned());
    let argv: Vec<OsString> = std::iter::once(OsString::from("cqlab")).chain(args).collect();
    if let cqlab::Verdict::Refused { status, message } = cqlab::check(argv.clone()) {
        assert_eq!(status, 2, "{argv:?} refused with {status}: {message}");
        assert!(!message.trim().is_empty(), "{argv:?} refused without a reason");
    }
}
