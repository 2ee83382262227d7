//! The chip register for register (issue 25): the NIU's registers per
//! chip and NOC, a hand-written program driving them as tt-metal's
//! `noc_async_read`, `noc_async_write`, the barriers and
//! `noc_semaphore_inc` do with the counters checked after each step, hops
//! on the tori, tiles cqlab does not model, the Tensix coprocessor, and the
//! host's BAR0 (TLB windows and their configuration registers, the PCIe
//! tile's NIU, ARC).

use super::tests::{boot, brisc, halted, niu, noc0, small, status, tiles, BOARDS};
use super::*;
use crate::asm::*;
use crate::hart::HaltReason;
use cqlab_abi::arch::address_map::Region;
use cqlab_abi::arch::arc::{tag, telemetry_table};
use cqlab_abi::arch::bar::BarRegionKind;
use cqlab_abi::arch::niu::{node_id, CmdBufReg};
use cqlab_abi::arch::tlb::{self, TlbConfig};
use cqlab_abi::memory_map::{NOC_ATOMIC_RET, USER};
use cqlab_abi::semaphore;
use cqlab_abi::soc::{Board, HarvestedUnit};

/// Whether a core may write command-buffer register `r` and read the
/// value back (not the send, the read-only ids, the write-only clear).
fn plain(r: &CmdBufReg) -> bool {
    !matches!(r, CmdBufReg::CmdCtrl | CmdBufReg::NodeId | CmdBufReg::EndpointId | CmdBufReg::ClearOutstandingReqCnt)
}

/// BRISC writes a distinct value to every plain register of the four
/// command buffers of both NIUs, then reads them all back (a register
/// decoded onto another would show the later value twice), and reads each
/// NIU's `NOC_NODE_ID` (the tile's coordinates in that NOC's terms),
/// `NOC_ID_LOGICAL` and `NIU_CFG_0`.
#[test]
fn every_niu_register_decodes_at_its_offset_on_both_chips_and_nocs() {
    for board in BOARDS {
        let mut chip = Chip::new(small(board)).unwrap();
        let p = chip.arch();
        let me = tiles(&chip)[4];
        let mut regs = Vec::new();
        for noc in Noc::ALL {
            for buf in 0..4 {
                for reg in CmdBufReg::ALL.into_iter().filter(plain) {
                    if let Some(off) = p.niu.regs.offset(reg) {
                        let value = 0x5A00_0000 | noc.index() << 16 | buf << 8 | regs.len() as u32;
                        regs.push((p.niu.cmd_buf_reg(noc, buf, off), value));
                    }
                }
            }
        }
        let mut prog = Vec::new();
        for &(addr, value) in &regs {
            prog.extend(li(6, addr));
            prog.extend(li(7, value));
            prog.push(sw(7, 6, 0));
        }
        let out = USER.base;
        let mut reads: Vec<u32> = regs.iter().map(|r| r.0).collect();
        for noc in Noc::ALL {
            reads.push(p.niu.cmd_buf_reg(noc, 0, p.niu.regs.node_id));
            reads.push(p.niu.cfg_reg(noc, p.niu.cfg.noc_id_logical));
            reads.push(p.niu.cfg_reg(noc, p.niu.cfg.niu_cfg_0));
        }
        prog.extend(li(8, out));
        for &addr in &reads {
            prog.extend(li(6, addr));
            prog.extend([lw(7, 6, 0), sw(7, 8, 0), addi(8, 8, 4)]);
        }
        prog.push(ECALL);
        boot(&mut chip, me, &prog);
        chip.run_until(|c| halted(c, me), 100_000).unwrap();
        let halt = chip.core_debug(brisc(me)).unwrap().halt.unwrap();
        assert_eq!(halt.reason, HaltReason::Ecall, "{board}: {halt}");
        let got = |k: usize| chip.read_u32(NocAddr::unicast(me, (out + 4 * k as u32) as u64)).unwrap();
        for (k, &(addr, value)) in regs.iter().enumerate() {
            assert_eq!(got(k), value, "{board}: register {addr:#010x}");
        }
        let tile = chip.layout().tile(noc0(&chip, me)).unwrap();
        let g = p.grid;
        for noc in Noc::ALL {
            let k = regs.len() + 3 * noc.index() as usize;
            let own = if noc == Noc::Noc0 { tile.noc0 } else { tile.noc1 };
            assert_eq!(got(k), node_id::encode(own.x, own.y, g.x, g.y, noc), "{board} {noc:?} NOC_NODE_ID");
            assert_eq!(got(k + 1), (me.y as u32) << 6 | me.x as u32, "{board} {noc:?} NOC_ID_LOGICAL");
            assert_ne!(got(k + 2) & cqlab_abi::arch::niu::niu_cfg_0::NOC_ID_TRANSLATE_EN, 0, "{board} {noc:?}");
        }
        // The NOC_NODE_ID fields name this tile on each NOC.
        let id1 = got(regs.len() + 3);
        let x1 = (id1 >> node_id::X_SHIFT) & node_id::COORD_MASK;
        assert_eq!(x1, (g.x - 1 - tile.noc0.x) as u32, "{board}: NOC1 counts x from the other side");
    }
}

/// The counters a step of the tt-metal sequence leaves: what each barrier
/// compares, plus the per-id outstanding counts.
const WATCHED: [u32; 8] = [
    counter::NIU_MST_RD_REQ_SENT,
    counter::NIU_MST_RD_RESP_RECEIVED,
    counter::NIU_MST_NONPOSTED_WR_REQ_SENT,
    counter::NIU_MST_WR_ACK_RECEIVED,
    counter::NIU_MST_NONPOSTED_ATOMIC_SENT,
    counter::NIU_MST_ATOMIC_RESP_RECEIVED,
    counter::reqs_outstanding_id(0),
    counter::reqs_outstanding_id(1),
];

/// A hand-written program on tile `a` driving its NIU on `noc` exactly as
/// tt-metal's dataflow API does (`niu_asm`: dedicated command buffers, wait
/// for `NOC_CMD_CTRL`, then the address split, length, and send), with the
/// barriers comparing software counts with the NIU's counters:
/// 1. `noc_async_read` of 256 bytes of tile `b` with transaction id 1;
///    right after issue the response counter still reads 0 and id 1 has one
///    request outstanding; `noc_async_read_barrier`.
/// 2. `noc_async_write` of those bytes back to `b`; `writes_flushed`
///    (`NONPOSTED_WR_REQ_SENT`), then `noc_async_write_barrier`.
/// 3. `noc_semaphore_inc` of `b`'s semaphore 2 by 3, atomic barrier.
/// 4. A 64-byte multicast write to a 2x2 rectangle, barrier on
///    `WR_ACK_RECEIVED` = acks so far + receivers.
///
/// After each barrier all `WATCHED` counters are stored to L1.
#[test]
fn tt_metal_dataflow_sequences_move_the_counters_as_documented() {
    for board in BOARDS {
        for noc in Noc::ALL {
            let mut chip = Chip::new(small(board)).unwrap();
            let t = tiles(&chip);
            let (a, b) = (t[0], t[t.len() - 1]);
            let rect = (Coord::new(a.x + 2, a.y + 1), Coord::new(a.x + 3, a.y + 2));
            let receivers: Vec<Coord> = t
                .iter()
                .copied()
                .filter(|c| (rect.0.x..=rect.1.x).contains(&c.x) && (rect.0.y..=rect.1.y).contains(&c.y))
                .collect();
            assert_eq!(receivers.len(), 4, "{board}: a 2x2 rectangle of Tensix tiles");
            let pattern: Vec<u8> = (0..=255u8).collect();
            chip.write(NocAddr::unicast(b, USER.base as u64), &pattern).unwrap();
            chip.write_u32(NocAddr::unicast(b, semaphore::addr(2) as u64), 5).unwrap();
            chip.write(NocAddr::unicast(a, USER.base as u64 + 0x800), &[0xC3; 64]).unwrap();
            let n = niu(&chip, noc);
            let (buf, out) = (USER.base + 0x400, USER.base + 0x1000);
            let mut p = Vec::new();
            let mut slot = 0u32;
            let mut snapshot = |p: &mut Vec<u32>| {
                for c in WATCHED {
                    p.extend(n.load_counter(9, c));
                    p.extend(li(6, out + 4 * slot));
                    p.push(sw(9, 6, 0));
                    slot += 1;
                }
            };
            // 1. Read with transaction id 1.
            p.extend(n.read(a, NocAddr::unicast(b, USER.base as u64), buf, 256, 1));
            p.extend(n.load_counter(10, counter::NIU_MST_RD_RESP_RECEIVED));
            p.extend(n.load_counter(11, counter::reqs_outstanding_id(1)));
            p.extend(n.wait_counter(counter::NIU_MST_RD_RESP_RECEIVED, 1));
            snapshot(&mut p);
            // 2. Write back, flushed, then acked.
            p.extend(n.write(a, buf, NocAddr::unicast(b, USER.base as u64 + 0x100), 256));
            p.extend(n.wait_counter(counter::NIU_MST_NONPOSTED_WR_REQ_SENT, 1));
            p.extend(n.load_counter(12, counter::NIU_MST_WR_ACK_RECEIVED));
            p.extend(n.wait_counter(counter::NIU_MST_WR_ACK_RECEIVED, 1));
            snapshot(&mut p);
            // 3. Semaphore increment.
            p.extend(n.atomic_inc(a, NocAddr::unicast(b, semaphore::addr(2) as u64), 3, NOC_ATOMIC_RET));
            p.extend(n.wait_counter(counter::NIU_MST_ATOMIC_RESP_RECEIVED, 1));
            snapshot(&mut p);
            // 4. Multicast.
            let dst = NocAddr::multicast(rect.0, rect.1, USER.base as u64 + 0x800);
            p.extend(n.write(a, USER.base + 0x800, dst, 64));
            p.extend(n.wait_counter(counter::NIU_MST_WR_ACK_RECEIVED, 1 + receivers.len() as u32));
            snapshot(&mut p);
            p.push(ECALL);
            boot(&mut chip, a, &p);
            chip.run_until(|c| halted(c, a), 200_000).unwrap();
            let dbg = chip.core_debug(brisc(a)).unwrap();
            assert_eq!(dbg.halt.map(|h| h.reason), Some(HaltReason::Ecall), "{board} {noc:?}: {dbg}");
            let what = format!("{board} {noc:?}");
            assert_eq!((dbg.regs[10], dbg.regs[11]), (0, 1), "{what}: right after issue: no response, one outstanding");
            assert_eq!(dbg.regs[12], 0, "{what}: flushed before acknowledged");
            let snap = |k: u32| -> Vec<u32> {
                (0..WATCHED.len() as u32)
                    .map(|i| chip.read_u32(NocAddr::unicast(a, (out + 4 * (k * 8 + i)) as u64)).unwrap())
                    .collect()
            };
            let r = receivers.len() as u32;
            assert_eq!(snap(0), [1, 1, 0, 0, 0, 0, 0, 0], "{what}: after the read barrier");
            assert_eq!(snap(1), [1, 1, 1, 1, 0, 0, 0, 0], "{what}: after the write barrier");
            assert_eq!(snap(2), [1, 1, 1, 1, 1, 1, 0, 0], "{what}: after the atomic barrier");
            assert_eq!(snap(3), [1, 1, 2, 1 + r, 1, 1, 0, 0], "{what}: after the multicast barrier");
            // The data and the semaphore.
            let mut back = vec![0; 256];
            chip.read(NocAddr::unicast(b, USER.base as u64 + 0x100), &mut back).unwrap();
            assert_eq!(back, pattern, "{what}");
            assert_eq!(chip.read_u32(NocAddr::unicast(b, semaphore::addr(2) as u64)).unwrap(), 8, "{what}");
            assert_eq!(chip.read_u32(NocAddr::unicast(a, NOC_ATOMIC_RET as u64)).unwrap(), 5, "{what}: old value");
            for &c in &receivers {
                assert_eq!(chip.read_u32(NocAddr::unicast(c, USER.base as u64 + 0x800)).unwrap(), 0xC3C3_C3C3);
                let got = status(&chip, c, noc, counter::NIU_SLV_NONPOSTED_WR_REQ_RECEIVED);
                assert_eq!(got, 1, "{what}: {c} received the multicast");
            }
            // Data words are flits of the chip's NOC.
            let flit = chip.arch().noc.flit_bytes;
            let mst = |i| status(&chip, a, noc, i);
            assert_eq!(mst(counter::NIU_MST_RD_DATA_WORD_RECEIVED), 256 / flit, "{what}");
            assert_eq!(mst(counter::NIU_MST_NONPOSTED_WR_DATA_WORD_SENT), 256 / flit + 64u32.div_ceil(flit), "{what}");
            assert_eq!(mst(counter::NIU_MST_CMD_ACCEPTED), 4, "{what}");
            // The target's NIU on the same NOC served one of each.
            let slv = |i| status(&chip, b, noc, i);
            assert_eq!(
                [
                    slv(counter::NIU_SLV_RD_REQ_RECEIVED),
                    slv(counter::NIU_SLV_RD_RESP_SENT),
                    slv(counter::NIU_SLV_NONPOSTED_WR_REQ_RECEIVED),
                    slv(counter::NIU_SLV_WR_ACK_SENT),
                    slv(counter::NIU_SLV_NONPOSTED_ATOMIC_RECEIVED),
                    slv(counter::NIU_SLV_ATOMIC_RESP_SENT),
                ],
                [1; 6],
                "{what}"
            );
            let other = if noc == Noc::Noc0 { Noc::Noc1 } else { Noc::Noc0 };
            assert_eq!(status(&chip, b, other, counter::NIU_SLV_REQ_ACCEPTED), 0, "{what}: the other NOC idle");
        }
    }
}

/// A 4-byte read's round trip from `me` to `from` on `noc`: the device
/// time at which the response counter moves, with 1-cycle slices (the issue
/// time is the same in every run, so differences are exact).
fn read_done_at(cfg: &SimConfig, noc: Noc, me: Coord, from: Coord) -> u64 {
    let mut chip = Chip::new(cfg.clone()).unwrap();
    let n = niu(&chip, noc);
    let mut p = n.read(me, NocAddr::unicast(from, USER.base as u64), USER.base + 0x100, 4, 0);
    p.push(jal(0, 0));
    boot(&mut chip, me, &p);
    chip.run_until(|c| status(c, me, noc, counter::NIU_MST_RD_RESP_RECEIVED) == 1, 100_000).unwrap()
}

/// NOC0 runs east and south, NOC1 west and north, each a one-way torus: a
/// neighbour on the west is one hop away on NOC1 and wraps all the way
/// round on NOC0. A read's round trip grows by two hops' cycles per hop.
#[test]
fn hops_follow_each_nocs_torus_including_the_wrap() {
    for board in BOARDS {
        let probe = Chip::new(small(board)).unwrap();
        let layout = probe.layout();
        let width = layout.grid().x as u32;
        let is_tensix = |c: Coord| layout.tile(c).is_some_and(|t| t.kind == TileKind::Tensix);
        // A Tensix tile with Tensix neighbours east and west (NOC0).
        let mid = layout
            .workers()
            .into_iter()
            .find(|c| c.x > 0 && is_tensix(Coord::new(c.x - 1, c.y)) && is_tensix(Coord::new(c.x + 1, c.y)))
            .unwrap();
        let (west, east) = (Coord::new(mid.x - 1, mid.y), Coord::new(mid.x + 1, mid.y));
        assert_eq!((layout.hop_count(Noc::Noc0, mid, east), layout.hop_count(Noc::Noc0, mid, west)), (1, width - 1));
        assert_eq!((layout.hop_count(Noc::Noc1, mid, west), layout.hop_count(Noc::Noc1, mid, east)), (1, width - 1));
        let t = |c: Coord| layout.tile(c).unwrap().translated;
        let (me, w, e) = (t(mid), t(west), t(east));
        let hop = probe.config().noc.hop_cycles;
        let cfg = SimConfig { quantum_cycles: 1, ..small(board) };
        for noc in Noc::ALL {
            let (near, far) = if noc == Noc::Noc0 { (e, w) } else { (w, e) };
            let (short, long) = (read_done_at(&cfg, noc, me, near), read_done_at(&cfg, noc, me, far));
            let expected = 2 * hop * (width as u64 - 2);
            assert_eq!(long - short, expected, "{board} {noc:?}: 1 hop done at {short}, {} hops at {long}", width - 1);
        }
    }
}

/// Tiles cqlab does not model refuse the host and the cores, naming the
/// tile and the address.
#[test]
fn ethernet_router_and_harvested_tiles_refuse_every_access() {
    for board in [Board::WormholeN300, Board::BlackholeP100a] {
        let mut chip = Chip::new(SimConfig { sysmem_size: 1 << 20, ..SimConfig::for_board(board) }).unwrap();
        let layout = chip.layout().clone();
        let mut kinds = std::collections::BTreeSet::new();
        let mut harvested_tensix = None;
        for tile in layout.tiles() {
            if matches!(tile.kind, TileKind::Tensix | TileKind::Dram { .. } | TileKind::Pcie | TileKind::Arc) {
                continue;
            }
            kinds.insert(format!("{:?}", tile.kind).split(['(', ' ', '{']).next().unwrap().to_string());
            if tile.kind == TileKind::Harvested(HarvestedUnit::Tensix) {
                harvested_tensix = Some(tile.translated);
            }
            // Its translated coordinates always reach it; its NOC0 ones do
            // unless translation gives them to another tile (Blackhole's
            // Tensix range, where harvested columns move to the end).
            assert_eq!(layout.resolve(Noc::Noc0, tile.translated), Some(tile.noc0), "{board}: {}", tile.noc0);
            let own = layout.resolve(Noc::Noc0, tile.noc0) == Some(tile.noc0);
            for at in [Some(tile.translated), own.then_some(tile.noc0)].into_iter().flatten() {
                let err = match chip.read_u32(NocAddr::unicast(at, 0x100)) {
                    Ok(v) => panic!("{board}: {at} ({:?} at NOC0 {}) answered {v:#x}", tile.kind, tile.noc0),
                    Err(e) => e,
                };
                let SimError::Refused { tile: Some(t), addr: 0x100, reason, .. } = &err else {
                    panic!("{board}: {at}: {err}")
                };
                assert_eq!(*t, tile.noc0, "{board}: {at} reaches its own tile");
                assert!(!reason.is_empty());
                let text = err.to_string();
                assert!(text.contains(&tile.noc0.to_string()) && text.contains("0x100"), "{text}");
                assert!(chip.write_u32(NocAddr::unicast(at, 0x100), 1).is_err());
            }
        }
        assert!(kinds.contains("Harvested") && kinds.len() >= 2, "{board}: {kinds:?}");
        // A core's request to a harvested Tensix tile halts it at issue.
        let harvested = harvested_tensix.expect("a harvested Tensix tile");
        let me = tiles(&chip)[0];
        let n = niu(&chip, Noc::Noc0);
        let mut p = n.read(me, NocAddr::unicast(harvested, 0x1000), USER.base, 4, 0);
        p.push(ECALL);
        boot(&mut chip, me, &p);
        chip.advance(500);
        let h = chip.core_debug(brisc(me)).unwrap().halt.unwrap();
        assert!(
            matches!(h.reason, HaltReason::BadNocRequest { reason, coord, .. }
                if reason.contains("harvested Tensix") && coord == harvested),
            "{board}: {h}"
        );
    }
}

/// Touching the Tensix coprocessor (or any other block cqlab does not
/// model) halts the core with an error naming the address and the block.
#[test]
fn coprocessor_and_other_unmodelled_blocks_halt_the_core_naming_the_address() {
    for board in BOARDS {
        let mut chip = Chip::new(small(board)).unwrap();
        let p = chip.arch();
        let map = p.address_map;
        let regions = [
            Region::TensixInstrPush,
            Region::TensixConfig,
            Region::TensixGpr,
            Region::TensixPcBuf,
            Region::TensixMailbox,
            Region::Overlay,
            Region::Pic,
        ];
        let t = tiles(&chip);
        for (k, region) in regions.into_iter().enumerate() {
            let r = map.iter().find(|r| r.region == region).unwrap_or_else(|| panic!("{board}: {region:?}"));
            let me = t[k];
            let store = k % 2 == 1;
            let mut prog = li(6, r.start).to_vec();
            prog.push(if store { sw(0, 6, 0) } else { lw(7, 6, 0) });
            prog.push(ECALL);
            boot(&mut chip, me, &prog);
            chip.advance(300);
            let h = chip.core_debug(brisc(me)).unwrap().halt.unwrap();
            let HaltReason::NotModelled { addr, what } = h.reason else { panic!("{board} {region:?}: {h}") };
            assert_eq!(addr, r.start, "{board} {region:?}");
            if region.is_tensix_coprocessor() {
                assert!(what.contains("Tensix coprocessor"), "{board} {region:?}: {what}");
            }
            assert!(h.to_string().contains(&format!("0x{:08x}", r.start)), "{h}");
        }
    }
}

/// Writes `words` (the config register's bits) for TLB `index`.
fn configure(chip: &mut Chip, index: u32, cfg: &TlbConfig) {
    let (kind, _) = chip.arch().bar.window(index).unwrap();
    let bits = kind.fields.encode(cfg).unwrap();
    let n = chip.arch().bar.tlb_config_words();
    let bytes: Vec<u8> = tlb::to_words(bits)[..n].iter().flat_map(|w| w.to_le_bytes()).collect();
    chip.bar_write(0, chip.arch().bar.tlb_config_addr(index) as u64, &bytes).unwrap();
    let mut back = vec![0; bytes.len()];
    chip.bar_read(0, chip.arch().bar.tlb_config_addr(index) as u64, &mut back).unwrap();
    assert_eq!(back, bytes, "the configuration register reads back");
}

/// Each kind of TLB window, configured through its register at
/// 0x1FC00000 + index x entry size, shows the tile and address its
/// configuration names; a multicast window writes a rectangle; a NOC1
/// window uses NOC1; offsets outside every window and region are errors.
#[test]
fn bar0_tlb_windows_of_each_kind_reach_the_configured_tile() {
    for board in BOARDS {
        let mut chip = Chip::new(small(board)).unwrap();
        let p = chip.arch();
        let t = tiles(&chip);
        let bank = chip.layout().dram_banks()[1];
        let dram = chip.layout().tile(bank.worker_endpoint_on(Noc::Noc0)).unwrap().translated;
        for (k, kind) in p.bar.windows.iter().enumerate() {
            let index = kind.first_index + 1;
            let (_, at) = p.bar.window(index).unwrap();
            // L1 of a Tensix tile.
            let tile = t[k + 3];
            let (cfg, off) = kind.target(tile.x, tile.y, USER.base as u64 + 0x40, Noc::Noc0);
            configure(&mut chip, index, &cfg);
            chip.bar_write(kind.bar, at + off, &0xB0A7_0000u32.to_le_bytes()).unwrap();
            let direct = NocAddr::unicast(tile, USER.base as u64 + 0x40);
            assert_eq!(chip.read_u32(direct).unwrap(), 0xB0A7_0000, "{board}: window {index}");
            let mut b = [0; 4];
            chip.bar_read(kind.bar, at + off, &mut b).unwrap();
            assert_eq!(u32::from_le_bytes(b), 0xB0A7_0000);
            // DRAM far above the window's size: the local offset selects it.
            let channel = chip.layout().descriptor().dram_bank_size;
            let k = ((channel - bank.offset - 0x100) >> kind.size_log2).min(5);
            let addr = bank.offset + (k << kind.size_log2) + 0x80;
            let (cfg, off) = kind.target(dram.x, dram.y, addr, Noc::Noc0);
            assert_eq!(cfg.local_offset, addr >> kind.size_log2);
            configure(&mut chip, index, &cfg);
            chip.bar_write(kind.bar, at + off, &[7, 8, 9, 10]).unwrap();
            assert_eq!(chip.read_u32(NocAddr::unicast(dram, addr)).unwrap(), 0x0A09_0807, "{board}: window {index}");
            // Running past the window's end is refused.
            let end = at + kind.size() - 2;
            assert!(chip.bar_write(kind.bar, end, &[0; 4]).unwrap_err().to_string().contains("past the end"));
        }
        // A multicast window on NOC1 writes the rectangle's Tensix tiles
        // (NOC1 runs west and north: its start corner is the far one, as
        // tt-metal swaps the corners of NOC1 multicasts).
        let kind = p.bar.windows[0];
        let (s, e) = (t[0], Coord::new(t[0].x + 1, t[0].y + 1));
        let cfg = TlbConfig {
            mcast: true,
            x_start: e.x,
            y_start: e.y,
            ..TlbConfig::unicast(s.x, s.y, (USER.base as u64) >> kind.size_log2, Noc::Noc1)
        };
        configure(&mut chip, 0, &cfg);
        let off = USER.base as u64 & (kind.size() - 1);
        chip.bar_write(0, off + 0x10, &0x7777_0001u32.to_le_bytes()).unwrap();
        for c in &t {
            let inside = (s.x..=e.x).contains(&c.x) && (s.y..=e.y).contains(&c.y);
            let v = chip.read_u32(NocAddr::unicast(*c, USER.base as u64 + 0x10)).unwrap();
            assert_eq!(v, if inside { 0x7777_0001 } else { 0 }, "{board}: {c}");
        }
        // Reading through it is refused (it panicked, helper-52), and a
        // refused read changes nothing, device time included.
        let before = (chip.now(), chip.digest());
        let err = chip.bar_read(0, off + 0x10, &mut [0; 4]).unwrap_err().to_string();
        assert!(err.contains("TLB window 0") && err.contains("multicast"), "{board}: {err}");
        assert_eq!((chip.now(), chip.digest()), before, "{board}: the refused read moved the device");
        // A window on a harvested or unmodelled tile names the window.
        let eth = chip
            .layout()
            .tiles()
            .iter()
            .find(|t| matches!(t.kind, TileKind::Eth { .. } | TileKind::Harvested(HarvestedUnit::Eth { .. })));
        let eth = eth.unwrap().translated;
        configure(&mut chip, 2, &TlbConfig::unicast(eth.x, eth.y, 0, Noc::Noc0));
        let (_, at) = p.bar.window(2).unwrap();
        let before = (chip.now(), chip.digest());
        let err = chip.bar_read(0, at, &mut [0; 4]).unwrap_err().to_string();
        assert!(err.contains("TLB window 2") && err.contains("Ethernet"), "{board}: {err}");
        assert_eq!((chip.now(), chip.digest()), before, "{board}: the refused read moved the device");
        // Offsets in no window and no register region.
        let last = p.bar.windows.iter().filter(|k| k.bar == 0).map(|k| k.bar_offset + k.count as u64 * k.size()).max();
        let gap = last.unwrap();
        let err = chip.bar_write(0, gap, &[0; 4]).unwrap_err().to_string();
        assert!(err.contains("in no TLB window"), "{board}: {err}");
        assert!(chip.bar_read(0, p.bar.bar0_size, &mut [0; 4]).unwrap_err().to_string().contains("past the end"));
        assert!(chip.bar_read(2, 0, &mut [0; 4]).unwrap_err().to_string().contains("BAR0 and BAR4"));
        // The PCIe tile's own NIU (NOC_NODE_ID, NIU_CFG_0) in its BAR0 region.
        let pcie = *chip.layout().tile(chip.layout().pcie_tile()).unwrap();
        for noc in Noc::ALL {
            let region = p.bar.regions.iter().find(|r| r.kind == BarRegionKind::PcieNiu(noc)).unwrap();
            let mut b = [0; 4];
            chip.bar_read(0, region.offset as u64 + p.niu.regs.node_id as u64, &mut b).unwrap();
            let own = if noc == Noc::Noc0 { pcie.noc0 } else { pcie.noc1 };
            assert_eq!(u32::from_le_bytes(b), node_id::encode(own.x, own.y, p.grid.x, p.grid.y, noc), "{board}");
        }
    }
}

/// ARC answers what a host reads at open, where the chip puts it:
/// Wormhole in BAR0 (the reset unit's scratch and the CSM through the APB
/// and CSM regions), Blackhole over the NOC through a TLB window (its ARC
/// region of BAR0 is PCIe 1's; the boards cqlab models use PCIe 0).
#[test]
fn a_host_finds_arc_ready_and_reads_the_telemetry_through_bar0() {
    for board in BOARDS {
        let mut chip = Chip::new(small(board)).unwrap();
        let p = chip.arch();
        let arc = p.arc;
        let read = |chip: &mut Chip, addr: u32| -> u32 {
            let mut b = [0; 4];
            match board.arch() {
                cqlab_abi::arch::Arch::Wormhole => {
                    let off = if addr >= cqlab_abi::arch::arc::APB_BASE {
                        arc.bar0_apb.unwrap() + (addr - cqlab_abi::arch::arc::APB_BASE)
                    } else {
                        let (bar, base) = arc.csm.unwrap();
                        bar + (addr - base)
                    };
                    chip.bar_read(0, off as u64, &mut b).unwrap();
                }
                cqlab_abi::arch::Arch::Blackhole => {
                    let kind = p.bar.windows[0];
                    let at_arc = chip.layout().tile(chip.layout().arc_tile()).unwrap().translated;
                    let (cfg, off) = kind.target(at_arc.x, at_arc.y, arc.noc_offset + addr as u64, Noc::Noc0);
                    configure(chip, 0, &cfg);
                    chip.bar_read(0, off, &mut b).unwrap();
                }
            }
            u32::from_le_bytes(b)
        };
        assert_eq!(read(&mut chip, arc.ready.status), arc.ready.up_value(), "{board}: ARC is up");
        let (table, data) = (read(&mut chip, arc.telemetry_table_ptr), read(&mut chip, arc.telemetry_data_ptr));
        let entries = read(&mut chip, table + telemetry_table::COUNT_OFFSET);
        let mut board_id = 0u64;
        let mut translation = None;
        for i in 0..entries {
            let (t, index) = telemetry_table::split(read(&mut chip, table + telemetry_table::entry_offset(i)));
            let v = read(&mut chip, data + 4 * index as u32);
            match t {
                tag::BOARD_ID_HIGH => board_id |= (v as u64) << 32,
                tag::BOARD_ID_LOW => board_id |= v as u64,
                tag::NOC_TRANSLATION => translation = Some(v),
                _ => {}
            }
        }
        assert_eq!(Board::from_board_id(board_id), Some(board), "{board}");
        assert_eq!(translation, Some(1), "{board}: NOC translation on");
        if board.arch() == cqlab_abi::arch::Arch::Blackhole {
            let err = chip.bar_read(0, arc.bar0_apb.unwrap() as u64, &mut [0; 4]).unwrap_err().to_string();
            assert!(err.contains("PCIe 1"), "{err}");
        }
        // What ARC does not model is an error naming the ARC address.
        let err = chip.bar_read(0, 0x1FF3_0100, &mut [0; 4]);
        if board.arch() == cqlab_abi::arch::Arch::Wormhole {
            assert!(err.unwrap_err().to_string().contains("0x80030100"));
        }
    }
}

/// Where the chip does not translate, a request names a tile by its
/// requesting NOC's own coordinates: the PCIe tile (host memory) has one
/// name on NOC0 and another on NOC1, as the `NocMap` tells firmware; the
/// NOC0 name on NOC1 reaches another tile.
#[test]
fn nocs_name_untranslated_tiles_by_their_own_coordinates() {
    for board in BOARDS {
        let mut chip = Chip::new(small(board)).unwrap();
        let layout = chip.layout().clone();
        let placement = layout.placement(1).unwrap();
        let map = layout.noc_map(&placement).unwrap();
        let base = layout.params().bar.host_mem_base;
        for noc in Noc::ALL {
            let host = NocAddr(map.pcie[noc.index() as usize]);
            assert_eq!(host.0 & base, base, "{board}: the host-memory base is part of the address");
            chip.write_on(noc, host.offset(0x40 + 4 * noc.index() as u64), &[noc.index() as u8 + 1; 4]).unwrap();
        }
        assert_eq!(&chip.sysmem()[0x40..0x48], &[1, 1, 1, 1, 2, 2, 2, 2], "{board}");
        let (n0, n1) = (NocAddr(map.pcie[0]), NocAddr(map.pcie[1]));
        if n0.coord() != n1.coord() {
            let err = chip.write_on(Noc::Noc1, n0.offset(0x40), &[0; 4]).unwrap_err();
            assert!(matches!(err, SimError::Refused { noc: Noc::Noc1, .. }), "{board}: {err}");
        }
        // A core on NOC1 writes host memory through the NOC1 name.
        let me = tiles(&chip)[0];
        chip.write(NocAddr::unicast(me, USER.base as u64), &[0xEE; 8]).unwrap();
        let n = niu(&chip, Noc::Noc1);
        let mut p = n.write(me, USER.base, n1.offset(0x80), 8);
        p.extend(n.wait_counter(counter::NIU_MST_WR_ACK_RECEIVED, 1));
        p.push(ECALL);
        boot(&mut chip, me, &p);
        chip.run_until(|c| halted(c, me), 100_000).unwrap();
        assert_eq!(&chip.sysmem()[0x80..0x88], &[0xEE; 8], "{board}");
    }
}

/// The wall clock (`WALL_CLOCK_L`, `_H` latched by the low read) counts
/// device cycles for every core of a tile and for the host; it is
/// read-only; a core polling it is never parked (its value moves by itself).
#[test]
fn the_wall_clock_counts_device_cycles_for_cores_and_host() {
    use cqlab_abi::arch::tensix::{WALL_CLOCK_H, WALL_CLOCK_L};
    for board in BOARDS {
        let mut chip = Chip::new(small(board)).unwrap();
        let me = tiles(&chip)[0];
        // Read it, wait until it has moved by 5000, read mcycle and it again.
        let mut p = li(6, WALL_CLOCK_L).to_vec();
        p.extend([lw(10, 6, 0), addi(12, 0, 0)]);
        p.extend(li(13, 5000));
        p.extend([lw(11, 6, 0), sub(12, 11, 10), bltu(12, 13, -8)]);
        p.extend([csrrs(14, crate::csr::MCYCLE as u32, 0), lw(15, 6, (WALL_CLOCK_H - WALL_CLOCK_L) as i32), ECALL]);
        boot(&mut chip, me, &p);
        chip.run_until(|c| halted(c, me), 100_000).unwrap();
        let c = chip.core(brisc(me)).unwrap();
        let r = c.hart.regs();
        assert_eq!(c.hart.halted().map(|h| h.reason), Some(HaltReason::Ecall), "{board}");
        assert!(r[11] - r[10] >= 5000, "{board}: {} -> {}", r[10], r[11]);
        assert!(r[14].abs_diff(r[11]) < 20, "{board}: mcycle {} and the wall clock {} agree", r[14], r[11]);
        assert_eq!(r[15], 0, "{board}: the high word latched with the low read");
        assert_eq!(c.fast_forwarded_cycles(), 0, "{board}: a clock poll is never parked");
        chip.advance(1000);
        let wall = chip.read_u32(NocAddr::unicast(me, WALL_CLOCK_L as u64)).unwrap();
        assert_eq!(wall as u64, chip.now(), "{board}: the host reads device time");
        assert_eq!(chip.read_u32(NocAddr::unicast(me, WALL_CLOCK_H as u64)).unwrap(), 0);
        let err = chip.write_u32(NocAddr::unicast(me, WALL_CLOCK_L as u64), 1).unwrap_err();
        assert!(err.to_string().contains("read-only"), "{board}: {err}");
    }
}
