//! Property tests: whatever the encoder writes, the decoder reads back
//! exactly; whatever bytes the decoder is fed, it returns instead of panicking.

use cqlab_abi::completion::EventRecord;
use cqlab_abi::decode::{decode_dispatch_partial, DispatchHeader, DispatchStream, PrefetchHeader, PrefetchStream};
use cqlab_abi::dispatch::{PackedFlags, WaitFlags, MAX_PACKED_DESTS, MAX_PACKED_SIZE};
use cqlab_abi::encode::{DispatchWriter, EncodeError, Encoder, PackedData};
use cqlab_abi::noc::{Coord, NocAddr};

/// A Wormhole-translated Tensix coordinate (18 onwards), as hosts name workers.
fn worker(col: u8, row: u8) -> Coord {
    Coord::new(18 + col, 18 + row)
}
use cqlab_abi::prefetch::{ExecBufFlags, PagedFlags, EXEC_BUF_HEAD_MAX};
use cqlab_abi::program::LAUNCH_ENTRY_SIZE;
use cqlab_abi::size::{ChunkSize, DispatchSize};
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Disp {
    Linear { dst: u64, data: Vec<u8> },
    Paged { dram: bool, base: u32, page_size: u32, start: u16, pages: u32 },
    Packed { addr: u32, dests: Vec<(u8, u8)>, shared: bool, size: usize },
    Host { tag: u32, data: Vec<u8> },
    Event { id: u32, cq: u32 },
    Wait { flags: u8, addr: u32, count: u32 },
    Go { signal: u32, dst: u64 },
    Offset(u32),
    Delay(u32),
    Debug(Vec<u8>),
    Launch { dst: u64, msg: Vec<u8> },
    Terminate,
}

#[derive(Clone, Debug)]
enum Pref {
    Inline { flush: bool, cmds: Vec<Disp> },
    Linear { src: u64, len: u32 },
    Paged { dram: bool, base: u32, page_size: u32, start: u16, pages: u32 },
    Stall,
    ExecBuf { base: u32, page_size: u32, pages: u32, head: Vec<u8>, whole: bool },
    ExecBufEnd,
    Debug(Vec<u8>),
    Terminate,
}

fn noc_addr() -> impl Strategy<Value = u64> {
    prop_oneof![
        (0u8..16, 0u8..16, 0u64..1 << 20).prop_map(|(x, y, a)| NocAddr::unicast(worker(x, y), a).0),
        (0u8..8, 0u8..8, 0u8..8, 0u8..8, 0u64..1 << 20).prop_map(|(x, y, w, h, a)| NocAddr::multicast(
            worker(x, y),
            worker(x + w, y + h),
            a
        )
        .0),
    ]
}

fn wait_flags() -> impl Strategy<Value = u8> {
    (any::<bool>(), any::<bool>(), 0u8..3, any::<bool>()).prop_map(|(barrier, notify, kind, clear)| {
        let mut f = WaitFlags::empty();
        f.set(WaitFlags::BARRIER, barrier);
        f.set(WaitFlags::NOTIFY_PREFETCH, notify);
        match kind {
            1 => f |= WaitFlags::WAIT_MEMORY,
            2 => f |= WaitFlags::WAIT_COUNTER,
            _ => {}
        }
        f.set(WaitFlags::CLEAR, clear && kind != 0);
        f.bits()
    })
}

fn disp() -> impl Strategy<Value = Disp> {
    prop_oneof![
        (noc_addr(), prop::collection::vec(any::<u8>(), 1..80)).prop_map(|(dst, data)| Disp::Linear { dst, data }),
        (any::<bool>(), any::<u32>(), 1u32..5, any::<u16>(), 1u32..4).prop_map(|(dram, base, ps, start, pages)| {
            Disp::Paged { dram, base, page_size: ps * 16, start, pages }
        }),
        (0u32..1000, prop::collection::vec((0u8..16, 0u8..16), 1..9), any::<bool>(), 1usize..40)
            .prop_map(|(a, dests, shared, size)| Disp::Packed { addr: a * 16, dests, shared, size }),
        (any::<u32>(), prop::collection::vec(any::<u8>(), 1..70)).prop_map(|(tag, data)| Disp::Host { tag, data }),
        (1u32..1000, 0u32..16).prop_map(|(id, cq)| Disp::Event { id, cq }),
        (wait_flags(), 0u32..16, any::<u32>()).prop_map(|(flags, a, count)| Disp::Wait {
            flags,
            // A word to wait on is never address 0 (the reset jump).
            addr: if flags & WaitFlags::WAIT_MEMORY.bits() != 0 { (a + 1) * 4 } else { a },
            count
        }),
        (any::<u32>(), noc_addr()).prop_map(|(signal, dst)| Disp::Go { signal, dst }),
        any::<u32>().prop_map(Disp::Offset),
        any::<u32>().prop_map(Disp::Delay),
        prop::collection::vec(any::<u8>(), 0..50).prop_map(Disp::Debug),
        // A launch message is one whole launch-ring entry.
        (noc_addr(), prop::collection::vec(any::<u8>(), LAUNCH_ENTRY_SIZE as usize))
            .prop_map(|(dst, msg)| Disp::Launch { dst, msg }),
        Just(Disp::Terminate),
    ]
}

fn pref() -> impl Strategy<Value = Pref> {
    prop_oneof![
        (any::<bool>(), prop::collection::vec(disp(), 1..5)).prop_map(|(flush, cmds)| Pref::Inline { flush, cmds }),
        (noc_addr(), 1u32..100_000).prop_map(|(src, len)| Pref::Linear { src, len }),
        (any::<bool>(), any::<u32>(), 1u32..256, any::<u16>(), 1u32..64).prop_map(|(dram, base, ps, start, pages)| {
            Pref::Paged { dram, base, page_size: ps * 16, start, pages }
        }),
        Just(Pref::Stall),
        // Page sizes dividing a trace window: 64 B ..= 32 KiB.
        // Trace heads: whole PCIe lines, up to EXEC_BUF_HEAD_MAX; a whole
        // trace has one line at least.
        (any::<u32>(), 0u32..10, 1u32..100, 0usize..=16, any::<u8>(), any::<bool>()).prop_map(
            |(base, k, pages, lines, seed, whole)| {
                let head = (0..lines * 64).map(|i| (i as u8).wrapping_mul(31) ^ seed).collect();
                Pref::ExecBuf { base, page_size: 64 << k, pages, head, whole: whole && lines > 0 }
            }
        ),
        Just(Pref::ExecBufEnd),
        prop::collection::vec(any::<u8>(), 0..100).prop_map(Pref::Debug),
        Just(Pref::Terminate),
    ]
}

fn paged_flags(dram: bool) -> PagedFlags {
    if dram {
        PagedFlags::DRAM
    } else {
        PagedFlags::empty()
    }
}

fn paged_data(page_size: u32, pages: u32) -> Vec<u8> {
    (0..page_size * pages).map(|i| i as u8).collect()
}

fn encode_disp(w: &mut DispatchWriter<'_>, d: &Disp) -> Result<(), EncodeError> {
    match d {
        Disp::Linear { dst, data } => w.write_linear(NocAddr(*dst), data),
        Disp::Paged { dram, base, page_size, start, pages } => {
            w.write_paged(paged_flags(*dram), *base, *page_size, *start, &paged_data(*page_size, *pages))
        }
        Disp::Packed { addr, dests, shared, size } => {
            let coords: Vec<_> = dests.iter().map(|&(x, y)| worker(x, y)).collect();
            let data: Vec<u8> = (0..size * if *shared { 1 } else { dests.len() }).map(|i| i as u8 ^ 0x5a).collect();
            let data = if *shared { PackedData::Shared(&data) } else { PackedData::PerCore(&data) };
            w.write_packed(*addr, &coords, data)
        }
        Disp::Host { tag, data } => w.write_host(*tag, data),
        Disp::Event { id, cq } => w.write_event(&EventRecord { event_id: *id, cq: *cq, cycle: 99 }),
        Disp::Wait { flags, addr, count } => w.wait(WaitFlags::from_bits_retain(*flags), *addr, *count),
        Disp::Go { signal, dst } => w.go(*signal, NocAddr(*dst)),
        Disp::Offset(v) => w.set_write_offset(*v),
        Disp::Delay(v) => w.delay(*v),
        Disp::Debug(p) => w.debug(p),
        Disp::Launch { dst, msg } => w.launch(NocAddr(*dst), msg),
        Disp::Terminate => w.terminate(),
    }
}

/// The size the calculator gives `d`.
fn size_disp(s: DispatchSize, d: &Disp) -> DispatchSize {
    match d {
        Disp::Linear { data, .. } => s.write_linear(data.len()),
        Disp::Paged { page_size, pages, .. } => s.write_paged((page_size * pages) as usize),
        Disp::Packed { dests, shared, size, .. } => s.write_packed(dests.len(), *size, *shared),
        Disp::Host { data, .. } => s.write_host(data.len()),
        Disp::Event { .. } => s.write_event(),
        Disp::Wait { .. } => s.wait(),
        Disp::Go { .. } | Disp::Offset(_) | Disp::Delay(_) | Disp::Terminate => s.header(),
        Disp::Debug(p) => s.debug(p.len()),
        Disp::Launch { msg, .. } => s.launch(msg.len()),
    }
}

/// The size the calculator gives a chunk of `cmds`.
fn size_of(cmds: &[Pref]) -> usize {
    cmds.iter()
        .fold(ChunkSize::new(), |s, c| match c {
            Pref::Inline { cmds, .. } => s.relay_inline(cmds.iter().fold(DispatchSize::new(), size_disp)),
            Pref::Linear { .. } => s.relay_linear(),
            Pref::Paged { .. } => s.relay_paged(),
            Pref::Stall => s.stall(),
            Pref::ExecBuf { head, .. } => s.exec_buf(head.len()),
            Pref::ExecBufEnd => s.exec_buf_end(),
            Pref::Debug(p) => s.debug(p.len()),
            Pref::Terminate => s.terminate(),
        })
        .bytes()
}

fn encode(cmds: &[Pref]) -> Vec<u8> {
    let mut buf = vec![0xAAu8; 1 << 20];
    let mut enc = Encoder::new(&mut buf);
    for c in cmds {
        match c {
            Pref::Inline { flush, cmds } => {
                enc.relay_inline(*flush, |w| cmds.iter().try_for_each(|d| encode_disp(w, d)))
            }
            Pref::Linear { src, len } => enc.relay_linear(NocAddr(*src), *len),
            Pref::Paged { dram, base, page_size, start, pages } => {
                enc.relay_paged(paged_flags(*dram), *base, *page_size, *start, *pages)
            }
            Pref::Stall => enc.stall(),
            Pref::ExecBuf { base, page_size, pages, head, whole: false } => {
                enc.exec_buf_with_head(*base, *page_size, *pages, head)
            }
            Pref::ExecBuf { base, page_size, pages, head, whole: true } => {
                enc.exec_buf_whole(*base, *page_size, *pages, head)
            }
            Pref::ExecBufEnd => enc.exec_buf_end(),
            Pref::Debug(p) => enc.debug(p),
            Pref::Terminate => enc.terminate(),
        }
        .expect("valid command encodes");
    }
    let n = enc.len();
    buf.truncate(n);
    buf
}

fn check_disp(h: &DispatchHeader, payload: &[u8], d: &Disp) {
    match (h, d) {
        (DispatchHeader::WriteLinear(c), Disp::Linear { dst, data }) => {
            assert_eq!((c.dst, c.length as usize), (*dst, data.len()));
            assert_eq!(&payload[..data.len()], &data[..]);
        }
        (DispatchHeader::WritePaged(c), Disp::Paged { dram, base, page_size, start, pages }) => {
            assert_eq!(
                (c.flags, c.base_addr, c.page_size, c.start_page, c.pages),
                (paged_flags(*dram).bits(), *base, *page_size, *start, *pages)
            );
            assert_eq!(&payload[..(page_size * pages) as usize], &paged_data(*page_size, *pages)[..]);
        }
        (DispatchHeader::WritePacked(c), Disp::Packed { addr, dests, shared, size }) => {
            assert_eq!((c.addr, c.count as usize, c.size as usize), (*addr, dests.len(), *size));
            assert_eq!(PackedFlags::from_bits_retain(c.flags).contains(PackedFlags::SHARED_DATA), *shared);
            for (i, &(x, y)) in dests.iter().enumerate() {
                assert_eq!(&payload[4 * i..4 * i + 4], &worker(x, y).packed().to_le_bytes());
            }
        }
        (DispatchHeader::WriteHost(c), Disp::Host { tag, data }) => {
            assert_eq!((c.tag, c.length as usize, c.flags), (*tag, data.len(), 0));
            assert_eq!(&payload[..data.len()], &data[..]);
        }
        (DispatchHeader::WriteHost(c), Disp::Event { id, cq }) => {
            assert_eq!((c.tag, c.length, c.flags), (*id, 16, 1));
            assert_eq!(&payload[..8], &[id.to_le_bytes(), cq.to_le_bytes()].concat()[..]);
        }
        (DispatchHeader::Wait(c), Disp::Wait { flags, addr, count }) => {
            assert_eq!((c.flags, c.addr, c.count), (*flags, *addr, *count))
        }
        (DispatchHeader::Go(c), Disp::Go { signal, dst }) => assert_eq!((c.signal, c.dst), (*signal, *dst)),
        (DispatchHeader::SetWriteOffset(v), Disp::Offset(e)) => assert_eq!(v, e),
        (DispatchHeader::Delay(v), Disp::Delay(e)) => assert_eq!(v, e),
        (DispatchHeader::Debug(c), Disp::Debug(p)) => {
            assert_eq!(c.length as usize, p.len());
            assert_eq!(&payload[..p.len()], &p[..]);
        }
        (DispatchHeader::Launch(c), Disp::Launch { dst, msg }) => {
            assert_eq!((c.dst, c.length as usize), (*dst, msg.len()));
            assert_eq!(&payload[..msg.len()], &msg[..]);
        }
        (DispatchHeader::Terminate, Disp::Terminate) => {}
        (h, d) => panic!("decoded {h:?}, encoded {d:?}"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    /// A chunk sized by `cqlab_abi::size` before it is written takes
    /// exactly the bytes the encoder writes, command by command.
    #[test]
    fn calculated_size_is_the_encoded_length(cmds in prop::collection::vec(pref(), 1..12)) {
        prop_assert_eq!(size_of(&cmds), encode(&cmds).len());
        for c in &cmds {
            prop_assert_eq!(size_of(std::slice::from_ref(c)), encode(std::slice::from_ref(c)).len(), "{:?}", c);
        }
    }

    #[test]
    fn encode_then_decode_round_trips(cmds in prop::collection::vec(pref(), 1..12)) {
        let bytes = encode(&cmds);
        prop_assert_eq!(bytes.len() % cqlab_abi::PCIE_ALIGNMENT, 0);
        let decoded: Vec<_> = PrefetchStream::new(&bytes).collect::<Result<_, _>>().expect("decodes");
        prop_assert_eq!(decoded.len(), cmds.len());
        for ((_, got), want) in decoded.iter().zip(&cmds) {
            match (&got.header, want) {
                (PrefetchHeader::RelayInline { flush, .. }, Pref::Inline { flush: f, cmds }) => {
                    prop_assert_eq!(flush, f);
                    let inner: Vec<_> = DispatchStream::new(got.payload).collect::<Result<_, _>>().expect("dispatch decodes");
                    prop_assert_eq!(inner.len(), cmds.len());
                    for ((_, dc), d) in inner.iter().zip(cmds) {
                        check_disp(&dc.header, dc.payload, d);
                    }
                }
                (PrefetchHeader::RelayLinear(c), Pref::Linear { src, len }) => prop_assert_eq!((c.src, c.length), (*src, *len)),
                (PrefetchHeader::RelayPaged(c), Pref::Paged { dram, base, page_size, start, pages }) => {
                    prop_assert_eq!((c.flags, c.base_addr, c.page_size, c.start_page, c.pages),
                                    (paged_flags(*dram).bits(), *base, *page_size, *start, *pages));
                }
                (PrefetchHeader::Stall, Pref::Stall) | (PrefetchHeader::ExecBufEnd, Pref::ExecBufEnd)
                    | (PrefetchHeader::Terminate, Pref::Terminate) => {}
                (PrefetchHeader::ExecBuf(c), Pref::ExecBuf { base, page_size, pages, head, whole }) => {
                    prop_assert_eq!((c.base_addr, c.page_size, c.pages), (*base, *page_size, *pages));
                    prop_assert_eq!(ExecBufFlags::from_bits_retain(c.flags).contains(ExecBufFlags::WHOLE), *whole);
                    prop_assert_eq!(got.payload, &head[..]);
                }
                (PrefetchHeader::Debug(c), Pref::Debug(p)) => {
                    prop_assert_eq!(c.length as usize, p.len());
                    prop_assert_eq!(got.payload, &p[..]);
                }
                (g, w) => prop_assert!(false, "decoded {:?}, encoded {:?}", g, w),
            }
        }
    }

    #[test]
    fn decoder_never_panics_on_random_bytes(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        for r in PrefetchStream::new(&bytes) { let _ = r; }
        for r in DispatchStream::new(&bytes) { let _ = r; }
        let mut at = 0;
        while let Ok((_, next)) = decode_dispatch_partial(&bytes, at) {
            if next == at { break; }
            at = next;
        }
    }

    #[test]
    fn decoder_never_panics_on_mutated_streams(cmds in prop::collection::vec(pref(), 1..6),
                                              flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
                                              cut in any::<prop::sample::Index>()) {
        let mut bytes = encode(&cmds);
        for (i, v) in flips { let at = i.index(bytes.len()); bytes[at] = v; }
        let end = cut.index(bytes.len() + 1);
        for (_, cmd) in PrefetchStream::new(&bytes[..end]).flatten() {
            if let PrefetchHeader::RelayInline { .. } = cmd.header {
                for r in DispatchStream::new(cmd.payload) { let _ = r; }
            }
        }
    }
}

#[test]
fn encoder_reports_full_buffer_and_keeps_nothing() {
    let mut buf = [0u8; 100];
    let mut enc = Encoder::new(&mut buf);
    enc.stall().unwrap();
    assert_eq!(enc.stall(), Err(EncodeError::Full { needed: 64, available: 36 }));
    let r = enc.relay_inline(true, |w| w.write_linear(NocAddr::unicast(worker(0, 0), 0), &[1; 64]));
    assert!(matches!(r, Err(EncodeError::Full { .. })));
    assert_eq!(enc.len(), 64);
}

#[test]
fn a_linear_write_filled_in_place_is_the_same_bytes_as_one_copied_in() {
    let dst = NocAddr::multicast(worker(0, 0), worker(3, 2), 0x4000);
    for len in [1usize, 15, 16, 33, 256] {
        let data: Vec<u8> = (0..len).map(|i| (i * 7 + 1) as u8).collect();
        let (mut a, mut b) = ([0xeeu8; 512], [0x55u8; 512]);
        let (mut ea, mut eb) = (Encoder::new(&mut a), Encoder::new(&mut b));
        ea.relay_inline(true, |w| w.write_linear(dst, &data)).unwrap();
        eb.relay_inline(true, |w| w.write_linear_with(dst, len as u32, |out| out.copy_from_slice(&data))).unwrap();
        assert_eq!(ea.bytes(), eb.bytes(), "{len} bytes");
    }
    // Too long for the buffer: refused, and the command's header is not kept.
    let mut buf = [0u8; 128];
    let mut enc = Encoder::new(&mut buf);
    let r = enc.relay_inline(true, |w| {
        w.wait(WaitFlags::BARRIER, 0, 0)?;
        let r = w.write_linear_with(dst, 100, |_| panic!("not filled when refused"));
        assert!(matches!(r, Err(EncodeError::Full { .. })));
        assert_eq!(w.len(), 16, "the refused write left nothing");
        Ok(())
    });
    r.unwrap();
}

#[test]
fn encoder_rejects_invalid_commands() {
    let mut buf = [0u8; 256];
    let mut enc = Encoder::new(&mut buf);
    assert!(matches!(enc.relay_linear(NocAddr(0), 0), Err(EncodeError::Invalid(_))));
    assert!(matches!(enc.relay_inline(true, |_| Ok(())), Err(EncodeError::Invalid(_))));
    let bad_wait = WaitFlags::WAIT_MEMORY | WaitFlags::WAIT_COUNTER;
    assert!(matches!(enc.relay_inline(true, |w| w.wait(bad_wait, 0, 1)), Err(EncodeError::Invalid(_))));
    let at_zero = enc.relay_inline(true, |w| w.wait(WaitFlags::WAIT_MEMORY, 0, 1));
    assert!(matches!(at_zero, Err(EncodeError::Invalid(_))), "a wait on address 0");
    // A trace head is whole PCIe lines, at most EXEC_BUF_HEAD_MAX bytes.
    assert!(matches!(enc.exec_buf_with_head(0, 64, 1, &[0; 48]), Err(EncodeError::Invalid(_))));
    let too_long = vec![0u8; EXEC_BUF_HEAD_MAX as usize + 64];
    assert!(matches!(enc.exec_buf_with_head(0, 64, 1, &too_long), Err(EncodeError::Invalid(_))));
    let far_too_long = vec![0u8; 1 << 17];
    assert!(matches!(enc.exec_buf_with_head(0, 64, 1, &far_too_long), Err(EncodeError::DataLength { .. })));
    // A packed write to more cores than one may name, or of a block larger
    // than any L1 (the firmware adds the blocks up in 32 bits).
    let too_many: Vec<Coord> = (0..=MAX_PACKED_DESTS).map(|i| worker(i as u8 % 16, (i / 16) as u8)).collect();
    let mut packed =
        |dests: &[Coord], each: usize| enc.relay_inline(true, |w| w.write_packed_with(0, dests, each, |_, _| {}));
    assert!(matches!(packed(&too_many, 16), Err(EncodeError::Invalid(_))));
    assert!(matches!(packed(&too_many[..2], MAX_PACKED_SIZE as usize + 1), Err(EncodeError::Invalid(_))));
    assert!(enc.is_empty());
}

#[test]
fn decoder_rejects_bad_trace_heads() {
    let mut buf = [0u8; 256];
    let mut enc = Encoder::new(&mut buf);
    enc.exec_buf_with_head(0x4000, 64, 2, &[7; 128]).unwrap();
    let n = enc.len();
    assert_eq!(n, 64 + 128, "the head follows the header's PCIe line");
    let h: [u8; 16] = buf[..16].try_into().unwrap();
    let PrefetchHeader::ExecBuf(cmd) = PrefetchHeader::parse(&h).unwrap() else { panic!("EXEC_BUF decodes as one") };
    assert_eq!(cmd.head, 128);
    for bad in [100u16, EXEC_BUF_HEAD_MAX as u16 + 64] {
        let mut h = h;
        h[2..4].copy_from_slice(&bad.to_le_bytes());
        assert!(PrefetchHeader::parse(&h).is_err(), "head {bad}");
    }
    // Flags: WHOLE only, and a whole trace holds at least its EXEC_BUF_END.
    let mut unknown = h;
    unknown[1] = 0x82;
    assert!(PrefetchHeader::parse(&unknown).is_err(), "unknown EXEC_BUF flags");
    let mut empty_whole = h;
    (empty_whole[1], empty_whole[2], empty_whole[3]) = (ExecBufFlags::WHOLE.bits(), 0, 0);
    assert!(PrefetchHeader::parse(&empty_whole).is_err(), "a whole trace of no bytes");
    let mut enc = Encoder::new(&mut buf);
    enc.exec_buf_whole(0x4000, 64, 2, &[7; 128]).unwrap();
    let h: [u8; 16] = buf[..16].try_into().unwrap();
    let header = PrefetchHeader::parse(&h).unwrap();
    let PrefetchHeader::ExecBuf(cmd) = header else { panic!("EXEC_BUF decodes as one") };
    assert_eq!((cmd.head, cmd.flags), (128, ExecBufFlags::WHOLE.bits()));
    assert!(header.to_string().ends_with("head=128 whole"), "{header}");
}
