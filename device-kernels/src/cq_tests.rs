//! The CQ firmware logic against the fake core: relays, wraps, credits,
//! stalls, completion records, and every bad-input path.

use crate::dispatch::Dispatcher;
use crate::fake::{dispatch_stream, run_until_stopped, End, FakeChip, FakeCore};
use crate::platform::Platform;
use crate::prefetch::Prefetcher;
use cqlab_abi::completion::{CompletionHeader, CompletionKind};
use cqlab_abi::dispatch::WaitFlags;
use cqlab_abi::encode::{DispatchWriter, EncodeError, Encoder, PackedData};
use cqlab_abi::fetch_queue::{slot_addr, source_addr, split_addr, FetchEntry, Split, STALL_FLAG};
use cqlab_abi::mailbox::{CqConfig, DeviceError, ErrorRecord, ERROR, ERROR_MAGIC, WAYPOINT};
use cqlab_abi::memory_map::{
    chunk_buffer, interleaved_page, CHUNK_AREA, CHUNK_BUFFERS, DISPATCH_RING, MAX_CHUNK, TRACE_AREA,
};
use cqlab_abi::noc::{Coord, NocAddr};
use cqlab_abi::prefetch::EXEC_BUF_HEAD_MAX;
use cqlab_abi::ring::RingPtr;
use cqlab_abi::semaphore as sem;
use cqlab_abi::sysmem::{COMPLETION_WR_PTR, CQ_HEADER_SIZE, FETCH_RD_COUNT, ISSUE_RD_PTR};
use cqlab_abi::waypoint::{self, Waypoint};
use std::vec::Vec;
use zerocopy::FromBytes;

const ISSUE: u32 = 4096;
const COMPLETION: u32 = 1024;

fn cfg(issue_size: u32, completion_size: u32) -> CqConfig {
    CqConfig {
        sysmem_base: 0,
        issue_size,
        completion_size,
        cq_id: 0,
        _reserved0: 0,
        fetch_entries: 4,
        cmd_buffer_size: CHUNK_AREA.size,
        ring_page_size: 256,
        ring_pages: 4,
        peer_xy: 0,
        staged_from: STAGING / 16,
        staged_units: STAGING_SIZE / 16,
        _reserved: [0; 3],
    }
}

/// The queue's staging arena in sysmem, past its rings.
const STAGING: u32 = 0x10000;
const STAGING_SIZE: u32 = 0x10000;

// The cores of a one-queue `FakeChip`, by their translated coordinates.
fn prefetcher(cq: usize) -> Coord {
    FakeChip::new(1).prefetcher(cq)
}
fn dispatcher(cq: usize) -> Coord {
    FakeChip::new(1).dispatcher(cq)
}
fn worker(col: u8, row: u8) -> Coord {
    FakeChip::new(1).worker(col, row)
}

/// `n` bytes of `core`'s dispatcher ring (on the dispatcher of queue 0).
fn ring_of(core: &FakeCore, n: usize) -> Vec<u8> {
    core.read_remote(NocAddr::unicast(dispatcher(0), DISPATCH_RING.base as u64), n)
}

/// The CQ 0 sysmem header and queues as the fake host sees them.
fn sysmem_of(core: &FakeCore) -> Vec<u8> {
    core.sysmem(0, (CQ_HEADER_SIZE + ISSUE + COMPLETION) as usize)
}

/// Stores `pages` of `trace` (`page` bytes each) interleaved over the
/// fake chip's DRAM banks from DRAM address 0x4000; with `blank_head`,
/// zeroes where the first `head` bytes would be.
fn store_trace(core: &mut FakeCore, trace: &[u8], page: u32, blank_head: Option<usize>) {
    let banks = core.chip.map.dram_banks;
    for p in 0..trace.len() as u32 / page {
        let (bank, at) = interleaved_page(0x4000, p, page, banks);
        let mut bytes = trace[(p * page) as usize..][..page as usize].to_vec();
        if let (Some(head), 0) = (blank_head, p) {
            bytes[..head].fill(0);
        }
        let dst = core.chip.dram(bank, at);
        core.write_remote(dst, &bytes);
    }
}

fn encode(build: impl FnOnce(&mut Encoder<'_>) -> Result<(), EncodeError>) -> Vec<u8> {
    let mut buf = std::vec![0u8; 1 << 16];
    let mut e = Encoder::new(&mut buf);
    build(&mut e).unwrap();
    let n = e.len();
    buf.truncate(n);
    buf
}

fn inline(build: impl FnOnce(&mut DispatchWriter<'_>) -> Result<(), EncodeError>) -> Vec<u8> {
    encode(|e| e.relay_inline(true, build))
}

fn word(mem: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(mem[at..at + 4].try_into().unwrap())
}

/// A prefetcher core whose issue queue holds `chunks` back to back from
/// `start` (wrapping) with one fetch entry each.
fn prefetcher_with(issue_size: u32, start: u32, chunks: &[(Vec<u8>, bool)]) -> (FakeCore, CqConfig) {
    let mut core = FakeCore::new(prefetcher(0));
    let c = CqConfig { peer_xy: dispatcher(0).packed(), ..cfg(issue_size, COMPLETION) };
    let mut at = start;
    for (i, (chunk, stall)) in chunks.iter().enumerate() {
        for &b in chunk {
            core.set_sysmem((CQ_HEADER_SIZE + at) as u64, &[b]);
            at = (at + 1) % issue_size;
        }
        let entry = FetchEntry::new(chunk.len() as u64, *stall).unwrap();
        core.set_l1(slot_addr(i as u32), &entry.raw().to_le_bytes());
    }
    (core, c)
}

fn run_prefetcher(core: &mut FakeCore, c: CqConfig, start: u32) -> End {
    run_until_stopped(|| {
        let mut p = Prefetcher::new(core, c);
        p.set_issue_rd(RingPtr::new(start, false));
        p.run()
    })
}

fn waypoint_of(core: &FakeCore) -> Waypoint {
    Waypoint(word(&core.l1, WAYPOINT as usize))
}

fn error_of(core: &FakeCore) -> ErrorRecord {
    let rec = ErrorRecord::read_from_bytes(core.l1_bytes(ERROR, 64)).unwrap();
    assert_eq!(rec.magic, ERROR_MAGIC);
    rec
}

#[test]
fn relay_inline_fills_the_ring_and_publishes_pointers() {
    let chunk = inline(|w| w.write_linear(NocAddr::unicast(worker(0, 0), 0xA1000), &[0x5a; 40]));
    let (mut core, c) = prefetcher_with(ISSUE, 0, &[(chunk.clone(), false)]);
    assert_eq!(run_prefetcher(&mut core, c, 0), End::Stuck);
    assert_eq!(waypoint_of(&core), waypoint::HQW, "idle again, waiting for the host");
    let ring = &ring_of(&core, chunk.len() - 64)[..];
    assert_eq!(ring, &chunk[16..16 + ring.len()], "dispatch commands relayed verbatim");
    let units = core.remote_sems[&(dispatcher(0), sem::RING_UNITS_FILLED)];
    assert_eq!(units * 16, 64, "WRITE_LINEAR header + 48 padded payload bytes signalled");
    assert_eq!(word(&sysmem_of(&core), FETCH_RD_COUNT as usize), 1);
    assert_eq!(RingPtr(word(&sysmem_of(&core), ISSUE_RD_PTR as usize)).offset_bytes(), chunk.len() as u32);
    assert_eq!(word(&core.l1, slot_addr(0) as usize), 0, "slot freed");
}

#[test]
fn a_chunk_wrapping_the_issue_queue_is_read_in_two_pieces() {
    let chunk = inline(|w| w.write_linear(NocAddr::unicast(worker(1, 1), 0xA1000), &[7; 100]));
    assert_eq!(chunk.len(), 192);
    let (mut core, c) = prefetcher_with(256, 128, &[(chunk.clone(), false)]);
    assert_eq!(run_prefetcher(&mut core, c, 128), End::Stuck);
    let ring = &ring_of(&core, 128)[..];
    assert_eq!(ring, &chunk[16..144]);
    let rd = RingPtr(word(&sysmem_of(&core), ISSUE_RD_PTR as usize));
    assert_eq!((rd.offset_bytes(), rd.toggle()), (64, true), "wrapped read pointer flips its toggle");
}

#[test]
fn ring_credits_limit_the_prefetcher_and_the_ring_wraps() {
    // Each chunk relays 512 bytes; the ring holds 1024.
    let chunk = inline(|w| w.write_linear(NocAddr::unicast(worker(0, 0), 0), &[1; 496]));
    let chunks = [(chunk.clone(), false), (chunk.clone(), false), (chunk.clone(), false)];
    let (mut core, c) = prefetcher_with(ISSUE, 0, &chunks);
    assert_eq!(run_prefetcher(&mut core, c, 0), End::Stuck);
    assert_eq!(waypoint_of(&core), waypoint::DAPW, "third chunk waits for free pages");
    assert_eq!(core.remote_sems[&(dispatcher(0), sem::RING_UNITS_FILLED)], 64, "two chunks signalled");

    let (mut core, c) = prefetcher_with(ISSUE, 0, &chunks);
    (core.peer_frees_pages, core.peer) = (Some(256), dispatcher(0).packed());
    assert_eq!(run_prefetcher(&mut core, c, 0), End::Stuck);
    assert_eq!(waypoint_of(&core), waypoint::HQW);
    assert_eq!(core.remote_sems[&(dispatcher(0), sem::RING_UNITS_FILLED)], 96);
    let ring = &ring_of(&core, 16)[..];
    assert_eq!(ring, &chunk[16..32], "third chunk wrapped to the ring start");
}

/// A prefetcher whose only chunk is `chunk` gathered: bytes `[head,
/// head + staged)` at sysmem `at`, the rest in the issue queue (wrapping
/// from `start`).
fn gathered(issue_size: u32, start: u32, chunk: &[u8], head: u32, staged: u32, at: u32) -> (FakeCore, CqConfig) {
    let (h, s) = (head as usize, (head + staged) as usize);
    let ring: Vec<u8> = chunk[..h].iter().chain(&chunk[s..]).copied().collect();
    let (mut core, c) = prefetcher_with(issue_size, start, &[(ring, false)]);
    core.set_sysmem(at as u64, &chunk[h..s]);
    let words = [at / 16, Split { head, staged }.raw()];
    core.set_l1(source_addr(0), &words[0].to_le_bytes());
    core.set_l1(split_addr(0), &words[1].to_le_bytes());
    let entry = FetchEntry::staged(chunk.len() as u64).unwrap();
    core.set_l1(slot_addr(0), &entry.raw().to_le_bytes());
    (core, c)
}

/// A gathered chunk relays exactly what the same chunk relays from the
/// issue queue, and frees only the issue-queue bytes it took.
#[test]
fn a_gathered_chunk_relays_as_the_whole_chunk_and_takes_only_its_ring_bytes() {
    let data: Vec<u8> = (0..600u32).map(|i| (i * 7) as u8).collect();
    let chunk = inline(|w| {
        w.write_linear(NocAddr::unicast(worker(0, 0), 0xA1000), &[3; 32])?;
        w.write_linear(NocAddr::unicast(worker(1, 0), 0xA2000), &data)?;
        w.write_linear(NocAddr::unicast(worker(2, 0), 0xA3000), &[9; 48])
    });
    // Header, first write and the second's header in the head; the
    // second's 608 padded bytes staged; the rest is the tail. The ring part
    // wraps the issue queue.
    let (head, staged) = (16 + 48 + 16, 608);
    let ring_len = chunk.len() as u32 - staged;
    let (mut core, c) = gathered(1024, 960, &chunk, head, staged, STAGING);
    assert_eq!(run_prefetcher(&mut core, c, 960), End::Stuck);
    assert_eq!(waypoint_of(&core), waypoint::HQW);
    let relayed = chunk.len() - 16 - 48;
    let ring = &ring_of(&core, relayed)[..];
    assert_eq!(ring, &chunk[16..16 + relayed], "dispatch commands relayed verbatim");
    let rd = RingPtr(word(&sysmem_of(&core), ISSUE_RD_PTR as usize));
    assert_eq!(rd.offset_bytes(), (960 + ring_len) % 1024);
    assert_eq!(word(&sysmem_of(&core), FETCH_RD_COUNT as usize), 1);
}

#[test]
fn a_gathered_chunk_whose_split_overruns_it_is_reported() {
    let chunk = inline(|w| w.write_linear(NocAddr::unicast(worker(0, 0), 0xA1000), &[5; 64]));
    let (mut core, c) = gathered(ISSUE, 0, &chunk, 32, 32, STAGING);
    // A split of more bytes than the entry's chunk.
    let bad = Split { head: 64, staged: chunk.len() as u32 };
    core.set_l1(split_addr(0), &bad.raw().to_le_bytes());
    assert_eq!(run_prefetcher(&mut core, c, 0), End::Halted);
    let e = error_of(&core);
    assert_eq!(e.code, DeviceError::BadSize as u32);
    assert_eq!((e.addr, e.value), (split_addr(0), bad.raw()), "the offending split word");
}

/// A gathered chunk's staged piece is read only from the queue's staging
/// arena: a source word past it (the audit's 0xfffffff0 units, 64 GiB
/// out), one before it, or a piece running one unit past its end halts the
/// prefetcher before any read is issued, the record naming the source and
/// split words. The arena's last bytes are read.
#[test]
fn a_gathered_chunk_staged_outside_the_arena_is_reported_with_its_source() {
    let chunk = inline(|w| w.write_linear(NocAddr::unicast(worker(0, 0), 0xA1000), &[5; 64]));
    let staged = 32;
    let last = STAGING + STAGING_SIZE - staged;
    let (mut core, c) = gathered(ISSUE, 0, &chunk, 32, staged, last);
    assert_eq!(run_prefetcher(&mut core, c, 0), End::Stuck, "the arena's last bytes");
    assert_eq!(ring_of(&core, chunk.len() - 64), &chunk[16..chunk.len() - 48]);
    for (source, what) in
        [(0xffff_fff0, "64 GiB out"), (STAGING / 16 - 1, "before the arena"), (last / 16 + 1, "one unit over its end")]
    {
        let (mut core, c) = gathered(ISSUE, 0, &chunk, 32, staged, STAGING);
        core.set_l1(source_addr(0), &source.to_le_bytes());
        assert_eq!(run_prefetcher(&mut core, c, 0), End::Halted, "{what}");
        let e = error_of(&core);
        assert_eq!((e.code, e.addr, e.value), (DeviceError::BadSource as u32, source_addr(0), source), "{what}");
        let split = Split { head: 32, staged }.raw();
        assert_eq!(&e.bytes[..8], [source.to_le_bytes(), split.to_le_bytes()].concat(), "{what}: the offending words");
        assert_eq!((e.wr_ptr, waypoint_of(&core)), (split, waypoint::BAD_CMD), "{what}");
        assert_eq!(ring_of(&core, 16), [0; 16], "{what}: nothing relayed");
    }
}

/// Chunks the host announced together are all read ahead, each into its
/// own chunk buffer, and still relayed in order.
#[test]
fn announced_chunks_are_read_ahead_into_their_own_buffers_and_run_in_order() {
    let n = CHUNK_BUFFERS.min(cfg(ISSUE, COMPLETION).fetch_entries) as u8;
    assert!(n > 2, "more than double buffering");
    let chunks: Vec<(Vec<u8>, bool)> = (0..n)
        .map(|i| (inline(|w| w.write_linear(NocAddr::unicast(worker(0, 0), 0), &[0x10 + i; 48])), false))
        .collect();
    let (mut core, c) = prefetcher_with(ISSUE, 0, &chunks);
    (core.peer_frees_pages, core.peer) = (Some(256), dispatcher(0).packed());
    assert_eq!(run_prefetcher(&mut core, c, 0), End::Stuck);
    assert_eq!(waypoint_of(&core), waypoint::HQW);
    let ring = &ring_of(&core, 64 * 1024);
    let mut at = 0;
    for (i, (chunk, _)) in chunks.iter().enumerate() {
        assert_eq!(core.l1_bytes(chunk_buffer(i as u32), chunk.len()), &chunk[..], "chunk {i} in buffer {i}");
        let relayed = chunk.len() - 64;
        assert_eq!(&ring[at..at + relayed], &chunk[16..16 + relayed], "chunk {i} relayed in its turn");
        at += relayed;
    }
    assert_eq!(word(&sysmem_of(&core), FETCH_RD_COUNT as usize), n as u32, "every slot freed");
    let total: usize = chunks.iter().map(|(c, _)| c.len()).sum();
    assert_eq!(RingPtr(word(&sysmem_of(&core), ISSUE_RD_PTR as usize)).offset_bytes(), total as u32);
}

#[test]
fn stall_waits_for_the_dispatchers_release_count() {
    let stall = encode(|e| e.stall());
    let (mut core, c) = prefetcher_with(ISSUE, 0, &[(stall.clone(), false), (stall.clone(), false)]);
    assert_eq!(run_prefetcher(&mut core, c, 0), End::Stuck);
    assert_eq!(waypoint_of(&core), waypoint::PSW);
    let (mut core, c) = prefetcher_with(ISSUE, 0, &[(stall.clone(), false), (stall, false)]);
    core.set_semaphore(sem::STALL_RELEASE, 1);
    assert_eq!(run_prefetcher(&mut core, c, 0), End::Stuck);
    assert_eq!(waypoint_of(&core), waypoint::PSW, "second stall needs a second release");
    assert_eq!(word(&sysmem_of(&core), FETCH_RD_COUNT as usize), 2);
}

fn prefetch_error(chunk: Vec<u8>, stall: bool) -> ErrorRecord {
    let (mut core, c) = prefetcher_with(ISSUE, 0, &[(chunk, stall)]);
    assert_eq!(run_prefetcher(&mut core, c, 0), End::Halted);
    assert_eq!(waypoint_of(&core), waypoint::BAD_CMD);
    error_of(&core)
}

#[test]
fn prefetcher_reports_bad_commands_and_halts() {
    let mut bad = encode(|e| e.stall());
    bad[0] = 0x7e;
    let rec = prefetch_error(bad, false);
    assert_eq!(rec.code, DeviceError::UnknownCommand as u32);
    assert_eq!((rec.value, rec.bytes[0], rec.addr), (0x7e, 0x7e, chunk_buffer(0)));

    let rec = prefetch_error(encode(|e| e.exec_buf(0, 64, 1)), false);
    assert_eq!(rec.code, DeviceError::ExecBufWithoutStall as u32);

    let rec = prefetch_error(encode(|e| e.exec_buf_end()), false);
    assert_eq!(rec.code, DeviceError::UnexpectedExecBufEnd as u32);

    let mut dbg = encode(|e| e.debug(b"payload"));
    dbg[17] ^= 1;
    let rec = prefetch_error(dbg, false);
    assert_eq!(rec.code, DeviceError::BadChecksum as u32);

    let mut stride = encode(|e| e.debug(b"x"));
    stride[12] = 0x80; // stride field no longer matches the length
    assert_eq!(prefetch_error(stride, false).code, DeviceError::BadSize as u32);

    // A trace page must divide a trace window (no page straddles two).
    let mut exec = encode(|e| e.exec_buf(0, 1024, 1));
    exec[8..12].copy_from_slice(&192u32.to_le_bytes());
    assert_eq!(prefetch_error(exec, true).code, DeviceError::BadSize as u32);
}

/// `RELAY_LINEAR` reads only memory the NOC map names: a compute core's or
/// a dispatcher's L1 (to its last byte) or a DRAM bank. A source anywhere
/// else (coordinates no tile has, as the audit's (63,63); the prefetcher,
/// which no map names; bytes past L1; bits beyond the coordinates; host
/// memory; a multicast) halts the prefetcher before any read, the record
/// holding the command (the source in its bytes 8..16).
#[test]
fn relay_linear_reads_only_memory_the_noc_map_names() {
    let chip = FakeChip::new(1);
    let l1 = crate::CHIP.l1_size as u64;
    let data: Vec<u8> = (0..64u8).collect();
    let good =
        [NocAddr::unicast(worker(3, 2), l1 - 64), NocAddr::unicast(dispatcher(0), 0xA1000), chip.dram(1, 0x4000)];
    for src in good {
        let (mut core, c) = prefetcher_with(ISSUE, 0, &[(encode(|e| e.relay_linear(src, 64)), false)]);
        core.write_remote(src, &data);
        assert_eq!(run_prefetcher(&mut core, c, 0), End::Stuck, "{src:x?}");
        assert_eq!(ring_of(&core, 64), data, "{src:x?} relayed");
    }
    let bad = [
        (NocAddr::unicast(Coord::new(63, 63), 0x1000), 64, "no tile"),
        (NocAddr::unicast(prefetcher(0), 0xA1000), 64, "a core the map does not name"),
        (NocAddr::unicast(worker(3, 2), l1 - 48), 64, "past L1"),
        (NocAddr::unicast(worker(3, 2), 0xA1000).with_flags(cqlab_abi::noc::BH_PCIE_FLAG), 64, "a flag set"),
        (chip.host(0x10000), 64, "host memory"),
        (NocAddr::multicast(worker(0, 0), worker(1, 1), 0xA1000), 64, "a multicast"),
    ];
    for (src, len, what) in bad {
        let rec = prefetch_error(encode(|e| e.relay_linear(src, len)), false);
        assert_eq!((rec.code, rec.addr), (DeviceError::BadSource as u32, chunk_buffer(0)), "{what}");
        assert_eq!((rec.value, &rec.bytes[8..16]), ((src.0 >> 32) as u32, &src.0.to_le_bytes()[..]), "{what}");
    }
}

/// A trace longer than the trace area streams through its windows: every
/// command runs (DEBUG checksums over payloads that straddle windows and
/// the ring's wrap match) and every relayed byte is signalled.
#[test]
fn a_trace_longer_than_the_trace_area_streams_through_its_windows() {
    const PAGE: u32 = 8192;
    let mut buf = std::vec![0u8; 1 << 19];
    let mut e = Encoder::new(&mut buf);
    let mut relayed = 0;
    for i in 0..32u32 {
        let payload: Vec<u8> = (0..9_000u32).map(|b| (b.wrapping_mul(7) ^ i) as u8).collect();
        e.debug(&payload).unwrap();
        e.relay_inline(true, |w| w.write_linear(NocAddr::unicast(worker(0, 0), 0), &payload[..4000])).unwrap();
        relayed += 16 + 4000;
    }
    e.exec_buf_end().unwrap();
    let len = e.len().next_multiple_of(PAGE as usize);
    assert!(len > 2 * TRACE_AREA.size as usize, "{len} bytes: the ring of windows wraps");
    let pages = len as u32 / PAGE;
    let (mut core, c) = prefetcher_with(ISSUE, 0, &[(encode(|e| e.exec_buf(0x4000, PAGE, pages)), true)]);
    (core.peer_frees_pages, core.peer) = (Some(256), dispatcher(0).packed());
    store_trace(&mut core, &buf[..len], PAGE, None);
    assert_eq!(run_prefetcher(&mut core, c, 0), End::Stuck);
    assert_eq!(waypoint_of(&core), waypoint::HQW, "replayed to EXEC_BUF_END, waiting for the host");
    assert_eq!(core.remote_sems[&(dispatcher(0), sem::RING_UNITS_FILLED)] * 16, relayed);
}

/// Replays `trace` (stored from DRAM address 0x4000 in `page`-byte
/// pages) with its first `head` bytes also inline in the EXEC_BUF chunk;
/// returns how it ended, the units signalled to the dispatcher and the
/// dispatcher ring's bytes (a ring big enough never to wrap). With
/// `blank_dram_head`, DRAM holds zeroes where the head is, so only the
/// inline copy can make the replay right.
fn replay_with_head(trace: &[u8], page: u32, head: usize, blank_dram_head: bool) -> (End, u32, Vec<u8>) {
    let pages = trace.len() as u32 / page;
    let exec = encode(|e| e.exec_buf_with_head(0x4000, page, pages, &trace[..head]));
    let (end, units, ring, _) = replay_chunk(exec, trace, page, head, blank_dram_head);
    (end, units, ring)
}

/// Runs the EXEC_BUF chunk `exec` of `trace` (stored as in
/// [`replay_with_head`]); also returns the DRAM reads it made.
fn replay_chunk(
    exec: Vec<u8>,
    trace: &[u8],
    page: u32,
    head: usize,
    blank_dram_head: bool,
) -> (End, u32, Vec<u8>, u32) {
    let pages = trace.len() as u32 / page;
    let (mut core, c) = prefetcher_with(ISSUE, 0, &[(exec, true)]);
    let c = CqConfig { ring_page_size: 4096, ring_pages: 32, ..c };
    (core.peer_frees_pages, core.peer) = (Some(4096), dispatcher(0).packed());
    store_trace(&mut core, &trace[..(pages * page) as usize], page, blank_dram_head.then_some(head));
    let end = run_prefetcher(&mut core, c, 0);
    let units = core.remote_sems.get(&(dispatcher(0), sem::RING_UNITS_FILLED)).copied().unwrap_or(0);
    let ring = ring_of(&core, 32 * 4096);
    (end, units, ring, core.dram_reads)
}

/// A short trace in one `page`-byte page: a 400-byte relay, a DEBUG and
/// its EXEC_BUF_END; and the bytes it uses.
fn short_trace(page: u32) -> (Vec<u8>, usize) {
    let mut trace = std::vec![0u8; page as usize];
    let mut e = Encoder::new(&mut trace);
    e.relay_inline(true, |w| w.write_linear(NocAddr::unicast(worker(1, 0), 0x100), &[9u8; 400])).unwrap();
    e.debug(&[3u8; 100]).unwrap();
    e.exec_buf_end().unwrap();
    let used = e.len();
    (trace, used)
}

/// A trace whose head travels inline with EXEC_BUF replays exactly as one
/// read wholly from DRAM: the same bytes reach the dispatcher, every byte
/// signalled, whether the head ends at a command, inside one (a DEBUG
/// payload whose checksum then spans head and window), or holds the whole
/// trace; the windows still wrap the trace area after the head.
#[test]
fn a_trace_head_sent_inline_replays_exactly_as_from_dram() {
    const PAGE: u32 = 8192;
    let mut buf = std::vec![0u8; 1 << 19];
    let mut e = Encoder::new(&mut buf);
    let mut relayed = 0;
    for i in 0..16u32 {
        let small: Vec<u8> = (0..300 + i).map(|b| (b ^ 0x5a) as u8).collect();
        e.debug(&small).unwrap();
        let data: Vec<u8> = (0..4000u32).map(|b| (b.wrapping_mul(13) ^ (i * 7)) as u8).collect();
        e.relay_inline(true, |w| w.write_linear(NocAddr::unicast(worker(1, 0), 0x100), &data)).unwrap();
        let payload: Vec<u8> = (0..9_000u32).map(|b| (b.wrapping_mul(7) ^ i) as u8).collect();
        e.debug(&payload).unwrap();
        relayed += 16 + 4000;
    }
    e.exec_buf_end().unwrap();
    let len = e.len().next_multiple_of(PAGE as usize);
    assert!(len > TRACE_AREA.size as usize, "{len} bytes: the windows wrap after the head");
    let trace = &buf[..len];
    let from_dram = replay_with_head(trace, PAGE, 0, false);
    assert_eq!((&from_dram.0, from_dram.1 * 16), (&End::Stuck, relayed), "replayed to EXEC_BUF_END, all signalled");
    // The first DEBUG's header alone, part of its payload, all of it (320
    // bytes: a command boundary), and part of the relay after it.
    for head in [64, 192, 320, EXEC_BUF_HEAD_MAX as usize] {
        for blank in [false, true] {
            let got = replay_with_head(trace, PAGE, head, blank);
            assert_eq!((&got.0, got.1), (&from_dram.0, from_dram.1), "head {head}, blank DRAM head {blank}");
            assert!(got.2 == from_dram.2, "head {head}, blank DRAM head {blank}: the dispatcher got other bytes");
        }
    }

    // A whole (short) trace in the head: EXEC_BUF_END is reached from the chunk.
    let (small, used) = short_trace(PAGE);
    assert!(used <= EXEC_BUF_HEAD_MAX as usize);
    let whole = replay_with_head(&small, PAGE, used.next_multiple_of(64), true);
    assert_eq!(whole, replay_with_head(&small, PAGE, 0, false));
    assert_eq!(whole.1 * 16, 16 + 400);
}

/// A whole trace sent inline and flagged so replays it without a DRAM
/// read (the unflagged head reads the first window all the same), and the
/// chunk's commands after the EXEC_BUF run once the replay ends; a flagged
/// head that stops short of its EXEC_BUF_END is an overrun reported where
/// the head ends, not a read nor a hang.
#[test]
fn a_trace_sent_whole_inline_replays_without_reading_dram() {
    const PAGE: u32 = 8192;
    let (small, used) = short_trace(PAGE);
    let whole = encode(|e| e.exec_buf_whole(0x4000, PAGE, 1, &small[..used]));
    let got = replay_chunk(whole, &small, PAGE, used, true);
    let from_dram = replay_with_head(&small, PAGE, 0, false);
    assert_eq!((&got.0, got.1, &got.2), (&from_dram.0, from_dram.1, &from_dram.2), "the same bytes, all signalled");
    assert_eq!(got.3, 0, "no DRAM read");
    let unflagged = encode(|e| e.exec_buf_with_head(0x4000, PAGE, 1, &small[..used]));
    assert!(replay_chunk(unflagged, &small, PAGE, used, true).3 > 0);

    // A relay after the EXEC_BUF, in the same chunk, follows the trace's.
    let after = encode(|e| e.relay_inline(true, |w| w.write_linear(NocAddr::unicast(worker(2, 0), 0x200), &[7u8; 64])));
    let mut chunk = encode(|e| e.exec_buf_whole(0x4000, PAGE, 1, &small[..used]));
    chunk.extend_from_slice(&after);
    let (end, units, ring, reads) = replay_chunk(chunk, &small, PAGE, used, true);
    assert_eq!((&end, reads), (&End::Stuck, 0));
    assert_eq!(units * 16, 16 + 400 + 16 + 64, "the trace's relay and the one after, all signalled");
    assert_eq!(&ring[..416], &from_dram.2[..416], "the trace's relay first");
    assert_eq!(&ring[416..416 + 80], &after[16..16 + 80], "then the chunk's own");

    // Without its EXEC_BUF_END (the last line): the commands overrun the head.
    let short = encode(|e| e.exec_buf_whole(0x4000, PAGE, 1, &small[..used - 64]));
    let (mut core, c) = prefetcher_with(ISSUE, 0, &[(short, true)]);
    let c = CqConfig { ring_page_size: 4096, ring_pages: 32, ..c };
    (core.peer_frees_pages, core.peer) = (Some(4096), dispatcher(0).packed());
    assert_eq!(run_prefetcher(&mut core, c, 0), End::Halted);
    assert_eq!(waypoint_of(&core), waypoint::BAD_CMD);
    let rec = error_of(&core);
    assert_eq!((rec.code, rec.addr), (DeviceError::LengthOverrun as u32, chunk_buffer(0) + used as u32));
    assert_eq!(core.dram_reads, 0);
}

#[test]
fn a_trace_head_longer_than_the_trace_is_refused() {
    let exec = encode(|e| e.exec_buf_with_head(0x4000, 64, 1, &[0u8; 128]));
    assert_eq!(prefetch_error(exec, true).code, DeviceError::BadSize as u32);
}

#[test]
fn zero_size_and_oversized_fetch_entries_are_rejected() {
    let (mut core, c) = prefetcher_with(ISSUE, 0, &[]);
    core.set_l1(slot_addr(0), &STALL_FLAG.to_le_bytes());
    assert_eq!(run_prefetcher(&mut core, c, 0), End::Halted);
    assert_eq!(error_of(&core).code, DeviceError::ZeroFetchEntry as u32);

    let (mut core, c) = prefetcher_with(ISSUE, 0, &[]);
    let big = FetchEntry::new(MAX_CHUNK as u64 + 64, false).unwrap();
    core.set_l1(slot_addr(0), &big.raw().to_le_bytes());
    assert_eq!(run_prefetcher(&mut core, c, 0), End::Halted);
    assert_eq!(error_of(&core).code, DeviceError::TooLarge as u32);
}

#[test]
fn bad_configuration_is_reported_not_run() {
    let mut core = FakeCore::new(prefetcher(0));
    let c = CqConfig { ring_pages: 3, ..cfg(ISSUE, COMPLETION) };
    assert_eq!(run_until_stopped(|| Prefetcher::new(&mut core, c).run()), End::Halted);
    assert_eq!(error_of(&core).code, DeviceError::BadConfig as u32);
}

/// A dispatcher whose ring holds the dispatch commands `stream`.
fn dispatcher_with(stream: &[u8], completion_size: u32) -> (FakeCore, CqConfig) {
    let mut core = FakeCore::new(dispatcher(0));
    let c = CqConfig { peer_xy: prefetcher(0).packed(), ..cfg(ISSUE, completion_size) };
    core.set_l1(DISPATCH_RING.base, stream);
    core.set_semaphore(sem::RING_UNITS_FILLED, stream.len() as u32 / 16);
    (core, c)
}

fn run_dispatcher(core: &mut FakeCore, c: CqConfig) -> End {
    run_until_stopped(|| Dispatcher::new(core, c).run())
}

#[test]
fn dispatcher_writes_data_and_completion_records_and_frees_pages() {
    let dst = NocAddr::unicast(worker(2, 3), 0xA1000);
    let data: Vec<u8> = (0..300u32).map(|i| i as u8).collect();
    let stream = dispatch_stream(|w| {
        w.write_linear(dst, &data)?;
        w.write_host(9, b"readback")
    });
    let (mut core, c) = dispatcher_with(&stream, COMPLETION);
    assert_eq!(run_dispatcher(&mut core, c), End::Stuck);
    assert_eq!(waypoint_of(&core), waypoint::UAPW, "waiting for more ring data");
    assert_eq!(core.read_remote(NocAddr::unicast(worker(2, 3), 0xA1000), 300), data);
    let sysmem = sysmem_of(&core);
    let base = (CQ_HEADER_SIZE + ISSUE) as usize;
    let h = CompletionHeader::read_from_bytes(&sysmem[base..base + 16]).unwrap();
    assert_eq!((h.kind, h.length, h.tag, h.seq), (CompletionKind::Data as u8, 8, 9, 0));
    assert_eq!(&sysmem[base + 16..base + 24], b"readback");
    assert_eq!(RingPtr(word(&sysmem, COMPLETION_WR_PTR as usize)), RingPtr::new(64, false));
    // 16 + 304 + 16 + 16 = 352 bytes consumed: one whole 256-byte page.
    assert_eq!(core.remote_sems[&(prefetcher(0), sem::RING_PAGES_FREED)], 1);
}

#[test]
fn completion_queue_waits_for_the_host_and_wraps_with_toggle() {
    let stream = dispatch_stream(|w| (0..3).try_for_each(|i| w.write_host(i, &[i as u8; 40])));
    let (mut core, c) = dispatcher_with(&stream, 128);
    assert_eq!(run_dispatcher(&mut core, c), End::Stuck);
    assert_eq!(waypoint_of(&core), waypoint::QRBW, "ring of two records is full");

    let (mut core, c) = dispatcher_with(&stream, 128);
    core.host_drains = true;
    assert_eq!(run_dispatcher(&mut core, c), End::Stuck);
    assert_eq!(waypoint_of(&core), waypoint::UAPW);
    let wr = RingPtr(word(&sysmem_of(&core), COMPLETION_WR_PTR as usize));
    assert_eq!((wr.offset_bytes(), wr.toggle()), (64, true), "third record wrapped to offset 0");
}

#[test]
fn wait_counts_workers_clears_and_releases_the_prefetcher() {
    let flags = WaitFlags::BARRIER | WaitFlags::WAIT_COUNTER | WaitFlags::CLEAR | WaitFlags::NOTIFY_PREFETCH;
    let stream = dispatch_stream(|w| w.wait(flags, sem::WORKERS_DONE, 2));
    let (mut core, c) = dispatcher_with(&stream, COMPLETION);
    core.set_semaphore(sem::WORKERS_DONE, 1);
    assert_eq!(run_dispatcher(&mut core, c), End::Stuck);
    assert_eq!(waypoint_of(&core), waypoint::WCW);
    assert!(!core.remote_sems.contains_key(&(prefetcher(0), sem::STALL_RELEASE)));

    let (mut core, c) = dispatcher_with(&stream, COMPLETION);
    core.set_semaphore(sem::WORKERS_DONE, 3);
    assert_eq!(run_dispatcher(&mut core, c), End::Stuck);
    assert_eq!(word(&core.l1, sem::addr(sem::WORKERS_DONE) as usize), 1, "CLEAR subtracts the count");
    assert_eq!(core.remote_sems[&(prefetcher(0), sem::STALL_RELEASE)], 1);
}

#[test]
fn dispatcher_reports_bad_commands_and_halts() {
    let mut stream = dispatch_stream(|w| w.delay(1));
    stream[0] = 0x03; // a prefetch id in the dispatch stream
    let (mut core, c) = dispatcher_with(&stream, COMPLETION);
    assert_eq!(run_dispatcher(&mut core, c), End::Halted);
    let rec = error_of(&core);
    assert_eq!((rec.code, rec.value, rec.addr), (DeviceError::UnknownCommand as u32, 3, DISPATCH_RING.base));

    let mut stream = dispatch_stream(|w| w.debug(b"0123456789"));
    stream[16] ^= 0xff;
    let (mut core, c) = dispatcher_with(&stream, COMPLETION);
    assert_eq!(run_dispatcher(&mut core, c), End::Halted);
    assert_eq!(error_of(&core).code, DeviceError::BadChecksum as u32);

    let stream = dispatch_stream(|w| w.write_host(1, &[0; 2000]));
    let (mut core, c) = dispatcher_with(&stream[..64], COMPLETION);
    assert_eq!(run_dispatcher(&mut core, c), End::Halted, "record larger than the completion queue");
    assert_eq!(error_of(&core).code, DeviceError::TooLarge as u32);

    // A packed write whose block size, times its three blocks, would wrap
    // 32 bits (to 32 bytes): refused, nothing written.
    let dests = [worker(0, 0), worker(1, 0), worker(2, 0)];
    let per_core = PackedData::PerCore(&[5; 48]);
    let mut stream = dispatch_stream(|w| w.write_packed(0xA1000, &dests, per_core));
    stream[4..8].copy_from_slice(&0x5555_5560u32.to_le_bytes());
    let (mut core, c) = dispatcher_with(&stream, COMPLETION);
    assert_eq!(run_dispatcher(&mut core, c), End::Halted, "a packed size that wraps");
    let rec = error_of(&core);
    let id = cqlab_abi::dispatch::DispatchCmdId::WritePacked as u32;
    assert_eq!((rec.code, rec.value, rec.addr), (DeviceError::BadSize as u32, id, DISPATCH_RING.base));
    assert!(core.remote.is_empty(), "nothing is written");
}
