//! Every register address and bit field of `cqlab_abi::arch`, asserted
//! against the literal value of its cited source. One test per topic; the
//! citation heads each table. (Revisions read: see `arch/mod.rs`.)

use cqlab_abi::arch::address_map::{self, Region};
use cqlab_abi::arch::niu::{cmd_buf, counter, niu_cfg_0, node_id, CmdBufReg, NiuReg};
use cqlab_abi::arch::noc_addr::{self, AddrSplit, AddrWords, CoordField};
use cqlab_abi::arch::noc_cmd::{atomic, cmd_ctrl, ctrl, packet_tag};
use cqlab_abi::arch::tensix::{self, Processor, ResetPcWriters};
use cqlab_abi::arch::tlb::{self, TlbConfig, TlbOrdering};
use cqlab_abi::arch::{arc, bar, Arch, ArchParams, Noc, BLACKHOLE, WORMHOLE};
use proptest::prelude::*;

/// Asserts `(name, actual, expected)` rows, naming the failing row.
fn check<T: PartialEq + std::fmt::Debug>(source: &str, rows: &[(&str, T, T)]) {
    for (name, actual, expected) in rows {
        assert_eq!(actual, expected, "{name} (source: {source})");
    }
}

/// One fact of both chips: its name, how to read it from an `ArchParams`,
/// and the cited Wormhole and Blackhole values.
type Row = (&'static str, fn(&ArchParams) -> u64, u64, u64);

fn check_both(source: &str, rows: &[Row]) {
    for &(name, get, wh, bh) in rows {
        assert_eq!(get(&WORMHOLE), wh, "Wormhole {name} (source: {source})");
        assert_eq!(get(&BLACKHOLE), bh, "Blackhole {name} (source: {source})");
    }
}

// --- Chip-wide sizes -------------------------------------------------------

#[test]
fn chip_sizes() {
    // tt-umd {wormhole,blackhole}_implementation.hpp GRID_SIZE, TENSIX_L1_SIZE,
    // ETH_L1_SIZE, AICLK_BUSY_VAL; tt-metal {wh,bh} noc_parameters.h
    // NOC_MAX_BURST_SIZE, NOC_WORD_BYTES, NOC_*_ALIGNMENT_BYTES,
    // NOC_REG_SPACE_START_ADDR.
    check_both(
        "tt-umd *_implementation.hpp; tt-metal noc_parameters.h",
        &[
            ("GRID_SIZE x", |p| p.grid.x as u64, 10, 17),
            ("GRID_SIZE y", |p| p.grid.y as u64, 12, 12),
            ("TENSIX_L1_SIZE", |p| p.l1_size as u64, 1_499_136, 1_572_864),
            ("TENSIX_L1_SIZE hex", |p| p.l1_size as u64, 0x16_E000, 0x18_0000),
            ("ETH_L1_SIZE", |p| p.eth_l1_size as u64, 262_144, 262_144),
            ("AICLK_BUSY_VAL", |p| p.clock_hz, 1_000_000_000, 1_350_000_000),
            ("NOC_MAX_BURST_SIZE", |p| p.noc.max_packet as u64, 8192, 16384),
            ("NOC_WORD_BYTES", |p| p.noc.flit_bytes as u64, 32, 64),
            ("NOC_L1_READ_ALIGNMENT_BYTES", |p| p.noc.alignment.l1_read as u64, 16, 16),
            ("NOC_L1_WRITE_ALIGNMENT_BYTES", |p| p.noc.alignment.l1_write as u64, 16, 16),
            ("NOC_DRAM_READ_ALIGNMENT_BYTES", |p| p.noc.alignment.dram_read as u64, 32, 64),
            ("NOC_DRAM_WRITE_ALIGNMENT_BYTES", |p| p.noc.alignment.dram_write as u64, 16, 16),
            ("NOC_PCIE_READ_ALIGNMENT_BYTES", |p| p.noc.alignment.pcie_read as u64, 32, 64),
            ("NOC_PCIE_WRITE_ALIGNMENT_BYTES", |p| p.noc.alignment.pcie_write as u64, 16, 16),
            ("NOC_REG_SPACE_START_ADDR", |p| p.noc.reg_space_start as u64, 0xFF00_0000, 0xFF00_0000),
        ],
    );
    assert_eq!(Arch::Wormhole.params(), &WORMHOLE);
    assert_eq!(Arch::Blackhole.params(), &BLACKHOLE);
    assert_eq!(WORMHOLE.noc.packets(8193), 2);
    assert_eq!(BLACKHOLE.noc.packets(16384), 1);
    assert_eq!(WORMHOLE.noc.flits(33), 2);
}

// --- NIU register blocks -----------------------------------------------------

fn reg0(p: &ArchParams, off: u32) -> u64 {
    p.niu.cmd_buf_reg(Noc::Noc0, 0, off) as u64
}

fn cfg0(p: &ArchParams, index: u32) -> u64 {
    p.niu.cfg_reg(Noc::Noc0, index) as u64
}

#[test]
fn niu_registers() {
    // tt-metal wh noc_parameters.h and bh noc_parameters.h:
    // NOC_REGS_START_ADDR 0xFFB20000, NOC_INSTANCE_OFFSET 0x10000,
    // NOC_CMD_BUF_OFFSET (wh 0x400, bh 0x800), the NOC_* command-buffer
    // offsets (NOC_AT_LEN_BE_1 and NOC_BRCST_EXCLUDE exist on Blackhole only:
    // 0 below), NOC_CFG(i) +0x100, NOC_STATUS(i) +0x200, ROUTER_CFG_1 2,
    // ROUTER_CFG_3 4, NOC_X_ID_TRANSLATE_TABLE_0 6, NOC_Y_ID_TRANSLATE_TABLE_0
    // (wh 0xA, bh 0xC), NOC_ID_LOGICAL (wh 0xE, bh 0x12; tt-umd
    // *_implementation.hpp NOC_ID_TRANSLATED_OFFSET 0x138 / 0x148), table
    // entries 4 bits in 4 registers (wh) / NOC_TRANSLATE_ID_WIDTH 5 in 6
    // registers (bh); tt-umd NOC_NODE_ID_OFFSET 0x2C / 0x44.
    check_both(
        "tt-metal {wh,bh} noc_parameters.h",
        &[
            ("NOC0 base", |p| p.niu.base(Noc::Noc0) as u64, 0xFFB2_0000, 0xFFB2_0000),
            ("NOC1 base", |p| p.niu.base(Noc::Noc1) as u64, 0xFFB3_0000, 0xFFB3_0000),
            ("buf 1 base", |p| p.niu.cmd_buf_base(Noc::Noc0, 1) as u64, 0xFFB2_0400, 0xFFB2_0800),
            ("NOC1 buf 3 base", |p| p.niu.cmd_buf_base(Noc::Noc1, 3) as u64, 0xFFB3_0C00, 0xFFB3_1800),
            ("NOC_TARG_ADDR_LO", |p| reg0(p, p.niu.regs.targ_addr_lo), 0xFFB2_0000, 0xFFB2_0000),
            ("NOC_TARG_ADDR_MID", |p| reg0(p, p.niu.regs.targ_addr_mid), 0xFFB2_0004, 0xFFB2_0004),
            ("NOC_TARG_ADDR_HI", |p| reg0(p, p.niu.regs.targ_addr_hi), 0xFFB2_0008, 0xFFB2_0008),
            ("NOC_RET_ADDR_LO", |p| reg0(p, p.niu.regs.ret_addr_lo), 0xFFB2_000C, 0xFFB2_000C),
            ("NOC_RET_ADDR_MID", |p| reg0(p, p.niu.regs.ret_addr_mid), 0xFFB2_0010, 0xFFB2_0010),
            ("NOC_RET_ADDR_HI", |p| reg0(p, p.niu.regs.ret_addr_hi), 0xFFB2_0014, 0xFFB2_0014),
            ("NOC_PACKET_TAG", |p| reg0(p, p.niu.regs.packet_tag), 0xFFB2_0018, 0xFFB2_0018),
            ("NOC_CTRL", |p| reg0(p, p.niu.regs.ctrl), 0xFFB2_001C, 0xFFB2_001C),
            ("NOC_AT_LEN_BE", |p| reg0(p, p.niu.regs.at_len_be), 0xFFB2_0020, 0xFFB2_0020),
            ("NOC_AT_LEN_BE_1", |p| p.niu.regs.at_len_be_1.map_or(0, |o| reg0(p, o)), 0, 0xFFB2_0024),
            ("NOC_AT_DATA", |p| reg0(p, p.niu.regs.at_data), 0xFFB2_0024, 0xFFB2_0028),
            ("NOC_BRCST_EXCLUDE", |p| p.niu.regs.brcst_exclude.map_or(0, |o| reg0(p, o)), 0, 0xFFB2_002C),
            ("NOC_CMD_CTRL", |p| reg0(p, p.niu.regs.cmd_ctrl), 0xFFB2_0028, 0xFFB2_0040),
            ("NOC_NODE_ID", |p| reg0(p, p.niu.regs.node_id), 0xFFB2_002C, 0xFFB2_0044),
            ("NOC_ENDPOINT_ID", |p| reg0(p, p.niu.regs.endpoint_id), 0xFFB2_0030, 0xFFB2_0048),
            (
                "NOC_CLEAR_OUTSTANDING_REQ_CNT",
                |p| reg0(p, p.niu.regs.clear_outstanding_req_cnt),
                0xFFB2_0050,
                0xFFB2_0060,
            ),
            (
                "NOC1 buf 2 NOC_CMD_CTRL",
                |p| p.niu.cmd_buf_reg(Noc::Noc1, 2, p.niu.regs.cmd_ctrl) as u64,
                0xFFB3_0828,
                0xFFB3_1040,
            ),
            ("NOC_CFG(NIU_CFG_0)", |p| cfg0(p, p.niu.cfg.niu_cfg_0), 0xFFB2_0100, 0xFFB2_0100),
            ("NOC_CFG(ROUTER_CFG_1)", |p| cfg0(p, p.niu.cfg.router_cfg_1), 0xFFB2_0108, 0xFFB2_0108),
            ("NOC_CFG(ROUTER_CFG_3)", |p| cfg0(p, p.niu.cfg.router_cfg_3), 0xFFB2_0110, 0xFFB2_0110),
            ("NOC_X_ID_TRANSLATE_TABLE_0", |p| cfg0(p, p.niu.cfg.x_translate_table), 0xFFB2_0118, 0xFFB2_0118),
            ("NOC_Y_ID_TRANSLATE_TABLE_0", |p| cfg0(p, p.niu.cfg.y_translate_table), 0xFFB2_0128, 0xFFB2_0130),
            ("NOC_ID_LOGICAL", |p| cfg0(p, p.niu.cfg.noc_id_logical), 0xFFB2_0138, 0xFFB2_0148),
            ("NOC_STATUS(0)", |p| p.niu.status_reg(Noc::Noc0, 0) as u64, 0xFFB2_0200, 0xFFB2_0200),
            ("NOC1 NOC_STATUS(0x10)", |p| p.niu.status_reg(Noc::Noc1, 0x10) as u64, 0xFFB3_0240, 0xFFB3_0240),
            ("translate table registers", |p| p.niu.cfg.translate_table_regs as u64, 4, 6),
            ("translate entry bits", |p| p.niu.cfg.translate_entry_bits as u64, 4, 5),
            ("command buffers", |p| p.niu.cmd_bufs as u64, 4, 4),
        ],
    );
}

#[test]
fn niu_decode_names_every_register() {
    for params in [&WORMHOLE, &BLACKHOLE] {
        let n = &params.niu;
        for noc in Noc::ALL {
            for buf in 0..n.cmd_bufs {
                for reg in CmdBufReg::ALL {
                    let Some(off) = n.regs.offset(reg) else { continue };
                    let addr = n.cmd_buf_reg(noc, buf, off);
                    assert_eq!(
                        n.decode(addr),
                        Some((noc, NiuReg::CmdBuf { buf, reg })),
                        "{} {}",
                        params.arch,
                        reg.name()
                    );
                }
            }
            assert_eq!(n.decode(n.status_reg(noc, 0x2A)), Some((noc, NiuReg::Status(0x2A))));
            assert_eq!(n.decode(n.cfg_reg(noc, n.cfg.noc_id_logical)), Some((noc, NiuReg::Cfg(n.cfg.noc_id_logical))));
        }
        assert_eq!(n.decode(0xFFB1_21B0), None);
        assert_eq!(n.decode(0xFFB4_0000), None);
    }
    assert_eq!(WORMHOLE.niu.regs.reg_at(0x40), None, "0x40 is NUM_MEM_PARITY_ERR on Wormhole, not a command register");
    assert_eq!(BLACKHOLE.niu.regs.reg_at(0x40), Some(CmdBufReg::CmdCtrl));
}

#[test]
fn niu_counters() {
    // tt-metal wh and bh noc_parameters.h NIU_MST_* / NIU_SLV_*; the same
    // indices on both chips.
    let src = "tt-metal wh/bh noc_parameters.h";
    check(
        src,
        &[
            ("NIU_MST_ATOMIC_RESP_RECEIVED", counter::NIU_MST_ATOMIC_RESP_RECEIVED, 0x0),
            ("NIU_MST_WR_ACK_RECEIVED", counter::NIU_MST_WR_ACK_RECEIVED, 0x1),
            ("NIU_MST_RD_RESP_RECEIVED", counter::NIU_MST_RD_RESP_RECEIVED, 0x2),
            ("NIU_MST_RD_DATA_WORD_RECEIVED", counter::NIU_MST_RD_DATA_WORD_RECEIVED, 0x3),
            ("NIU_MST_CMD_ACCEPTED", counter::NIU_MST_CMD_ACCEPTED, 0x4),
            ("NIU_MST_RD_REQ_SENT", counter::NIU_MST_RD_REQ_SENT, 0x5),
            ("NIU_MST_NONPOSTED_ATOMIC_SENT", counter::NIU_MST_NONPOSTED_ATOMIC_SENT, 0x6),
            ("NIU_MST_POSTED_ATOMIC_SENT", counter::NIU_MST_POSTED_ATOMIC_SENT, 0x7),
            ("NIU_MST_NONPOSTED_WR_DATA_WORD_SENT", counter::NIU_MST_NONPOSTED_WR_DATA_WORD_SENT, 0x8),
            ("NIU_MST_POSTED_WR_DATA_WORD_SENT", counter::NIU_MST_POSTED_WR_DATA_WORD_SENT, 0x9),
            ("NIU_MST_NONPOSTED_WR_REQ_SENT", counter::NIU_MST_NONPOSTED_WR_REQ_SENT, 0xA),
            ("NIU_MST_POSTED_WR_REQ_SENT", counter::NIU_MST_POSTED_WR_REQ_SENT, 0xB),
            ("NIU_MST_NONPOSTED_WR_REQ_STARTED", counter::NIU_MST_NONPOSTED_WR_REQ_STARTED, 0xC),
            ("NIU_MST_POSTED_WR_REQ_STARTED", counter::NIU_MST_POSTED_WR_REQ_STARTED, 0xD),
            ("NIU_MST_RD_REQ_STARTED", counter::NIU_MST_RD_REQ_STARTED, 0xE),
            ("NIU_MST_NONPOSTED_ATOMIC_STARTED", counter::NIU_MST_NONPOSTED_ATOMIC_STARTED, 0xF),
            ("NIU_MST_REQS_OUTSTANDING_ID(0)", counter::reqs_outstanding_id(0), 0x10),
            ("NIU_MST_REQS_OUTSTANDING_ID(15)", counter::reqs_outstanding_id(15), 0x1F),
            ("NIU_MST_WRITE_REQS_OUTGOING_ID(0)", counter::write_reqs_outgoing_id(0), 0x20),
            ("NIU_MST_WRITE_REQS_OUTGOING_ID(15)", counter::write_reqs_outgoing_id(15), 0x2F),
            ("NIU_SLV_ATOMIC_RESP_SENT", counter::NIU_SLV_ATOMIC_RESP_SENT, 0x30),
            ("NIU_SLV_WR_ACK_SENT", counter::NIU_SLV_WR_ACK_SENT, 0x31),
            ("NIU_SLV_RD_RESP_SENT", counter::NIU_SLV_RD_RESP_SENT, 0x32),
            ("NIU_SLV_RD_DATA_WORD_SENT", counter::NIU_SLV_RD_DATA_WORD_SENT, 0x33),
            ("NIU_SLV_REQ_ACCEPTED", counter::NIU_SLV_REQ_ACCEPTED, 0x34),
            ("NIU_SLV_RD_REQ_RECEIVED", counter::NIU_SLV_RD_REQ_RECEIVED, 0x35),
            ("NIU_SLV_NONPOSTED_ATOMIC_RECEIVED", counter::NIU_SLV_NONPOSTED_ATOMIC_RECEIVED, 0x36),
            ("NIU_SLV_POSTED_ATOMIC_RECEIVED", counter::NIU_SLV_POSTED_ATOMIC_RECEIVED, 0x37),
            ("NIU_SLV_NONPOSTED_WR_DATA_WORD_RECEIVED", counter::NIU_SLV_NONPOSTED_WR_DATA_WORD_RECEIVED, 0x38),
            ("NIU_SLV_POSTED_WR_DATA_WORD_RECEIVED", counter::NIU_SLV_POSTED_WR_DATA_WORD_RECEIVED, 0x39),
            ("NIU_SLV_NONPOSTED_WR_REQ_RECEIVED", counter::NIU_SLV_NONPOSTED_WR_REQ_RECEIVED, 0x3A),
            ("NIU_SLV_POSTED_WR_REQ_RECEIVED", counter::NIU_SLV_POSTED_WR_REQ_RECEIVED, 0x3B),
            ("NIU_SLV_NONPOSTED_WR_REQ_STARTED", counter::NIU_SLV_NONPOSTED_WR_REQ_STARTED, 0x3C),
            ("NIU_SLV_POSTED_WR_REQ_STARTED", counter::NIU_SLV_POSTED_WR_REQ_STARTED, 0x3D),
        ],
    );
    for &(name, index) in counter::NAMED {
        assert_eq!(counter::name(index).unwrap().to_string(), name);
    }
    assert_eq!(counter::name(0x13).unwrap().to_string(), "NIU_MST_REQS_OUTSTANDING_ID(3)");
    assert_eq!(counter::name(0x2F).unwrap().to_string(), "NIU_MST_WRITE_REQS_OUTGOING_ID(15)");
    assert!(counter::name(0x50).is_none());
    // tt-metal noc_nonblocking_api.h NCRISC_WR_CMD_BUF 0, NCRISC_RD_CMD_BUF 1,
    // NCRISC_WR_REG_CMD_BUF 2, NCRISC_AT_CMD_BUF 3.
    check(
        "tt-metal noc_nonblocking_api.h",
        &[
            ("WR", cmd_buf::WRITE, 0),
            ("RD", cmd_buf::READ, 1),
            ("WR_REG", cmd_buf::WRITE_REG, 2),
            ("AT", cmd_buf::ATOMIC, 3),
        ],
    );
}

#[test]
fn niu_cfg0_and_node_id() {
    // tt-metal wh/bh noc_parameters.h NIU_CFG_0_TILE_CLK_OFF 12,
    // NIU_CFG_0_NOC_ID_TRANSLATE_EN 14, NIU_CFG_0_AXI_SUBORDINATE_ENABLE 15,
    // NIU_CFG_0_CMD_BUFFER_FIFO_EN 16.
    check(
        "tt-metal noc_parameters.h NIU_CFG_0_*",
        &[
            ("TILE_CLK_OFF", niu_cfg_0::TILE_CLK_OFF, 1 << 12),
            ("NOC_ID_TRANSLATE_EN", niu_cfg_0::NOC_ID_TRANSLATE_EN, 1 << 14),
            ("AXI_SUBORDINATE_ENABLE", niu_cfg_0::AXI_SUBORDINATE_ENABLE, 1 << 15),
            ("CMD_BUFFER_FIFO_EN", niu_cfg_0::CMD_BUFFER_FIFO_EN, 1 << 16),
        ],
    );
    // tt-isa NoC/MemoryMap.md NOC_NODE_ID: x [5:0], y [11:6], width [18:12],
    // height [25:19], X-first [28].
    let w = node_id::encode(3, 2, 10, 12, Noc::Noc0);
    assert_eq!(w, 3 | 2 << 6 | 10 << 12 | 12 << 19 | 1 << 28);
    assert_eq!(node_id::encode(3, 2, 17, 12, Noc::Noc1), 3 | 2 << 6 | 17 << 12 | 12 << 19);
}

// --- NOC_CTRL, packet tag, atomics ---------------------------------------

#[test]
fn noc_ctrl_bits() {
    // tt-metal wh and bh noc_parameters.h NOC_CMD_* and NOC_CTRL_*.
    check(
        "tt-metal noc_parameters.h NOC_CMD_*",
        &[
            ("NOC_CMD_RD", ctrl::CMD_RD, 0),
            ("NOC_CMD_AT", ctrl::CMD_AT, 1),
            ("NOC_CMD_WR", ctrl::CMD_WR, 2),
            ("NOC_CMD_WR_BE", ctrl::WR_BE, 0x4),
            ("NOC_CMD_WR_INLINE", ctrl::WR_INLINE, 0x8),
            ("NOC_CMD_RESP_MARKED", ctrl::RESP_MARKED, 0x10),
            ("NOC_CMD_BRCST_PACKET", ctrl::BRCST_PACKET, 0x20),
            ("NOC_CMD_VC_LINKED", ctrl::VC_LINKED, 0x40),
            ("NOC_CMD_VC_STATIC", ctrl::VC_STATIC, 0x80),
            ("NOC_CMD_PATH_RESERVE", ctrl::PATH_RESERVE, 0x100),
            ("NOC_CMD_MEM_RD_DROP_ACK", ctrl::MEM_RD_DROP_ACK, 0x200),
            ("NOC_CMD_STATIC_VC(1)", ctrl::static_vc(1), 1 << 13),
            ("NOC_CMD_STATIC_VC(5)", ctrl::static_vc(5), 5 << 13),
            ("NOC_CMD_BRCST_XY(1)", ctrl::brcst_xy(1), 1 << 16),
            ("NOC_CMD_BRCST_SRC_INCLUDE", ctrl::BRCST_SRC_INCLUDE, 1 << 17),
            ("NOC_CMD_ARB_PRIORITY(3)", ctrl::arb_priority(3), 3 << 27),
            ("NOC_CMD_L1_ACC_AT_EN", ctrl::L1_ACC_AT_EN, 1 << 31),
            ("NOC_CTRL_SEND_REQ", cmd_ctrl::SEND_REQ, 1),
            ("NOC_CTRL_STATUS_READY", cmd_ctrl::STATUS_READY, 0),
        ],
    );
    // tt-metal's request words (noc_nonblocking_api.h): noc_init's read
    // word RD | RESP_MARKED | VC_STATIC | STATIC_VC(1); ncrisc_noc_fast_write
    // CPY | WR | VC_STATIC | STATIC_VC(vc) | RESP_MARKED, a multicast with
    // PATH_RESERVE | BRCST_PACKET on VC 4; noc_fast_atomic_increment
    // VC_STATIC | STATIC_VC(1) | RESP_MARKED | AT.
    assert_eq!(ctrl::READ, 0x2090);
    assert_eq!(ctrl::WRITE_UNICAST, 0x2092);
    assert_eq!(ctrl::WRITE_MULTICAST, 0x81B2);
    assert_eq!(ctrl::ATOMIC, 0x2091);
    assert_eq!((ctrl::write(false), ctrl::write(true)), (ctrl::WRITE_UNICAST, ctrl::WRITE_MULTICAST));
}

#[test]
fn packet_tag_and_atomics() {
    // tt-metal noc_parameters.h NOC_PACKET_TAG_TRANSACTION_ID(id) = id << 10,
    // NOC_PACKET_TAG_HEADER_STORE 1 << 9, NOC_MAX_TRANSACTION_ID 0xF,
    // NOC_MAX_TRANSACTION_ID_COUNT 255; NOC_AT_INS(x) = x << 12,
    // NOC_AT_INS_* opcodes, NOC_AT_WRAP(w) = w << 2, NOC_AT_IND_32(i) = i,
    // NOC_AT_IND_32_SRC(i) = i << 10.
    check(
        "tt-metal noc_parameters.h NOC_PACKET_TAG_*, NOC_AT_*",
        &[
            ("TRANSACTION_ID(5)", packet_tag::transaction_id(5), 5 << 10),
            ("TRANSACTION_ID_SHIFT", packet_tag::TRANSACTION_ID_SHIFT, 10),
            ("HEADER_STORE", packet_tag::HEADER_STORE, 1 << 9),
            ("MAX_TRANSACTION_ID", packet_tag::MAX_TRANSACTION_ID, 0xF),
            ("MAX_TRANSACTION_ID_COUNT", packet_tag::MAX_TRANSACTION_ID_COUNT, 255),
            ("id of tag", packet_tag::transaction_id_of(0xF << 10 | 0x3FF), 0xF),
            ("NOC_AT_INS(1)", atomic::ins(1), 1 << 12),
            ("INS_NOP", atomic::INS_NOP, 0),
            ("INS_INCR_GET", atomic::INS_INCR_GET, 1),
            ("INS_INCR_GET_PTR", atomic::INS_INCR_GET_PTR, 2),
            ("INS_SWAP", atomic::INS_SWAP, 3),
            ("INS_CAS", atomic::INS_CAS, 4),
            ("INS_GET_TILE_MAP", atomic::INS_GET_TILE_MAP, 5),
            ("INS_STORE_IND", atomic::INS_STORE_IND, 6),
            ("INS_SWAP_4B", atomic::INS_SWAP_4B, 7),
            ("INS_ACC", atomic::INS_ACC, 9),
            ("NOC_AT_WRAP(31)", atomic::wrap(31), 31 << 2),
            ("NOC_AT_IND_32(3)", atomic::ind_32(3), 3),
            ("NOC_AT_IND_32_SRC(1)", atomic::ind_32_src(1), 1 << 10),
            // noc_fast_atomic_increment for L1 0x1008: INS(1) | WRAP(31) | IND_32(2).
            ("incr_get(0x1008)", atomic::incr_get(0x1008), 1 << 12 | 31 << 2 | 2),
            ("ins_of", atomic::ins_of(atomic::incr_get(0x1008)), 1),
            ("wrap_of", atomic::wrap_of(atomic::incr_get(0x1008)), 31),
            ("ind_32_of", atomic::ind_32_of(atomic::incr_get(0x100C)), 3),
        ],
    );
    // tt-metal noc_nonblocking_api.h noc_inline_dw_write: be << (addr & (NOC_WORD_BYTES - 1)).
    assert_eq!(WORMHOLE.noc.inline_be(0x1234, 0xF), 0xF << 0x14);
    assert_eq!(BLACKHOLE.noc.inline_be(0x1234, 0xF), 0xF << 0x34);
}

// --- NOC addresses -----------------------------------------------------------

#[test]
fn noc_address_encoding() {
    // tt-metal noc_parameters.h NOC_ADDR_LOCAL_BITS 36, NOC_ADDR_NODE_ID_BITS
    // 6, NOC_XY_ADDR, NOC_MULTICAST_ADDR.
    check(
        "tt-metal noc_parameters.h",
        &[
            ("NOC_ADDR_LOCAL_BITS", noc_addr::LOCAL_ADDR_BITS as u64, 36),
            ("NOC_ADDR_NODE_ID_BITS", noc_addr::NODE_ID_BITS as u64, 6),
            ("X", noc_addr::X_SHIFT as u64, 36),
            ("Y", noc_addr::Y_SHIFT as u64, 42),
            ("X_END", noc_addr::MCAST_X_END_SHIFT as u64, 36),
            ("Y_END", noc_addr::MCAST_Y_END_SHIFT as u64, 42),
            ("X_START", noc_addr::MCAST_X_START_SHIFT as u64, 48),
            ("Y_START", noc_addr::MCAST_Y_START_SHIFT as u64, 54),
            ("NOC_XY_ADDR(1, 2, 0x100)", noc_addr::unicast(1, 2, 0x100), 2 << 42 | 1 << 36 | 0x100),
            (
                "NOC_MULTICAST_ADDR(1, 2, 8, 9, 0x40)",
                noc_addr::multicast(1, 2, 8, 9, 0x40),
                2 << 54 | 1 << 48 | 9 << 42 | 8 << 36 | 0x40,
            ),
            ("BH PCIe flag", noc_addr::BH_PCIE_FLAG, 1 << 60),
        ],
    );
    let a = noc_addr::multicast(1, 2, 8, 9, 0xF_0000_0040);
    assert_eq!(
        (noc_addr::x_start(a), noc_addr::y_start(a), noc_addr::x(a), noc_addr::y(a), noc_addr::local(a)),
        (1, 2, 8, 9, 0xF_0000_0040)
    );
}

#[test]
fn noc_address_split_wormhole() {
    // tt-metal wh noc_nonblocking_api.h: NOC_ADDR_COORD_SHIFT 32, LO = addr,
    // MID = addr >> 32 (NOC_TARG_ADDR_COORDINATE = NOC_TARG_ADDR_MID);
    // wh noc_parameters.h NOC_COORD_REG_OFFSET 4, NOC_XY_PCIE_ENCODING.
    let s = WORMHOLE.noc.split;
    assert_eq!(s, AddrSplit::CoordsInMid);
    let addr = noc_addr::unicast(3, 2, 0x8_0000_1000); // PCIe tile (0, 3) style
    let w = s.split(addr);
    assert_eq!(w, AddrWords { lo: 0x1000, mid: (2 << 10 | 3 << 4 | 0x8), hi: 0 });
    assert_eq!(s.coords(w), CoordField::unicast(3, 2));
    assert_eq!(s.tile_addr(w), 0x8_0000_1000);
    assert_eq!(s.join(w), addr);
    assert_eq!(s.words(0x8_0000_1000, CoordField::unicast(3, 2)), w);
    assert!(!s.uses_hi());
    // tt-metal wh noc_parameters.h NOC_XY_PCIE_ENCODING(0, 3): (3 << 42) | 0x8_0000_0000.
    assert_eq!(noc_addr::unicast(0, 3, 0) | WORMHOLE.bar.host_mem_base, 3 << 42 | 0x8_0000_0000);
    // Multicast coordinates in MID: x_end [9:4], y_end [15:10], x_start [21:16], y_start [27:22].
    let m = s.split(noc_addr::multicast(1, 2, 8, 9, 0x40));
    assert_eq!(m.mid, 8 << 4 | 9 << 10 | 1 << 16 | 2 << 22);
    let c = s.coords(m);
    assert_eq!((c.x_start(), c.y_start(), c.x(), c.y()), (1, 2, 8, 9));
}

#[test]
fn noc_address_split_blackhole() {
    // tt-metal bh noc_nonblocking_api.h: MID = (addr >> 32) & NOC_PCIE_MASK
    // 0x1000000F, HI = (addr >> NOC_ADDR_COORD_SHIFT 36) & 0xFFFFFF
    // (NOC_TARG_ADDR_COORDINATE = NOC_TARG_ADDR_HI); bh noc_parameters.h
    // NOC_COORD_REG_OFFSET 0, NOC_XY_PCIE_ENCODING = coords << 36 | 1 << 60.
    let s = BLACKHOLE.noc.split;
    assert_eq!(s, AddrSplit::CoordsInHi);
    let addr = noc_addr::unicast(19, 24, 0x3_0000_1000) | noc_addr::BH_PCIE_FLAG;
    let w = s.split(addr);
    assert_eq!(w, AddrWords { lo: 0x1000, mid: 0x1000_0003, hi: 24 << 6 | 19 });
    assert_eq!(s.coords(w), CoordField::unicast(19, 24));
    assert_eq!(s.tile_addr(w), 0x1000_0003_0000_1000);
    assert_eq!(s.join(w), addr);
    assert_eq!(s.words(0x1000_0003_0000_1000, CoordField::unicast(19, 24)), w);
    assert!(s.uses_hi());
    let m = s.split(noc_addr::multicast(1, 2, 14, 11, 0x40));
    assert_eq!(m.hi, 14 | 11 << 6 | 1 << 12 | 2 << 18);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn split_join_roundtrip(xs in 0u8..64, ys in 0u8..64, xe in 0u8..64, ye in 0u8..64, local in 0u64..(1 << 36), pcie: bool) {
        let wh = noc_addr::multicast(xs, ys, xe, ye, local);
        prop_assert_eq!(AddrSplit::CoordsInMid.join(AddrSplit::CoordsInMid.split(wh)), wh);
        let bh = wh | if pcie { noc_addr::BH_PCIE_FLAG } else { 0 };
        prop_assert_eq!(AddrSplit::CoordsInHi.join(AddrSplit::CoordsInHi.split(bh)), bh);
        let c = AddrSplit::CoordsInHi.coords(AddrSplit::CoordsInHi.split(bh));
        prop_assert_eq!((c.x_start(), c.y_start(), c.x(), c.y()), (xs, ys, xe, ye));
    }

    #[test]
    fn tlb_encode_decode_roundtrip(kind in 0usize..5, off: u64, xe in 0u8..64, ye in 0u8..64, xs in 0u8..64, ys in 0u8..64,
                                   noc1: bool, mcast: bool, ord in 0u32..4, linked: bool, svc: bool) {
        let kinds = [tlb::WH_1M_FIELDS, tlb::WH_2M_FIELDS, tlb::WH_16M_FIELDS, tlb::BH_2M_FIELDS, tlb::BH_4G_FIELDS];
        let f = kinds[kind];
        let c = TlbConfig {
            local_offset: off & ((1u64 << f.local_offset_bits()) - 1),
            x_end: xe, y_end: ye, x_start: xs, y_start: ys,
            noc_sel: if noc1 { Noc::Noc1 } else { Noc::Noc0 },
            mcast, ordering: TlbOrdering::from_bits(ord), linked, static_vc: svc,
        };
        let bits = f.encode(&c).unwrap();
        prop_assert_eq!(f.decode(tlb::from_words(tlb::to_words(bits))).unwrap(), c);
    }
}

// --- Tensix cores: reset, PCs, wall clock, local memory ---------------------

#[test]
fn soft_reset_and_wall_clock() {
    // tt-metal wh/bh tensix.h RISCV_DEBUG_REGS_START_ADDR 0xFFB12000,
    // RISCV_DEBUG_REG_SOFT_RESET_0 0xFFB121B0, RISCV_DEBUG_REG_WALL_CLOCK_L
    // 0xFFB121F0, _H 0xFFB121F8; tt-umd *_implementation.hpp SOFT_RESET_BRISC
    // 1 << 11, TRISC0..2 1 << 12..14, NCRISC 1 << 18, STAGGERED_START 1 << 31;
    // blackhole-py hw.py SOFT_RESET_ALL 0x47800, SOFT_RESET_BRISC_ONLY_RUN 0x47000.
    check(
        "tt-metal tensix.h; tt-umd *_implementation.hpp; blackhole-py hw.py",
        &[
            ("RISCV_DEBUG_REGS_START_ADDR", tensix::DEBUG_REGS_BASE, 0xFFB1_2000),
            ("RISCV_DEBUG_REG_SOFT_RESET_0", tensix::SOFT_RESET_0, 0xFFB1_21B0),
            ("BRISC", Processor::Brisc.soft_reset_mask(), 0x800),
            ("TRISC0", Processor::Trisc0.soft_reset_mask(), 0x1000),
            ("TRISC1", Processor::Trisc1.soft_reset_mask(), 0x2000),
            ("TRISC2", Processor::Trisc2.soft_reset_mask(), 0x4000),
            ("NCRISC", Processor::Ncrisc.soft_reset_mask(), 0x4_0000),
            ("SOFT_RESET_ALL", tensix::SOFT_RESET_ALL, 0x4_7800),
            ("SOFT_RESET_BRISC_ONLY_RUN", tensix::SOFT_RESET_BRISC_ONLY_RUN, 0x4_7000),
            ("SOFT_RESET_STAGGERED_START", tensix::SOFT_RESET_STAGGERED_START, 1 << 31),
            ("WALL_CLOCK_L", tensix::WALL_CLOCK_L, 0xFFB1_21F0),
            ("WALL_CLOCK_L + 4 (live high)", tensix::WALL_CLOCK_H_LIVE, 0xFFB1_21F4),
            ("WALL_CLOCK_H", tensix::WALL_CLOCK_H, 0xFFB1_21F8),
            ("MEM_LOCAL_BASE", tensix::LOCAL_MEM_BASE, 0xFFB0_0000),
        ],
    );
    let all = Processor::ALL.iter().fold(0, |m, p| m | p.soft_reset_mask());
    assert_eq!(all, tensix::SOFT_RESET_ALL);
    assert_eq!(all & !Processor::Brisc.soft_reset_mask(), tensix::SOFT_RESET_BRISC_ONLY_RUN);
}

#[test]
fn reset_pcs() {
    // tt-isa WormholeB0/TensixTile/SoftReset.md and BlackholeA0 SoftReset.md:
    // BRISC 0; TRISC0..2 0x6000/0xA000/0xE000; NCRISC 0x12000 by default.
    for t in [&WORMHOLE.tensix, &BLACKHOLE.tensix] {
        check(
            "tt-isa TensixTile/SoftReset.md",
            &[
                ("BRISC", t.default_reset_pc(Processor::Brisc), 0),
                ("TRISC0", t.default_reset_pc(Processor::Trisc0), 0x6000),
                ("TRISC1", t.default_reset_pc(Processor::Trisc1), 0xA000),
                ("TRISC2", t.default_reset_pc(Processor::Trisc2), 0xE000),
                ("NCRISC", t.default_reset_pc(Processor::Ncrisc), 0x1_2000),
            ],
        );
    }
    // tt-metal wh cfg_defines.h: TENSIX_CFG_BASE 0xFFEF0000 + 4 * ADDR32 with
    // TRISC_RESET_PC_SEC0_PC 158, SEC1 159, SEC2 160, TRISC override 161,
    // NCRISC_RESET_PC_PC 162, NCRISC override 163.
    let wh = WORMHOLE.tensix.reset_pc;
    check(
        "tt-metal wh cfg_defines.h",
        &[
            ("TRISC_RESET_PC_SEC0_PC", wh.trisc_pc[0], 0xFFEF_0000 + 4 * 158),
            ("TRISC_RESET_PC_SEC1_PC", wh.trisc_pc[1], 0xFFEF_0000 + 4 * 159),
            ("TRISC_RESET_PC_SEC2_PC", wh.trisc_pc[2], 0xFFEF_0000 + 4 * 160),
            ("TRISC_RESET_PC_OVERRIDE", wh.trisc_override, 0xFFEF_0000 + 4 * 161),
            ("NCRISC_RESET_PC_PC", wh.ncrisc_pc, 0xFFEF_0000 + 4 * 162),
            ("NCRISC_RESET_PC_OVERRIDE", wh.ncrisc_override, 0xFFEF_0000 + 4 * 163),
            ("literal 0xFFEF0278", wh.trisc_pc[0], 0xFFEF_0278),
        ],
    );
    assert_eq!(wh.writers, ResetPcWriters::BriscAndTriscs);
    // tt-metal bh tensix.h RISCV_DEBUG_REG_TRISC0_RESET_PC 0xFFB12228 ..
    // RISCV_DEBUG_REG_NCRISC_RESET_PC_OVERRIDE 0xFFB1223C.
    let bh = BLACKHOLE.tensix.reset_pc;
    check(
        "tt-metal bh tensix.h",
        &[
            ("TRISC0_RESET_PC", bh.trisc_pc[0], 0xFFB1_2228),
            ("TRISC1_RESET_PC", bh.trisc_pc[1], 0xFFB1_222C),
            ("TRISC2_RESET_PC", bh.trisc_pc[2], 0xFFB1_2230),
            ("TRISC_RESET_PC_OVERRIDE", bh.trisc_override, 0xFFB1_2234),
            ("NCRISC_RESET_PC", bh.ncrisc_pc, 0xFFB1_2238),
            ("NCRISC_RESET_PC_OVERRIDE", bh.ncrisc_override, 0xFFB1_223C),
        ],
    );
    assert_eq!(bh.writers, ResetPcWriters::Anyone);
    assert_eq!(bh.for_processor(Processor::Trisc2), Some((0xFFB1_2230, 0xFFB1_2234, 0b100)));
    assert_eq!(bh.for_processor(Processor::Ncrisc), Some((0xFFB1_2238, 0xFFB1_223C, 1)));
    assert_eq!(bh.for_processor(Processor::Brisc), None);
}

#[test]
fn local_memory() {
    // tt-metal wh dev_mem_map.h MEM_BRISC/NCRISC_LOCAL_SIZE 4K,
    // MEM_TRISC_LOCAL_SIZE 2K, MEM_NCRISC_IRAM_BASE 0xFFC00000 (16K); bh
    // dev_mem_map.h 8K / 8K / 4K; tt-isa BlackholeA0 BabyRISCV/README.md
    // slow-path aliases.
    let (wh, bh) = (&WORMHOLE.tensix, &BLACKHOLE.tensix);
    check(
        "tt-metal dev_mem_map.h MEM_*_LOCAL_SIZE",
        &[
            ("WH BRISC", wh.local_mem_size(Processor::Brisc), 4096),
            ("WH NCRISC", wh.local_mem_size(Processor::Ncrisc), 4096),
            ("WH TRISC0", wh.local_mem_size(Processor::Trisc0), 2048),
            ("WH TRISC2", wh.local_mem_size(Processor::Trisc2), 2048),
            ("BH BRISC", bh.local_mem_size(Processor::Brisc), 8192),
            ("BH NCRISC", bh.local_mem_size(Processor::Ncrisc), 8192),
            ("BH TRISC1", bh.local_mem_size(Processor::Trisc1), 4096),
        ],
    );
    assert_eq!(wh.ncrisc_iram, Some((0xFFC0_0000, 16 * 1024)));
    assert_eq!(bh.ncrisc_iram, None);
    assert_eq!(bh.local_mem_alias, Some([0xFFB1_4000, 0xFFB1_6000, 0xFFB1_8000, 0xFFB1_A000, 0xFFB1_C000]));
    assert_eq!(wh.local_mem_alias, None);
}

// --- RISC-V address map ------------------------------------------------------

#[test]
fn address_map() {
    // tt-isa WormholeB0/TensixTile/BabyRISCV/README.md and BlackholeA0 ..., "Memory map".
    let wh = WORMHOLE.address_map;
    let bh = BLACKHOLE.address_map;
    let cases: &[(&[address_map::Range], u32, Option<Region>)] = &[
        (wh, 0x0, Some(Region::L1)),
        (wh, 0x16_DFFF, Some(Region::L1)),
        (wh, 0x16_E000, None),
        (bh, 0x17_FFFF, Some(Region::L1)),
        (wh, 0xFFB0_0FFF, Some(Region::LocalMem)),
        (wh, 0xFFB0_1000, None),
        (bh, 0xFFB0_1FFF, Some(Region::LocalMem)),
        (wh, 0xFFB1_1000, Some(Region::TdmaRisc)),
        (wh, 0xFFB1_21B0, Some(Region::DebugRegs)),
        (bh, 0xFFB1_2238, Some(Region::DebugRegs)),
        (wh, 0xFFB1_3000, Some(Region::Pic)),
        (bh, 0xFFB1_3148, Some(Region::Pic)),
        (bh, 0xFFB1_6004, Some(Region::LocalMemAlias(Processor::Ncrisc))),
        (wh, 0xFFB1_6004, None),
        (wh, 0xFFB2_0028, Some(Region::Niu(Noc::Noc0))),
        (bh, 0xFFB3_0040, Some(Region::Niu(Noc::Noc1))),
        (wh, 0xFFB4_0000, Some(Region::Overlay)),
        (wh, 0xFFB7_FFFF, Some(Region::Overlay)),
        (wh, 0xFFB8_0000, Some(Region::TensixMopCfg)),
        (wh, 0xFFC0_0000, Some(Region::NcriscIram)),
        (bh, 0xFFC0_0000, None),
        (bh, 0xFFBD_8000, Some(Region::TensixDst)),
        (wh, 0xFFE0_0000, Some(Region::TensixGpr)),
        (wh, 0xFFE4_0000, Some(Region::TensixInstrPush)),
        (wh, 0xFFE6_FFFF, Some(Region::TensixInstrPush)),
        (wh, 0xFFE8_0020, Some(Region::TensixPcBuf)),
        (wh, 0xFFEC_3000, Some(Region::TensixMailbox)),
        (wh, 0xFFEF_0278, Some(Region::TensixConfig)),
        (bh, 0xFFEF_0000, Some(Region::TensixConfig)),
        (wh, 0xFFF0_0000, None),
    ];
    for &(map, addr, want) in cases {
        assert_eq!(address_map::region_of(map, addr), want, "{addr:#x}");
    }
    assert!(Region::TensixConfig.is_tensix_coprocessor());
    assert!(Region::TensixInstrPush.is_tensix_coprocessor());
    assert!(!Region::Niu(Noc::Noc0).is_tensix_coprocessor());
    assert!(!Region::DebugRegs.is_tensix_coprocessor());
    // Ranges are sorted and disjoint.
    for map in [wh, bh] {
        for w in map.windows(2) {
            assert!(w[0].end < w[1].start, "{:?} overlaps {:?}", w[0], w[1]);
        }
    }
}

// --- PCI, BARs, TLB windows --------------------------------------------------

#[test]
fn bar_layout_wormhole() {
    // tt-umd wormhole_implementation.hpp TLB_COUNT_1M 156 / 2M 10 / 16M 20,
    // TLB_BASE_2M 0x9C00000, TLB_BASE_16M 0xB000000, STATIC_TLB_CFG_ADDR
    // 0x1fc00000, TLB_CFG_REG_SIZE_BYTES 8; tt-kmd wormhole.c KERNEL_TLB_INDEX
    // 185 (BAR0 0x1E000000); tt-umd pci_ids.h 0x1E52 / 0x401E.
    let b = &WORMHOLE.bar;
    check(
        "tt-umd wormhole_implementation.hpp; tt-kmd wormhole.c",
        &[
            ("PCI vendor", bar::PCI_VENDOR_ID as u64, 0x1E52),
            ("PCI device", b.pci_device_id as u64, 0x401E),
            ("BAR0", b.bar0_size, 512 << 20),
            ("BAR4", b.bar4_size, 32 << 20),
            ("TLB_COUNT_1M", b.windows[0].count as u64, 156),
            ("1M size", b.windows[0].size(), 1 << 20),
            ("TLB_BASE_1M", b.windows[0].bar_offset, 0),
            ("TLB_COUNT_2M", b.windows[1].count as u64, 10),
            ("TLB_BASE_2M", b.windows[1].bar_offset, 0x09C0_0000),
            ("TLB_BASE_INDEX_2M", b.windows[1].first_index as u64, 156),
            ("TLB_COUNT_16M", b.windows[2].count as u64, 20),
            ("TLB_BASE_16M", b.windows[2].bar_offset, 0x0B00_0000),
            ("TLB_BASE_INDEX_16M", b.windows[2].first_index as u64, 166),
            ("total", b.tlb_count() as u64, 186),
            ("STATIC_TLB_CFG_ADDR", b.tlb_config_addr(0) as u64, 0x1FC0_0000),
            ("2M config (DYNAMIC_TLB_2M_CFG_ADDR)", b.tlb_config_addr(156) as u64, 0x1FC0_04E0),
            ("16M config (DYNAMIC_TLB_16M_CFG_ADDR)", b.tlb_config_addr(166) as u64, 0x1FC0_0530),
            ("TLB_CFG_REG_SIZE_BYTES", b.tlb_config_entry_bytes as u64, 8),
            ("KERNEL_TLB_INDEX", b.kernel_tlb_index as u64, 185),
            ("kernel window offset", b.window(185).unwrap().1, 0x1E00_0000),
            ("host mem base (get_pcie_base_for_arch)", b.host_mem_base, 0x8_0000_0000),
        ],
    );
    assert_eq!(b.window_at(0, 0x09C0_0000 + 3 * (2 << 20) + 5), Some((159, 5)));
    assert_eq!(b.window_at(0, 0x1F00_0000), None);
    assert_eq!(b.tlb_config_at(0x1FC0_04E4), Some((156, 4)));
    assert_eq!(b.tlb_config_words(), 2);
    // Fixed regions: tt-umd ARC_CSM_BAR0_XBAR_OFFSET_START 0x1FE80000,
    // ARC_APB_BAR0_XBAR_OFFSET_START 0x1FF00000; tt-kmd wormhole.c NOC2AXI_START 0x1FD02000.
    assert_eq!(b.region_at(0x1FE8_0010).unwrap().kind, bar::BarRegionKind::ArcCsm);
    assert_eq!(b.region_at(0x1FF3_0060).unwrap().kind, bar::BarRegionKind::ArcApb);
    assert_eq!(b.region_at(0x1FD0_2200).unwrap().kind, bar::BarRegionKind::PcieNiu(Noc::Noc0));
    assert_eq!(b.region_at(0x1FD0_A200).unwrap().kind, bar::BarRegionKind::PcieNiu(Noc::Noc1));
}

#[test]
fn bar_layout_blackhole() {
    // tt-umd blackhole_implementation.hpp TLB_COUNT_2M 202, TLB_COUNT_4G 8,
    // TLB_BASE_INDEX_4G 202, STATIC_TLB_CFG_ADDR 0x1fc00000,
    // TLB_CFG_REG_SIZE_BYTES 12, NIU_CFG_NOC0_BAR_PCIE_ADDR 0x1FD04000; tt-kmd
    // blackhole.c KERNEL_TLB_INDEX 201, TLB_STRIDED_REGS_OFFSET; tt-kmd
    // enumerate.h PCI_DEVICE_ID_BLACKHOLE 0xB140.
    let b = &BLACKHOLE.bar;
    check(
        "tt-umd blackhole_implementation.hpp; tt-kmd blackhole.c",
        &[
            ("PCI device", b.pci_device_id as u64, 0xB140),
            ("BAR4", b.bar4_size, 32 << 30),
            ("TLB_COUNT_2M", b.windows[0].count as u64, 202),
            ("2M size", b.windows[0].size(), 2 << 20),
            ("2M BAR", b.windows[0].bar as u64, 0),
            ("TLB_COUNT_4G", b.windows[1].count as u64, 8),
            ("4G size", b.windows[1].size(), 4 << 30),
            ("4G BAR", b.windows[1].bar as u64, 4),
            ("TLB_BASE_INDEX_4G", b.windows[1].first_index as u64, 202),
            ("total", b.tlb_count() as u64, 210),
            ("STATIC_TLB_CFG_ADDR", b.tlb_config_addr(0) as u64, 0x1FC0_0000),
            ("DYNAMIC_TLB_4G_CFG_ADDR", b.tlb_config_addr(202) as u64, 0x1FC0_0000 + 202 * 12),
            ("TLB_CFG_REG_SIZE_BYTES", b.tlb_config_entry_bytes as u64, 12),
            ("KERNEL_TLB_INDEX", b.kernel_tlb_index as u64, 201),
            ("kernel window offset", b.window(201).unwrap().1, 201 * (2 << 20)),
            ("4G window 3 offset", b.window(205).unwrap().1, 3 << 32),
            ("host mem base (get_pcie_base_addr_from_device)", b.host_mem_base, 1 << 60),
        ],
    );
    assert_eq!(b.window_at(4, (5 << 32) + 7), Some((207, 7)));
    assert_eq!(b.tlb_config_words(), 3);
    // Strided regs end at 0x1FC00A57 (tt-kmd blackhole.c TLB_STRIDED_REGS_OFFSET, 32 x 4 B).
    let cfg = b.region_at(0x1FC0_0A57).unwrap();
    assert_eq!((cfg.kind, cfg.offset + cfg.size), (bar::BarRegionKind::TlbConfig, 0x1FC0_0A58));
    assert_eq!(b.region_at(0x1FD0_4044).unwrap().kind, bar::BarRegionKind::PcieNiu(Noc::Noc0));
    assert_eq!(b.region_at(0x1FD1_4044).unwrap().kind, bar::BarRegionKind::PcieNiu(Noc::Noc1));
}

#[test]
fn tlb_field_positions() {
    // tt-umd wormhole_implementation.hpp TLB_1M_OFFSET, TLB_2M_OFFSET,
    // TLB_16M_OFFSET; blackhole_implementation.hpp TLB_2M_OFFSET, TLB_4G_OFFSET
    // (local_offset, x_end, y_end, x_start, y_start, noc_sel, mcast, ordering,
    // linked, static_vc).
    let row = |f: tlb::TlbFields| {
        [f.x_end, f.y_end, f.x_start, f.y_start, f.noc_sel, f.mcast, f.ordering, f.linked, f.static_vc]
    };
    check(
        "tt-umd *_implementation.hpp TLB_*_OFFSET",
        &[
            ("WH 1M", row(tlb::WH_1M_FIELDS), [16, 22, 28, 34, 40, 41, 42, 44, 45]),
            ("WH 2M", row(tlb::WH_2M_FIELDS), [15, 21, 27, 33, 39, 40, 41, 43, 44]),
            ("WH 16M", row(tlb::WH_16M_FIELDS), [12, 18, 24, 30, 36, 37, 38, 40, 41]),
            ("BH 2M", row(tlb::BH_2M_FIELDS), [43, 49, 55, 61, 67, 69, 70, 72, 73]),
            ("BH 4G", row(tlb::BH_4G_FIELDS), [32, 38, 44, 50, 56, 58, 59, 61, 62]),
        ],
    );
    assert_eq!(
        WORMHOLE.bar.windows.iter().map(|k| k.fields).collect::<Vec<_>>(),
        [tlb::WH_1M_FIELDS, tlb::WH_2M_FIELDS, tlb::WH_16M_FIELDS]
    );
    assert_eq!(tlb::WH_1M_FIELDS.local_offset_bits(), 16);
    assert_eq!(tlb::WH_2M_FIELDS.local_offset_bits(), 15);
    assert_eq!(tlb::WH_16M_FIELDS.local_offset_bits(), 12);
    assert_eq!(tlb::BH_2M_FIELDS.local_offset_bits(), 43);
    assert_eq!(tlb::BH_4G_FIELDS.local_offset_bits(), 32);
    assert_eq!(tlb::BH_2M_FIELDS.noc_sel_bits(), 2, "tt-kmd blackhole.c TLB_2M_REG noc:2");
    assert_eq!(tlb::WH_16M_FIELDS.noc_sel_bits(), 1);
}

#[test]
fn tlb_encode_examples() {
    // A Wormhole 1 MiB window on tile (1, 1) at NOC address 0x10_0000, NOC1,
    // strict ordering: local_offset 1, x_end 1 << 16, y_end 1 << 22, noc_sel
    // 1 << 40, ordering 1 << 42.
    let wh1m = &WORMHOLE.bar.windows[0];
    let (c, off) = wh1m.target(1, 1, 0x10_0123, Noc::Noc1);
    assert_eq!(off, 0x123);
    let c = TlbConfig { ordering: TlbOrdering::Strict, ..c };
    let bits = wh1m.fields.encode(&c).unwrap();
    assert_eq!(bits, 1 | 1 << 16 | 1 << 22 | 1 << 40 | 1 << 42);
    assert_eq!(tlb::to_words(bits), [0x0041_0001, 0x0000_0500, 0]);
    // A Blackhole 2 MiB multicast window over (1,2)..(7,11) at 0x40_0000,
    // posted: local_offset 2, x_end 7 << 43, y_end 11 << 49, x_start 1 << 55,
    // y_start 2 << 61, mcast 1 << 69, ordering 2 << 70.
    let c = TlbConfig {
        local_offset: 2,
        x_end: 7,
        y_end: 11,
        x_start: 1,
        y_start: 2,
        noc_sel: Noc::Noc0,
        mcast: true,
        ordering: TlbOrdering::Posted,
        linked: false,
        static_vc: false,
    };
    let bits = tlb::BH_2M_FIELDS.encode(&c).unwrap();
    assert_eq!(bits, 2 | 7 << 43 | 11 << 49 | 1 << 55 | 2u128 << 61 | 1u128 << 69 | 2u128 << 70);
    assert_eq!(tlb::BH_2M_FIELDS.decode(bits).unwrap(), c);
    // Out-of-range fields are refused, with the field named.
    let too_far = TlbConfig { local_offset: 1 << 16, ..TlbConfig::unicast(1, 1, 0, Noc::Noc0) };
    let e = tlb::WH_1M_FIELDS.encode(&too_far).unwrap_err();
    assert_eq!(e.to_string(), "TLB field local_offset = 0x10000 does not fit in 16 bits");
    assert_eq!(tlb::BH_2M_FIELDS.decode(2u128 << 67).unwrap_err(), tlb::TlbError::BadNocSel { value: 2 });
}

// --- ARC ---------------------------------------------------------------------

#[test]
fn arc_facts() {
    // tt-umd wormhole_implementation.hpp ARC_NOC_ADDRESS_START 0x800000000,
    // ARC_NOC_RESET_UNIT_BASE_ADDR 0x880030000, NOC_NODEID_X_0 0x1D0 /
    // NOC_NODEID_Y_0 0x1D4, ARC_RESET_SCRATCH_OFFSET; blackhole_implementation.hpp
    // ARC_NOC_XBAR_ADDRESS_START 0x80000000, SCRATCH_RAM_12 / 13.
    let (wh, bh) = (&WORMHOLE.arc, &BLACKHOLE.arc);
    check(
        "tt-umd *_implementation.hpp ARC_*",
        &[
            ("WH reset unit over NOC", wh.noc_offset + wh.reset_unit as u64, 0x8_8003_0000),
            ("WH telemetry table ptr over NOC", wh.noc_offset + wh.telemetry_table_ptr as u64, 0x8_8003_01D0),
            ("WH telemetry data ptr over NOC", wh.noc_offset + wh.telemetry_data_ptr as u64, 0x8_8003_01D4),
            ("WH post code (ARC_RESET_SCRATCH_ADDR)", wh.noc_offset + wh.post_code as u64, 0x8_8003_0060),
            ("WH APB in BAR0", wh.bar0_apb.unwrap() as u64, 0x1FF0_0000),
            ("WH reset unit in BAR0", (wh.bar0_apb.unwrap() + wh.reset_unit - arc::APB_BASE) as u64, 0x1FF3_0000),
            ("BH SCRATCH_RAM_13", bh.telemetry_table_ptr as u64, 0x8003_0434),
            ("BH SCRATCH_RAM_12", bh.telemetry_data_ptr as u64, 0x8003_0430),
            ("BH noc offset", bh.noc_offset, 0),
            ("BH post code", bh.post_code as u64, 0x8003_0060),
            ("WH ready word (SCRATCH[5])", wh.ready.status as u64, 0x8003_0074),
            ("WH ready value", wh.ready.up_value() as u64, 1),
            ("BH ready word (SCRATCH_RAM_2)", bh.ready.status as u64, 0x8003_0408),
            ("BH ready value", bh.ready.up_value() as u64, 5),
            ("WH CSM ARC_PCIE_DMA_REQUEST", arc::wormhole_status::PCIE_DMA_REQUEST as u64, 0x1007_84D4),
            (
                "WH NIU_CFG_0 of ARC's NOC0 NIU in BAR0",
                (wh.bar0_apb.unwrap() + wh.niu_apb.unwrap()[0] + 0x100) as u64,
                0x1FF5_0100,
            ),
            ("WH ARC hang probe in BAR0", (wh.bar0_apb.unwrap() + wh.niu_apb.unwrap()[0] + 0x2C) as u64, 0x1FF5_002C),
            ("WH ARC NOC1 NIU in APB", wh.niu_apb.unwrap()[1] as u64, 0x5_8000),
            ("WH CSM in BAR0", wh.csm.unwrap().0 as u64, 0x1FE8_0000),
            ("WH CSM ARC address", wh.csm.unwrap().1 as u64, 0x1000_0000),
        ],
    );
    assert_eq!((bh.niu_apb, bh.csm), (None, None));
    // tt-umd types/telemetry.hpp TelemetryTag.
    check(
        "tt-umd telemetry.hpp",
        &[
            ("BOARD_ID_HIGH", arc::tag::BOARD_ID_HIGH, 1),
            ("BOARD_ID_LOW", arc::tag::BOARD_ID_LOW, 2),
            ("ASIC_ID", arc::tag::ASIC_ID, 3),
            ("HARVESTING_STATE", arc::tag::HARVESTING_STATE, 4),
            ("AICLK", arc::tag::AICLK, 14),
            ("FLASH_BUNDLE_VERSION", arc::tag::FLASH_BUNDLE_VERSION, 28),
            ("ENABLED_TENSIX_COL", arc::tag::ENABLED_TENSIX_COL, 34),
            ("ENABLED_ETH", arc::tag::ENABLED_ETH, 35),
            ("ENABLED_GDDR", arc::tag::ENABLED_GDDR, 36),
            ("ENABLED_L2CPU", arc::tag::ENABLED_L2CPU, 37),
            ("PCIE_USAGE", arc::tag::PCIE_USAGE, 38),
            ("NOC_TRANSLATION", arc::tag::NOC_TRANSLATION, 40),
        ],
    );
    // tt-umd cluster_descriptor_types.hpp board_upi_map; the board ids of
    // tt-umd's tests/cluster_descriptor_examples decode to them.
    check(
        "tt-umd cluster_descriptor_types.hpp",
        &[
            ("n150", arc::upi::N150, 0x18),
            ("n300", arc::upi::N300, 0x14),
            ("p100a", arc::upi::P100A, 0x43),
            ("p150a", arc::upi::P150A, 0x40),
            ("wormhole_N150.yaml board_id", arc::upi::of_board_id(72_059_269_368_820_857), 0x18),
            ("wormhole_N300.yaml board_id", arc::upi::of_board_id(72_058_994_491_072_686), 0x14),
            ("blackhole_P100.yaml board_id", arc::upi::of_board_id(4_613_626_507_328), 0x43),
            ("blackhole_P150.yaml board_id", arc::upi::of_board_id(4_402_341_478_400), 0x40),
        ],
    );
}

/// ARC's status word read as tt-umd reads it: a card idle after a message
/// or with higher boot-status bits set is up, not refused; a status that
/// waiting does not end fails; the post code and the DMA word are read only
/// where the status alone does not tell.
#[test]
fn arc_status_words_read_as_tt_umd_reads_them() {
    use arc::{wormhole_status as s, ArcState};
    let (wh, bh) = (WORMHOLE.arc.ready, BLACKHOLE.arc.ready);
    let judge = |ready: arc::ArcReady, status, post, dma| {
        let mut asked = Vec::new();
        let state = ready
            .judge::<()>(status, WORMHOLE.arc.post_code, |a| {
                asked.push(a);
                Ok(if a == s::PCIE_DMA_REQUEST { dma } else { post })
            })
            .unwrap();
        (state, asked)
    };
    let post = WORMHOLE.arc.post_code;
    assert_eq!(judge(wh, 1, 0, 0), (ArcState::Up, vec![]));
    assert_eq!(judge(wh, 0xFFFF_DEAD, 0, 0), (ArcState::Up, vec![]));
    assert_eq!(judge(wh, 0, 0xC0DE_0001, 0), (ArcState::Up, vec![post]));
    assert_eq!(judge(wh, 0, 0xC0DE_0050, 0), (ArcState::Up, vec![post]));
    assert!(matches!(judge(wh, 0, 0xC0DE_0080, 0).0, ArcState::NotUp(_)));
    // A message complete (its code in the low half) with DMA idle: up.
    assert_eq!(judge(wh, 0x0000_0002, 0, 0), (ArcState::Up, vec![s::PCIE_DMA_REQUEST]));
    assert!(matches!(judge(wh, 0x0000_0002, 0, 1).0, ArcState::NotUp(_)));
    assert!(matches!(judge(wh, 0x0000_AA05, 0, 0).0, ArcState::NotUp(_)));
    assert!(matches!(judge(wh, 0xAA05_0000, 0, 0).0, ArcState::NotUp(_)));
    for booting in [0x60, 0x1111_0000, 0x55, 0xAA00] {
        assert!(matches!(judge(wh, booting, 0, 0), (ArcState::NotUp(_), ref a) if a.is_empty()), "{booting:#x}");
    }
    assert!(matches!(judge(wh, 0xFFFF_FFFF, 0, 0).0, ArcState::Failed(_)));
    assert!(matches!(judge(wh, 0xDEAD_C0DE, 0, 0).0, ArcState::Failed(_)));
    // Blackhole: the low three bits only.
    assert_eq!(judge(bh, 5, 0, 0), (ArcState::Up, vec![]));
    assert_eq!(judge(bh, 0x0100_0005, 0, 0), (ArcState::Up, vec![]));
    assert!(matches!(judge(bh, 4, 0, 0).0, ArcState::NotUp(_)));
}

/// Every UPI tt-umd maps to a P100 or P150 names the board cqlab models
/// for it (tt-umd `cluster_descriptor_types.hpp` board_upi_map).
#[test]
fn other_blackhole_upis_name_the_modelled_boards() {
    use cqlab_abi::soc::Board;
    let id = |upi: u64| upi << 36 | 1;
    for (upi, board) in [
        (0x36, Some(Board::BlackholeP100a)),
        (0x43, Some(Board::BlackholeP100a)),
        (0x40, Some(Board::BlackholeP150a)),
        (0x41, Some(Board::BlackholeP150a)),
        (0x42, Some(Board::BlackholeP150a)),
        (0x18, Some(Board::WormholeN150)),
        (0x14, Some(Board::WormholeN300)),
        (0x44, None),
    ] {
        assert_eq!(Board::from_board_id(id(upi)), board, "UPI {upi:#x}");
    }
}

#[test]
fn translated_coordinate_starts() {
    // tt-umd wormhole_implementation.hpp tensix_translated_coordinate_start 18/18,
    // eth 18/16, HARVESTING_NOC_LOCATIONS; blackhole_implementation.hpp eth
    // 20/25, pcie 19/24, dram 17/12, HARVESTING_NOC_LOCATIONS; tt-metal bh
    // noc_parameters.h VIRTUAL_TENSIX_START_X/Y 1/2.
    let (wh, bh) = (&WORMHOLE.translate, &BLACKHOLE.translate);
    assert_eq!((wh.tensix_start, wh.eth_start, wh.dram_start, wh.pcie), ((18, 18), (18, 16), None, None));
    assert_eq!(
        (bh.tensix_start, bh.eth_start, bh.dram_start, bh.pcie),
        ((1, 2), (20, 25), Some((17, 12)), Some((19, 24)))
    );
    assert_eq!(wh.harvest_die_order, [11, 1, 10, 2, 9, 3, 8, 4, 7, 5]);
    assert_eq!(bh.harvest_die_order, [1, 16, 2, 15, 3, 14, 4, 13, 5, 12, 6, 11, 7, 10]);
}
