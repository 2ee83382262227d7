//! One NOC interface unit (NIU) of a Tensix tile, register for register
//! (`cqlab_abi::arch::niu`): four command buffers, `NOC_CFG` and the
//! `NOC_STATUS` counters.
//!
//! A core fills a command buffer's registers and writes 1 to its
//! `NOC_CMD_CTRL`; the NIU takes a snapshot of the buffer ([`Request`]),
//! which the chip checks and schedules, and the buffer reads busy until the
//! request is accepted (`interface_cycles` later): writing `NOC_CMD_CTRL`
//! meanwhile is refused, as firmware must wait for it to read 0. The
//! counters move as tt-isa `NoC/Counters.md` says (research notes,
//! wormhole.md 2.6): the chip calls [`Niu::bump`] at each step.
//!
//! The chip boots with NOC translation on (`NIU_CFG_0.NOC_ID_TRANSLATE_EN`,
//! as Tenstorrent's ARC firmware leaves it) and the translation tables
//! programmed; `NOC_CFG` is read-only to cores here.

use crate::hart::AccessFault;
use cqlab_abi::arch::niu::{counter, niu_cfg_0, node_id, CmdBufReg, NiuReg, WINDOW_REGS};
use cqlab_abi::arch::noc_addr::{AddrWords, CoordField};
use cqlab_abi::arch::noc_cmd::{atomic, cmd_ctrl, ctrl, packet_tag};
use cqlab_abi::arch::{Arch, ArchParams, Noc};
use cqlab_abi::noc::Coord;
use cqlab_abi::soc::ChipLayout;

/// Registers in the `NOC_CFG` and in the `NOC_STATUS` window.
const WINDOW: usize = WINDOW_REGS as usize;
// `Niu::cfg_known` holds a bit a `NOC_CFG` register.
const _: () = assert!(WINDOW <= u64::BITS as usize);

/// Registers of one command buffer, by `CmdBufReg::ALL` index.
const REGS: usize = CmdBufReg::ALL.len();

/// `CmdBufReg::ALL` lists the registers in declaration order, so a
/// register's index is its discriminant (checked at compile time below).
const fn reg_index(r: CmdBufReg) -> usize {
    r as usize
}

const _: () = {
    let mut i = 0;
    while i < REGS {
        assert!(reg_index(CmdBufReg::ALL[i]) == i, "CmdBufReg::ALL is in declaration order");
        i += 1;
    }
};

/// One command buffer.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CmdBuf {
    regs: [u32; REGS],
    /// `NOC_CMD_CTRL` reads 1 until this cycle.
    busy_until: u64,
}

/// A request as the command buffer held it when `NOC_CMD_CTRL` was written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Request {
    pub noc: Noc,
    pub buf: u32,
    pub ctrl: u32,
    pub targ: AddrWords,
    pub ret: AddrWords,
    pub packet_tag: u32,
    pub at_len_be: u32,
    pub at_data: u32,
    /// The issuing core's cycle.
    pub time: u64,
}

/// What a request asks for, decoded from its `NOC_CTRL` word.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Read,
    Write {
        multicast: bool,
        posted: bool,
        src_include: bool,
        /// `NOC_CMD_VC_LINKED`: more packets of this transaction follow,
        /// and the next keeps this one's path.
        linked: bool,
    },
    /// `INCR_GET` of the word `ind` of the 16-byte line, keeping the low
    /// `wrap + 1` bits; `resp`: non-posted (the old value returns).
    AtomicIncr {
        ind: u32,
        wrap: u32,
        resp: bool,
    },
}

impl Request {
    /// The transaction id (`NOC_PACKET_TAG` bits 13:10).
    pub fn tid(&self) -> u32 {
        packet_tag::transaction_id_of(self.packet_tag)
    }

    /// The static VC of the request (`NOC_CMD_STATIC_VC`), or `None` when
    /// the hardware picks one (`NOC_CMD_VC_STATIC` clear).
    pub fn static_vc(&self) -> Option<u32> {
        (self.ctrl & ctrl::VC_STATIC != 0).then_some((self.ctrl & ctrl::STATIC_VC_MASK) >> ctrl::STATIC_VC_SHIFT)
    }

    /// What the request asks for; `Err` names what cqlab does not model or
    /// what is invalid.
    pub fn kind(&self, chip: &ArchParams) -> Result<Kind, &'static str> {
        let c = self.ctrl;
        if c & ctrl::WR_BE != 0 {
            return Err("NOC_CMD_WR_BE (byte-enable writes) is not modelled");
        }
        if c & ctrl::WR_INLINE != 0 {
            return Err("NOC_CMD_WR_INLINE (inline writes) is not modelled");
        }
        if c & ctrl::MEM_RD_DROP_ACK != 0 {
            return Err("NOC_CMD_MEM_RD_DROP_ACK is not modelled");
        }
        if chip.arch == Arch::Blackhole && c & ctrl::L1_ACC_AT_EN != 0 {
            return Err("NOC_CMD_L1_ACC_AT_EN is not modelled (and unusable: tt-metal bh noc_nonblocking_api.h)");
        }
        let resp = c & ctrl::RESP_MARKED != 0;
        let multicast = c & ctrl::BRCST_PACKET != 0;
        Ok(match c & ctrl::TYPE_MASK {
            ctrl::CMD_RD => {
                if multicast {
                    return Err("a NOC read cannot be multicast");
                }
                Kind::Read
            }
            ctrl::CMD_WR => Kind::Write {
                multicast,
                posted: !resp,
                src_include: c & ctrl::BRCST_SRC_INCLUDE != 0,
                linked: c & ctrl::VC_LINKED != 0,
            },
            ctrl::CMD_AT => {
                if multicast {
                    return Err("multicast atomics are not modelled");
                }
                let be = self.at_len_be;
                if atomic::ins_of(be) != atomic::INS_INCR_GET {
                    return Err("NOC atomics other than INCR_GET are not modelled");
                }
                Kind::AtomicIncr { ind: atomic::ind_32_of(be), wrap: atomic::wrap_of(be), resp }
            }
            _ => return Err("NOC_CTRL request type 3 is reserved"),
        })
    }

    /// Coordinates and tile address of the target (`NOC_TARG_ADDR_*`).
    pub fn target(&self, chip: &ArchParams) -> (CoordField, u64) {
        (chip.noc.split.coords(self.targ), chip.noc.split.tile_addr(self.targ))
    }

    /// Coordinates and tile address of the return side (`NOC_RET_ADDR_*`).
    pub fn ret(&self, chip: &ArchParams) -> (CoordField, u64) {
        (chip.noc.split.coords(self.ret), chip.noc.split.tile_addr(self.ret))
    }
}

/// One NIU.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Niu {
    pub noc: Noc,
    cmd: [CmdBuf; 4],
    cfg: [u32; WINDOW],
    /// Which `NOC_CFG` registers hold a value cqlab models (the others
    /// refuse reads).
    cfg_known: u64,
    status: [u32; WINDOW],
    node_id: u32,
}

/// Per-transaction-id counters are 8 bits wide (`NOC_MAX_TRANSACTION_ID_COUNT`).
fn is_per_id(index: u32) -> bool {
    (0x10..0x30).contains(&index)
}

impl Niu {
    /// The NIU of `noc` of the tile at NOC0 `c` of `layout`, at power-on:
    /// counters zero, translation on.
    pub fn new(layout: &ChipLayout, noc: Noc, c: Coord) -> Self {
        let chip = layout.params();
        let tile = layout.tile(c).expect("a tile of the layout");
        let own = match noc {
            Noc::Noc0 => tile.noc0,
            Noc::Noc1 => tile.noc1,
        };
        let g = chip.grid;
        let mut cfg = [0u32; WINDOW];
        let mut known = 0u64;
        let mut set = |i: u32, v: u32| {
            cfg[i as usize] = v;
            known |= 1 << i;
        };
        set(chip.niu.cfg.niu_cfg_0, niu_cfg_0::NOC_ID_TRANSLATE_EN);
        set(chip.niu.cfg.noc_id_logical, (tile.translated.y as u32) << 6 | tile.translated.x as u32);
        // Wormhole's tables as firmware programs them, in this NOC's terms
        // (Blackhole's translation cqlab describes per tile only).
        if let Some((xs, ys)) = layout.translation_tables() {
            let to_noc = |v: u8, axis_x: bool| -> u8 {
                let p = Coord::new(if axis_x { v } else { 0 }, if axis_x { 0 } else { v });
                match layout.from_noc0(noc, p) {
                    Some(q) if axis_x => q.x,
                    Some(q) => q.y,
                    None => 0,
                }
            };
            let bits = chip.niu.cfg.translate_entry_bits;
            let per_reg = 32 / bits;
            for (base, table, is_x) in
                [(chip.niu.cfg.x_translate_table, xs, true), (chip.niu.cfg.y_translate_table, ys, false)]
            {
                for r in 0..chip.niu.cfg.translate_table_regs {
                    let mut v = 0u32;
                    for k in 0..per_reg {
                        let e = (r * per_reg + k) as usize;
                        // Below 16 the entries are identities in each NOC's own terms.
                        let entry = if e < 16 { table[e] } else { to_noc(table[e], is_x) };
                        v |= (entry as u32) << (k * bits);
                    }
                    set(base + r, v);
                }
            }
        }
        Niu {
            noc,
            cmd: std::array::from_fn(|_| CmdBuf { regs: [0; REGS], busy_until: 0 }),
            cfg,
            cfg_known: known,
            status: [0; WINDOW],
            node_id: node_id::encode(own.x, own.y, g.x, g.y, noc),
        }
    }

    /// Counter `index` (`arch::niu::counter`).
    pub fn counter(&self, index: u32) -> u32 {
        self.status[index as usize]
    }

    /// Moves counter `index` by `by` (wrapping; the per-id counters in 8 bits).
    pub fn bump(&mut self, index: u32, by: i32) {
        let v = &mut self.status[index as usize];
        *v = v.wrapping_add(by as u32);
        if is_per_id(index) {
            *v &= packet_tag::MAX_TRANSACTION_ID_COUNT;
        }
    }

    /// What [`Niu::read`] gives for `reg` at cycle `now` where the read is
    /// not refused; `None` for the others.
    #[inline(always)]
    pub fn read_plain(&self, reg: NiuReg, now: u64) -> Option<u32> {
        match reg {
            NiuReg::Status(i) if i < WINDOW_REGS => Some(self.status[i as usize]),
            NiuReg::CmdBuf { buf, reg } => match reg {
                CmdBufReg::CmdCtrl => Some((now < self.cmd[buf as usize].busy_until) as u32),
                CmdBufReg::EndpointId | CmdBufReg::ClearOutstandingReqCnt => None,
                CmdBufReg::NodeId => Some(self.node_id),
                _ => Some(self.cmd[buf as usize].regs[reg_index(reg)]),
            },
            NiuReg::Cfg(i) if i < WINDOW_REGS && self.cfg_known & 1 << i != 0 => Some(self.cfg[i as usize]),
            NiuReg::Cfg(_) | NiuReg::Status(_) | NiuReg::Other(_) => None,
        }
    }

    /// A core reads register `reg` at cycle `now`.
    pub fn read(&self, reg: NiuReg, now: u64) -> Result<u32, AccessFault> {
        if let Some(v) = self.read_plain(reg, now) {
            return Ok(v);
        }
        Err(match reg {
            NiuReg::CmdBuf { reg: CmdBufReg::EndpointId, .. } => AccessFault::NotModelled("NOC_ENDPOINT_ID"),
            NiuReg::CmdBuf { reg: CmdBufReg::ClearOutstandingReqCnt, .. } => {
                AccessFault::Rejected("NOC_CLEAR_OUTSTANDING_REQ_CNT is write-only")
            }
            NiuReg::CmdBuf { .. } => unreachable!("read_plain reads every other command-buffer register"),
            NiuReg::Cfg(_) => AccessFault::NotModelled(
                "NOC_CFG register (cqlab models NIU_CFG_0, the Wormhole translation tables and NOC_ID_LOGICAL)",
            ),
            NiuReg::Status(_) | NiuReg::Other(_) => {
                AccessFault::NotModelled("NIU register (cqlab models the command buffers, NOC_CFG and NOC_STATUS)")
            }
        })
    }

    /// A core writes `value` to command-buffer register `reg` of buffer
    /// `buf` if the register only holds what is written (as [`Niu::write`]
    /// does); false, with nothing written, for the registers whose writes
    /// do more or are refused.
    #[inline(always)]
    pub fn store_plain(&mut self, buf: u32, reg: CmdBufReg, value: u32) -> bool {
        match reg {
            CmdBufReg::CmdCtrl | CmdBufReg::NodeId | CmdBufReg::EndpointId | CmdBufReg::ClearOutstandingReqCnt => false,
            _ => {
                self.cmd[buf as usize].regs[reg_index(reg)] = value;
                true
            }
        }
    }

    /// A core writes `value` to register `reg` at cycle `now`; a request when
    /// it wrote `NOC_CMD_CTRL`. The buffer is busy for `accept_cycles`.
    pub fn write(
        &mut self,
        reg: NiuReg,
        value: u32,
        now: u64,
        accept_cycles: u64,
    ) -> Result<Option<Request>, AccessFault> {
        let NiuReg::CmdBuf { buf, reg } = reg else {
            return Err(match reg {
                NiuReg::Cfg(_) => AccessFault::Rejected("NOC_CFG is read-only here: cqlab's chip boots configured"),
                NiuReg::Status(_) => AccessFault::Rejected("NOC_STATUS counters are read-only"),
                _ => {
                    AccessFault::NotModelled("NIU register (cqlab models the command buffers, NOC_CFG and NOC_STATUS)")
                }
            });
        };
        if self.store_plain(buf, reg, value) {
            return Ok(None);
        }
        let b = &mut self.cmd[buf as usize];
        match reg {
            CmdBufReg::CmdCtrl => {
                if value & cmd_ctrl::SEND_REQ == 0 {
                    return Ok(None);
                }
                if now < b.busy_until {
                    return Err(AccessFault::Rejected(
                        "NOC_CMD_CTRL written while its command buffer is busy (wait until it reads 0)",
                    ));
                }
                b.busy_until = now + accept_cycles;
                let r = |x: CmdBufReg| b.regs[reg_index(x)];
                Ok(Some(Request {
                    noc: self.noc,
                    buf,
                    ctrl: r(CmdBufReg::Ctrl),
                    targ: AddrWords {
                        lo: r(CmdBufReg::TargAddrLo),
                        mid: r(CmdBufReg::TargAddrMid),
                        hi: r(CmdBufReg::TargAddrHi),
                    },
                    ret: AddrWords {
                        lo: r(CmdBufReg::RetAddrLo),
                        mid: r(CmdBufReg::RetAddrMid),
                        hi: r(CmdBufReg::RetAddrHi),
                    },
                    packet_tag: r(CmdBufReg::PacketTag),
                    at_len_be: r(CmdBufReg::AtLenBe),
                    at_data: r(CmdBufReg::AtData),
                    time: now,
                }))
            }
            CmdBufReg::NodeId | CmdBufReg::EndpointId => {
                Err(AccessFault::Rejected("NOC_NODE_ID and NOC_ENDPOINT_ID are read-only"))
            }
            CmdBufReg::ClearOutstandingReqCnt => {
                for id in 0..=packet_tag::MAX_TRANSACTION_ID {
                    if value & 1 << id != 0 {
                        self.status[counter::reqs_outstanding_id(id) as usize] = 0;
                    }
                }
                Ok(None)
            }
            _ => unreachable!("store_plain took every other register"),
        }
    }
}
