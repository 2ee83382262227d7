//! The NIU (NOC interface unit) register blocks, one per NOC, as a Tensix
//! RISC-V sees them.
//!
//! Each block holds four command buffers ("request initiators"), then the
//! `NOC_CFG(i)` configuration registers at +0x100 and the `NOC_STATUS(i)`
//! counters at +0x200. The address of a command-buffer register is
//! `base + (noc << 16) + buf * cmd_buf_stride + reg`, as tt-metal's
//! `NOC_CMD_BUF_INSTANCE_OFFSET(noc, buf)` computes it. The register offsets
//! inside a command buffer differ between the chips (Blackhole inserts
//! `NOC_AT_LEN_BE_1` and moves `NOC_CMD_CTRL` to 0x40); the counter indices do
//! not.

use super::noc_id::Noc;

/// Offsets of one command buffer's registers from the buffer's base.
/// `None`: the register does not exist on this chip.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CmdBufRegs {
    pub targ_addr_lo: u32,
    pub targ_addr_mid: u32,
    pub targ_addr_hi: u32,
    pub ret_addr_lo: u32,
    pub ret_addr_mid: u32,
    pub ret_addr_hi: u32,
    pub packet_tag: u32,
    pub ctrl: u32,
    pub at_len_be: u32,
    pub at_len_be_1: Option<u32>,
    pub at_data: u32,
    pub brcst_exclude: Option<u32>,
    /// Write 1 to send; reads 0 once the buffer may be reused.
    pub cmd_ctrl: u32,
    /// Read-only: the tile's coordinates and the grid size ([`node_id`]).
    pub node_id: u32,
    /// Read-only: tile index, type and NOC index.
    pub endpoint_id: u32,
    /// Write-only: bit `i` zeroes `NIU_MST_REQS_OUTSTANDING_ID(i)`.
    pub clear_outstanding_req_cnt: u32,
}

/// A command-buffer register by name, for decoding an access.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CmdBufReg {
    TargAddrLo,
    TargAddrMid,
    TargAddrHi,
    RetAddrLo,
    RetAddrMid,
    RetAddrHi,
    PacketTag,
    Ctrl,
    AtLenBe,
    AtLenBe1,
    AtData,
    BrcstExclude,
    CmdCtrl,
    NodeId,
    EndpointId,
    ClearOutstandingReqCnt,
}

impl CmdBufReg {
    pub const ALL: [CmdBufReg; 16] = [
        CmdBufReg::TargAddrLo,
        CmdBufReg::TargAddrMid,
        CmdBufReg::TargAddrHi,
        CmdBufReg::RetAddrLo,
        CmdBufReg::RetAddrMid,
        CmdBufReg::RetAddrHi,
        CmdBufReg::PacketTag,
        CmdBufReg::Ctrl,
        CmdBufReg::AtLenBe,
        CmdBufReg::AtLenBe1,
        CmdBufReg::AtData,
        CmdBufReg::BrcstExclude,
        CmdBufReg::CmdCtrl,
        CmdBufReg::NodeId,
        CmdBufReg::EndpointId,
        CmdBufReg::ClearOutstandingReqCnt,
    ];

    /// The name the tt-metal headers give the register.
    pub const fn name(self) -> &'static str {
        match self {
            CmdBufReg::TargAddrLo => "NOC_TARG_ADDR_LO",
            CmdBufReg::TargAddrMid => "NOC_TARG_ADDR_MID",
            CmdBufReg::TargAddrHi => "NOC_TARG_ADDR_HI",
            CmdBufReg::RetAddrLo => "NOC_RET_ADDR_LO",
            CmdBufReg::RetAddrMid => "NOC_RET_ADDR_MID",
            CmdBufReg::RetAddrHi => "NOC_RET_ADDR_HI",
            CmdBufReg::PacketTag => "NOC_PACKET_TAG",
            CmdBufReg::Ctrl => "NOC_CTRL",
            CmdBufReg::AtLenBe => "NOC_AT_LEN_BE",
            CmdBufReg::AtLenBe1 => "NOC_AT_LEN_BE_1",
            CmdBufReg::AtData => "NOC_AT_DATA",
            CmdBufReg::BrcstExclude => "NOC_BRCST_EXCLUDE",
            CmdBufReg::CmdCtrl => "NOC_CMD_CTRL",
            CmdBufReg::NodeId => "NOC_NODE_ID",
            CmdBufReg::EndpointId => "NOC_ENDPOINT_ID",
            CmdBufReg::ClearOutstandingReqCnt => "NOC_CLEAR_OUTSTANDING_REQ_CNT",
        }
    }
}

impl CmdBufRegs {
    /// Offset of `reg`, or `None` where the chip has no such register.
    pub const fn offset(&self, reg: CmdBufReg) -> Option<u32> {
        match reg {
            CmdBufReg::TargAddrLo => Some(self.targ_addr_lo),
            CmdBufReg::TargAddrMid => Some(self.targ_addr_mid),
            CmdBufReg::TargAddrHi => Some(self.targ_addr_hi),
            CmdBufReg::RetAddrLo => Some(self.ret_addr_lo),
            CmdBufReg::RetAddrMid => Some(self.ret_addr_mid),
            CmdBufReg::RetAddrHi => Some(self.ret_addr_hi),
            CmdBufReg::PacketTag => Some(self.packet_tag),
            CmdBufReg::Ctrl => Some(self.ctrl),
            CmdBufReg::AtLenBe => Some(self.at_len_be),
            CmdBufReg::AtLenBe1 => self.at_len_be_1,
            CmdBufReg::AtData => Some(self.at_data),
            CmdBufReg::BrcstExclude => self.brcst_exclude,
            CmdBufReg::CmdCtrl => Some(self.cmd_ctrl),
            CmdBufReg::NodeId => Some(self.node_id),
            CmdBufReg::EndpointId => Some(self.endpoint_id),
            CmdBufReg::ClearOutstandingReqCnt => Some(self.clear_outstanding_req_cnt),
        }
    }

    /// The register at `offset` from a command buffer's base, if any (a
    /// scan: [`CmdBufIndex`] is the table the decoder uses).
    pub const fn reg_at(&self, offset: u32) -> Option<CmdBufReg> {
        let mut i = 0;
        while i < CmdBufReg::ALL.len() {
            let reg = CmdBufReg::ALL[i];
            if let Some(o) = self.offset(reg) {
                if o == offset {
                    return Some(reg);
                }
            }
            i += 1;
        }
        None
    }
}

/// Words of a command buffer the index covers: every register offset on
/// both chips is below 0x80 (checked when the index is built).
const CMD_BUF_INDEX_WORDS: usize = 32;

/// [`CmdBufRegs::reg_at`] as a table by word offset: an NIU access is
/// decoded on every command-buffer store a core makes, so in one lookup.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CmdBufIndex([Option<CmdBufReg>; CMD_BUF_INDEX_WORDS]);

impl CmdBufIndex {
    /// The index of `regs`; fails const evaluation if a register is not
    /// word-aligned or lies beyond the table.
    pub const fn of(regs: &CmdBufRegs) -> Self {
        let mut table = [None; CMD_BUF_INDEX_WORDS];
        let mut i = 0;
        while i < CmdBufReg::ALL.len() {
            let reg = CmdBufReg::ALL[i];
            if let Some(o) = regs.offset(reg) {
                assert!(
                    o % 4 == 0 && (o / 4) < CMD_BUF_INDEX_WORDS as u32,
                    "a command-buffer register outside the index"
                );
                table[(o / 4) as usize] = Some(reg);
            }
            i += 1;
        }
        CmdBufIndex(table)
    }

    /// The register at `offset` from a command buffer's base, if any.
    pub const fn at(&self, offset: u32) -> Option<CmdBufReg> {
        if offset % 4 != 0 || offset / 4 >= CMD_BUF_INDEX_WORDS as u32 {
            return None;
        }
        self.0[(offset / 4) as usize]
    }
}

/// Indices of the `NOC_CFG(i)` registers cqlab uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NocCfgIndices {
    /// `NIU_CFG_0` ([`niu_cfg_0`] bits).
    pub niu_cfg_0: u32,
    /// `ROUTER_CFG_1`: broadcast opt-out mask (the tt-metal headers say
    /// "row", tt-isa `NoC/MemoryMap.md` says columns: see module docs).
    pub router_cfg_1: u32,
    /// `ROUTER_CFG_3`: the other broadcast opt-out mask.
    pub router_cfg_3: u32,
    /// First register of the X translation table.
    pub x_translate_table: u32,
    /// First register of the Y translation table.
    pub y_translate_table: u32,
    /// Registers per translation table.
    pub translate_table_regs: u32,
    /// Bits per translation-table entry (32 entries per table).
    pub translate_entry_bits: u32,
    /// `NOC_ID_LOGICAL`: the tile's own translated coordinates,
    /// `y[11:6] | x[5:0]`; firmware reads its "my_x/my_y" from it.
    pub noc_id_logical: u32,
}

/// One chip's NIU register blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NiuLayout {
    /// NOC0's block in a Tensix or Ethernet tile.
    pub noc0_base: u32,
    /// NOC1's block is this far above NOC0's.
    pub noc_stride: u32,
    /// Distance between command buffers.
    pub cmd_buf_stride: u32,
    /// Command buffers per NIU.
    pub cmd_bufs: u32,
    pub regs: CmdBufRegs,
    /// `regs` by offset ([`CmdBufIndex::of`]).
    pub reg_index: CmdBufIndex,
    /// `NOC_CFG(i)` = block + `cfg_base` + 4i.
    pub cfg_base: u32,
    /// `NOC_STATUS(i)` = block + `status_base` + 4i ([`counter`] indices).
    pub status_base: u32,
    pub cfg: NocCfgIndices,
}

/// What an address inside an NIU block names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NiuReg {
    /// A command-buffer register of buffer `buf`.
    CmdBuf { buf: u32, reg: CmdBufReg },
    /// `NOC_CFG(index)`.
    Cfg(u32),
    /// `NOC_STATUS(index)`.
    Status(u32),
    /// Anything else in the block (error counters, debug, security fences):
    /// the byte offset from the block's base.
    Other(u32),
}

/// Size of one NIU block's address range (tt-isa
/// `WormholeB0/TensixTile/BabyRISCV/README.md` and
/// `BlackholeA0/TensixTile/BabyRISCV/README.md`: 0xFFB2_0000–0xFFB2_FFFF).
pub const NIU_BLOCK_SIZE: u32 = 0x1_0000;

/// Registers in each of the `NOC_CFG` and `NOC_STATUS` windows: the windows
/// abut (`NOC_CFG(cnt)` at +0x100, `NOC_STATUS(cnt)` at +0x200, tt-metal
/// `noc_parameters.h`), so each spans 0x100 bytes.
pub const WINDOW_REGS: u32 = 64;
const WINDOW_BYTES: u32 = WINDOW_REGS * 4;

impl NiuLayout {
    /// Base of `noc`'s register block.
    pub const fn base(&self, noc: Noc) -> u32 {
        self.noc0_base + noc.index() * self.noc_stride
    }

    /// Base of command buffer `buf` of `noc`.
    pub const fn cmd_buf_base(&self, noc: Noc, buf: u32) -> u32 {
        self.base(noc) + buf * self.cmd_buf_stride
    }

    /// Address of register `offset` (a [`CmdBufRegs`] field) of buffer `buf`.
    pub const fn cmd_buf_reg(&self, noc: Noc, buf: u32, offset: u32) -> u32 {
        self.cmd_buf_base(noc, buf) + offset
    }

    /// Address of `NOC_CFG(index)`.
    pub const fn cfg_reg(&self, noc: Noc, index: u32) -> u32 {
        self.base(noc) + self.cfg_base + 4 * index
    }

    /// Address of `NOC_STATUS(index)`.
    pub const fn status_reg(&self, noc: Noc, index: u32) -> u32 {
        self.base(noc) + self.status_base + 4 * index
    }

    /// Which NOC and register `addr` names, or `None` outside both blocks.
    /// `NOC_STATUS` first: firmware polls its counters most (96 % of a
    /// `race --workload programs` run's NIU loads).
    pub const fn decode(&self, addr: u32) -> Option<(Noc, NiuReg)> {
        let rel = addr.wrapping_sub(self.noc0_base);
        let (noc, off) = if rel < NIU_BLOCK_SIZE {
            (Noc::Noc0, rel)
        } else if rel.wrapping_sub(self.noc_stride) < NIU_BLOCK_SIZE {
            (Noc::Noc1, rel - self.noc_stride)
        } else {
            return None;
        };
        // The config and status windows hold `WINDOW_REGS` each, between
        // command buffer 0's registers and buffer 1 (checked below the
        // layouts): testing them first hides no command-buffer register.
        if off.wrapping_sub(self.status_base) < WINDOW_BYTES && off % 4 == 0 {
            return Some((noc, NiuReg::Status((off - self.status_base) / 4)));
        }
        if off.wrapping_sub(self.cfg_base) < WINDOW_BYTES && off % 4 == 0 {
            return Some((noc, NiuReg::Cfg((off - self.cfg_base) / 4)));
        }
        if off < self.cmd_bufs * self.cmd_buf_stride {
            // The stride is a power of two (checked below the layouts): a
            // shift and a mask, not a division, on every NIU store.
            let buf = off >> self.cmd_buf_stride.trailing_zeros();
            if let Some(reg) = self.reg_index.at(off & (self.cmd_buf_stride - 1)) {
                return Some((noc, NiuReg::CmdBuf { buf, reg }));
            }
        }
        Some((noc, NiuReg::Other(off)))
    }
}

/// Wormhole B0. Every offset: tt-metal wh `noc_parameters.h` (the symbol
/// named on each line); tt-isa `WormholeB0/NoC/MemoryMap.md`.
pub const WORMHOLE: NiuLayout = NiuLayout {
    noc0_base: 0xFFB2_0000, // NOC_REGS_START_ADDR
    noc_stride: 0x1_0000,   // NOC_INSTANCE_OFFSET (bit 16)
    cmd_buf_stride: 0x400,  // NOC_CMD_BUF_OFFSET (bit 10)
    cmd_bufs: 4,            // tt-isa NoC/MemoryMap.md: four request initiators
    regs: WORMHOLE_REGS,
    reg_index: CmdBufIndex::of(&WORMHOLE_REGS),
    cfg_base: 0x100,    // NOC_CFG(cnt) = NOC_REGS_START_ADDR + 0x100 + 4 * cnt
    status_base: 0x200, // NOC_STATUS(cnt) = NOC_REGS_START_ADDR + 0x200 + 4 * cnt
    cfg: NocCfgIndices {
        niu_cfg_0: 0x0,          // NIU_CFG_0
        router_cfg_1: 0x2,       // ROUTER_CFG_1
        router_cfg_3: 0x4,       // ROUTER_CFG_3
        x_translate_table: 0x6,  // NOC_X_ID_TRANSLATE_TABLE_0
        y_translate_table: 0xA,  // NOC_Y_ID_TRANSLATE_TABLE_0
        translate_table_regs: 4, // NOC_X_ID_TRANSLATE_TABLE_0..3
        translate_entry_bits: 4, // "total 32 x 4 bit entries"
        noc_id_logical: 0xE,     // NOC_ID_LOGICAL; tt-umd NOC_ID_TRANSLATED_OFFSET 0x138
    },
};

/// Wormhole's command-buffer register offsets (sources as in [`WORMHOLE`]).
const WORMHOLE_REGS: CmdBufRegs = CmdBufRegs {
    targ_addr_lo: 0x00,              // NOC_TARG_ADDR_LO
    targ_addr_mid: 0x04,             // NOC_TARG_ADDR_MID
    targ_addr_hi: 0x08,              // NOC_TARG_ADDR_HI (defined, not documented, not written by tt-metal)
    ret_addr_lo: 0x0C,               // NOC_RET_ADDR_LO
    ret_addr_mid: 0x10,              // NOC_RET_ADDR_MID
    ret_addr_hi: 0x14,               // NOC_RET_ADDR_HI (as TARG_ADDR_HI)
    packet_tag: 0x18,                // NOC_PACKET_TAG
    ctrl: 0x1C,                      // NOC_CTRL
    at_len_be: 0x20,                 // NOC_AT_LEN_BE
    at_len_be_1: None,               // Blackhole only
    at_data: 0x24,                   // NOC_AT_DATA
    brcst_exclude: None,             // Blackhole only
    cmd_ctrl: 0x28,                  // NOC_CMD_CTRL
    node_id: 0x2C,                   // NOC_NODE_ID; tt-umd `wormhole_implementation.hpp` NOC_NODE_ID_OFFSET 0x2C
    endpoint_id: 0x30,               // NOC_ENDPOINT_ID
    clear_outstanding_req_cnt: 0x50, // NOC_CLEAR_OUTSTANDING_REQ_CNT
};

/// Blackhole. Every offset: tt-metal bh `noc_parameters.h` (the symbol named
/// on each line); tt-isa `BlackholeA0/NoC/MemoryMap.md`.
pub const BLACKHOLE: NiuLayout = NiuLayout {
    noc0_base: 0xFFB2_0000, // NOC_REGS_START_ADDR
    noc_stride: 0x1_0000,   // NOC_INSTANCE_OFFSET (bit 16)
    cmd_buf_stride: 0x800,  // NOC_CMD_BUF_OFFSET (bit 11)
    cmd_bufs: 4,            // tt-isa NoC/MemoryMap.md: four request initiators
    regs: BLACKHOLE_REGS,
    reg_index: CmdBufIndex::of(&BLACKHOLE_REGS),
    cfg_base: 0x100,    // NOC_CFG(cnt)
    status_base: 0x200, // NOC_STATUS(cnt)
    cfg: NocCfgIndices {
        niu_cfg_0: 0x0,          // NIU_CFG_0
        router_cfg_1: 0x2,       // ROUTER_CFG_1
        router_cfg_3: 0x4,       // ROUTER_CFG_3
        x_translate_table: 0x6,  // NOC_X_ID_TRANSLATE_TABLE_0
        y_translate_table: 0xC,  // NOC_Y_ID_TRANSLATE_TABLE_0
        translate_table_regs: 6, // NOC_X_ID_TRANSLATE_TABLE_0..5
        translate_entry_bits: 5, // NOC_TRANSLATE_ID_WIDTH 5
        noc_id_logical: 0x12,    // NOC_ID_LOGICAL; tt-umd NOC_ID_TRANSLATED_OFFSET 0x148
    },
};

// `NiuLayout::decode` splits a command-buffer offset with a shift and a mask,
// and tests the config and status windows before the command buffers: they
// lie past buffer 0's registers and before buffer 1; NOC1's block starts
// past NOC0's.
const _: () = {
    let mut k = 0;
    let layouts = [WORMHOLE, BLACKHOLE];
    while k < layouts.len() {
        let l = &layouts[k];
        assert!(l.cmd_buf_stride.is_power_of_two());
        assert!(l.cfg_base >= CMD_BUF_INDEX_WORDS as u32 * 4 && l.cfg_base + WINDOW_BYTES <= l.cmd_buf_stride);
        assert!(l.status_base >= CMD_BUF_INDEX_WORDS as u32 * 4 && l.status_base + WINDOW_BYTES <= l.cmd_buf_stride);
        assert!(l.noc_stride >= NIU_BLOCK_SIZE);
        k += 1;
    }
};

/// Blackhole's command-buffer register offsets (sources as in [`BLACKHOLE`]).
const BLACKHOLE_REGS: CmdBufRegs = CmdBufRegs {
    targ_addr_lo: 0x00,              // NOC_TARG_ADDR_LO
    targ_addr_mid: 0x04,             // NOC_TARG_ADDR_MID
    targ_addr_hi: 0x08,              // NOC_TARG_ADDR_HI (the coordinates on Blackhole)
    ret_addr_lo: 0x0C,               // NOC_RET_ADDR_LO
    ret_addr_mid: 0x10,              // NOC_RET_ADDR_MID
    ret_addr_hi: 0x14,               // NOC_RET_ADDR_HI
    packet_tag: 0x18,                // NOC_PACKET_TAG
    ctrl: 0x1C,                      // NOC_CTRL
    at_len_be: 0x20,                 // NOC_AT_LEN_BE
    at_len_be_1: Some(0x24),         // NOC_AT_LEN_BE_1
    at_data: 0x28,                   // NOC_AT_DATA
    brcst_exclude: Some(0x2C),       // NOC_BRCST_EXCLUDE
    cmd_ctrl: 0x40,                  // NOC_CMD_CTRL
    node_id: 0x44,                   // NOC_NODE_ID; tt-umd `blackhole_implementation.hpp` NOC_NODE_ID_OFFSET 0x44
    endpoint_id: 0x48,               // NOC_ENDPOINT_ID
    clear_outstanding_req_cnt: 0x60, // NOC_CLEAR_OUTSTANDING_REQ_CNT
};

/// Bits of `NIU_CFG_0` (tt-metal wh and bh `noc_parameters.h` `NIU_CFG_0_*`
/// bit numbers; tt-isa `NoC/MemoryMap.md`).
pub mod niu_cfg_0 {
    /// NIU_CFG_0_TILE_CLK_OFF 12: set for harvested tiles.
    pub const TILE_CLK_OFF: u32 = 1 << 12;
    /// NIU_CFG_0_NOC_ID_TRANSLATE_EN 14: coordinate translation on.
    pub const NOC_ID_TRANSLATE_EN: u32 = 1 << 14;
    /// NIU_CFG_0_AXI_SUBORDINATE_ENABLE 15 (Blackhole only; DRAM tiles).
    pub const AXI_SUBORDINATE_ENABLE: u32 = 1 << 15;
    /// NIU_CFG_0_CMD_BUFFER_FIFO_EN 16 (Blackhole only).
    pub const CMD_BUFFER_FIFO_EN: u32 = 1 << 16;
    /// Bits 31:24 hold NCRISC firmware post codes (comment beside NIU_CFG_0).
    pub const POSTCODE_SHIFT: u32 = 24;
}

/// The read-only `NOC_NODE_ID` word (tt-isa `WormholeB0/NoC/MemoryMap.md` and
/// `BlackholeA0/NoC/MemoryMap.md`, NOC_NODE_ID): x `[5:0]`, y `[11:6]`, grid width
/// `[18:12]`, height `[25:19]`, X dateline `[26]`, Y dateline `[27]`, X-first routing
/// `[28]` (1 on NOC0, 0 on NOC1). tt-metal's Wormhole `noc_init` reads x and y from it; its
/// Blackhole one reads `NOC_CFG(NOC_ID_LOGICAL)` instead (`noc_nonblocking_api.h`).
pub mod node_id {
    pub const X_SHIFT: u32 = 0;
    pub const Y_SHIFT: u32 = 6;
    pub const WIDTH_SHIFT: u32 = 12;
    pub const HEIGHT_SHIFT: u32 = 19;
    pub const X_DATELINE: u32 = 1 << 26;
    pub const Y_DATELINE: u32 = 1 << 27;
    pub const X_FIRST: u32 = 1 << 28;
    pub const COORD_MASK: u32 = 0x3F;
    pub const SIZE_MASK: u32 = 0x7F;

    /// The word a tile at (`x`, `y`) in `noc`'s own coordinates reads, on a
    /// `width` x `height` grid (datelines left 0).
    pub const fn encode(x: u8, y: u8, width: u8, height: u8, noc: super::Noc) -> u32 {
        let x_first = match noc {
            super::Noc::Noc0 => X_FIRST,
            super::Noc::Noc1 => 0,
        };
        (x as u32) << X_SHIFT
            | (y as u32) << Y_SHIFT
            | (width as u32) << WIDTH_SHIFT
            | (height as u32) << HEIGHT_SHIFT
            | x_first
    }
}

/// tt-metal's use of the four command buffers in dedicated-NOC mode
/// (tt-metal wh and bh `noc_nonblocking_api.h` `NCRISC_WR_CMD_BUF`,
/// `NCRISC_RD_CMD_BUF`, `NCRISC_WR_REG_CMD_BUF`, `NCRISC_AT_CMD_BUF`).
pub mod cmd_buf {
    /// Writes.
    pub const WRITE: u32 = 0;
    /// Reads.
    pub const READ: u32 = 1;
    /// Small register writes.
    pub const WRITE_REG: u32 = 2;
    /// Atomics and inline writes.
    pub const ATOMIC: u32 = 3;
}

/// Indices of the `NOC_STATUS(i)` counters, the same on both chips (tt-metal
/// wh and bh `noc_parameters.h`, the symbol of each name; tt-isa
/// `NoC/Counters.md`).
pub mod counter {
    macro_rules! counters {
        ($($name:ident = $idx:expr;)*) => {
            $(pub const $name: u32 = $idx;)*
            /// The fixed-index counters by name (the per-id ones are
            /// [`reqs_outstanding_id`] and [`write_reqs_outgoing_id`]).
            pub const NAMED: &[(&str, u32)] = &[$((stringify!($name), $name),)*];
        };
    }

    counters! {
        NIU_MST_ATOMIC_RESP_RECEIVED = 0x0;
        NIU_MST_WR_ACK_RECEIVED = 0x1;
        NIU_MST_RD_RESP_RECEIVED = 0x2;
        NIU_MST_RD_DATA_WORD_RECEIVED = 0x3;
        NIU_MST_CMD_ACCEPTED = 0x4;
        NIU_MST_RD_REQ_SENT = 0x5;
        NIU_MST_NONPOSTED_ATOMIC_SENT = 0x6;
        NIU_MST_POSTED_ATOMIC_SENT = 0x7;
        NIU_MST_NONPOSTED_WR_DATA_WORD_SENT = 0x8;
        NIU_MST_POSTED_WR_DATA_WORD_SENT = 0x9;
        NIU_MST_NONPOSTED_WR_REQ_SENT = 0xA;
        NIU_MST_POSTED_WR_REQ_SENT = 0xB;
        NIU_MST_NONPOSTED_WR_REQ_STARTED = 0xC;
        NIU_MST_POSTED_WR_REQ_STARTED = 0xD;
        NIU_MST_RD_REQ_STARTED = 0xE;
        NIU_MST_NONPOSTED_ATOMIC_STARTED = 0xF;
        NIU_SLV_ATOMIC_RESP_SENT = 0x30;
        NIU_SLV_WR_ACK_SENT = 0x31;
        NIU_SLV_RD_RESP_SENT = 0x32;
        NIU_SLV_RD_DATA_WORD_SENT = 0x33;
        NIU_SLV_REQ_ACCEPTED = 0x34;
        NIU_SLV_RD_REQ_RECEIVED = 0x35;
        NIU_SLV_NONPOSTED_ATOMIC_RECEIVED = 0x36;
        NIU_SLV_POSTED_ATOMIC_RECEIVED = 0x37;
        NIU_SLV_NONPOSTED_WR_DATA_WORD_RECEIVED = 0x38;
        NIU_SLV_POSTED_WR_DATA_WORD_RECEIVED = 0x39;
        NIU_SLV_NONPOSTED_WR_REQ_RECEIVED = 0x3A;
        NIU_SLV_POSTED_WR_REQ_RECEIVED = 0x3B;
        NIU_SLV_NONPOSTED_WR_REQ_STARTED = 0x3C;
        NIU_SLV_POSTED_WR_REQ_STARTED = 0x3D;
    }

    /// `NIU_MST_REQS_OUTSTANDING_ID(id)` = 0x10 + id: requests of transaction
    /// id `id` not yet answered (8 bits; up at `NOC_CMD_CTRL`, down on the
    /// response or ack).
    pub const fn reqs_outstanding_id(id: u32) -> u32 {
        0x10 + id
    }

    /// `NIU_MST_WRITE_REQS_OUTGOING_ID(id)` = 0x20 + id: writes of id `id`
    /// whose data has not all left the tile (8 bits).
    pub const fn write_reqs_outgoing_id(id: u32) -> u32 {
        0x20 + id
    }

    /// The name of a counter, per-id counters included.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum CounterName {
        Named(&'static str),
        ReqsOutstandingId(u32),
        WriteReqsOutgoingId(u32),
    }

    impl core::fmt::Display for CounterName {
        fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
            match self {
                CounterName::Named(n) => f.write_str(n),
                CounterName::ReqsOutstandingId(id) => write!(f, "NIU_MST_REQS_OUTSTANDING_ID({id})"),
                CounterName::WriteReqsOutgoingId(id) => write!(f, "NIU_MST_WRITE_REQS_OUTGOING_ID({id})"),
            }
        }
    }

    /// The name of counter `index`, or `None` for an index cqlab does not name.
    pub fn name(index: u32) -> Option<CounterName> {
        match index {
            0x10..=0x1F => Some(CounterName::ReqsOutstandingId(index - 0x10)),
            0x20..=0x2F => Some(CounterName::WriteReqsOutgoingId(index - 0x20)),
            _ => NAMED.iter().find(|(_, i)| *i == index).map(|(n, _)| CounterName::Named(n)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_index_names_the_register_the_scan_finds_at_every_offset() {
        for layout in [WORMHOLE, BLACKHOLE] {
            for offset in 0..layout.cmd_buf_stride {
                assert_eq!(layout.reg_index.at(offset), layout.regs.reg_at(offset), "offset {offset:#x}");
            }
        }
    }

    /// `decode` inverts the address helpers (`cmd_buf_reg`, `cfg_reg`,
    /// `status_reg`), names everything else in a block `Other`, and nothing
    /// outside the blocks, at every byte address around both.
    #[test]
    fn decode_names_every_register_at_its_address_and_nothing_else() {
        for layout in [WORMHOLE, BLACKHOLE] {
            let mut named = std::collections::HashMap::new();
            for noc in [Noc::Noc0, Noc::Noc1] {
                for buf in 0..layout.cmd_bufs {
                    for reg in CmdBufReg::ALL {
                        if let Some(o) = layout.regs.offset(reg) {
                            named.insert(layout.cmd_buf_reg(noc, buf, o), (noc, NiuReg::CmdBuf { buf, reg }));
                        }
                    }
                }
                for i in 0..WINDOW_REGS {
                    named.insert(layout.cfg_reg(noc, i), (noc, NiuReg::Cfg(i)));
                    named.insert(layout.status_reg(noc, i), (noc, NiuReg::Status(i)));
                }
            }
            let first = layout.base(Noc::Noc0) - 0x100;
            let last = layout.base(Noc::Noc1) + NIU_BLOCK_SIZE + 0x100;
            for addr in first..last {
                let want = named.get(&addr).copied().or_else(|| {
                    [Noc::Noc0, Noc::Noc1].into_iter().find_map(|noc| {
                        let off = addr.wrapping_sub(layout.base(noc));
                        (off < NIU_BLOCK_SIZE).then_some((noc, NiuReg::Other(off)))
                    })
                });
                assert_eq!(layout.decode(addr), want, "address {addr:#x}");
            }
        }
    }
}
