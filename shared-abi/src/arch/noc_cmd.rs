//! What firmware writes into a command buffer besides addresses: the
//! `NOC_CTRL` request word, the `NOC_PACKET_TAG` word and the atomic
//! encodings of `NOC_AT_LEN_BE`. The bit positions are the same on Wormhole
//! and Blackhole; where a field is wider or exists on one chip only, its doc
//! says so.
//!
//! Sources: tt-metal wh and bh `noc_parameters.h` (`NOC_CMD_*`, `NOC_AT_*`,
//! `NOC_PACKET_TAG_*`, `NOC_CTRL_*`, `NOC_MAX_TRANSACTION_ID*`); tt-isa
//! `WormholeB0/NoC/MemoryMap.md` and `BlackholeA0/NoC/MemoryMap.md`
//! (NOC_CTRL, NOC_PACKET_TAG), `NoC/Atomics.md`.

/// `NOC_CTRL` bits.
pub mod ctrl {
    /// Request type field, bits `[1:0]`.
    pub const TYPE_MASK: u32 = 0x3;
    /// NOC_CMD_RD (= NOC_CMD_CPY) 0: read.
    pub const CMD_RD: u32 = 0;
    /// NOC_CMD_AT (1 << 0): atomic.
    pub const CMD_AT: u32 = 1 << 0;
    /// NOC_CMD_WR (1 << 1): write.
    pub const CMD_WR: u32 = 1 << 1;
    /// NOC_CMD_WR_BE (1 << 2): `NOC_AT_LEN_BE` holds a byte-enable mask.
    pub const WR_BE: u32 = 1 << 2;
    /// NOC_CMD_WR_INLINE (1 << 3): the data is `NOC_AT_DATA`. On Blackhole
    /// tt-metal does not use it for L1 destinations (hardware bug; tt-metal bh
    /// `noc_nonblocking_api.h` `noc_fast_write_dw_inline`).
    pub const WR_INLINE: u32 = 1 << 3;
    /// NOC_CMD_RESP_MARKED (1 << 4): non-posted, an ack or response is wanted.
    pub const RESP_MARKED: u32 = 1 << 4;
    /// NOC_CMD_BRCST_PACKET (1 << 5): multicast.
    pub const BRCST_PACKET: u32 = 1 << 5;
    /// NOC_CMD_VC_LINKED (1 << 6): more requests of this transaction follow.
    pub const VC_LINKED: u32 = 1 << 6;
    /// NOC_CMD_VC_STATIC (1 << 7): the VC is [`static_vc`]'s, not chosen by
    /// hardware.
    pub const VC_STATIC: u32 = 1 << 7;
    /// NOC_CMD_PATH_RESERVE (1 << 8).
    pub const PATH_RESERVE: u32 = 1 << 8;
    /// NOC_CMD_MEM_RD_DROP_ACK (1 << 9).
    pub const MEM_RD_DROP_ACK: u32 = 1 << 9;
    /// NOC_CMD_STATIC_VC(vc) = vc << 13: bits `[15:13]`, bit 13 the buddy bit,
    /// `[15:14]` the class (0b00/0b01 unicast, 0b10 broadcast, 0b11 responses).
    pub const STATIC_VC_SHIFT: u32 = 13;
    pub const STATIC_VC_MASK: u32 = 0x7 << STATIC_VC_SHIFT;
    /// NOC_CMD_BRCST_XY(y) = y << 16: 0 means X is the major broadcast axis.
    pub const BRCST_XY_SHIFT: u32 = 16;
    /// NOC_CMD_BRCST_SRC_INCLUDE (1 << 17): the sender receives its own
    /// multicast.
    pub const BRCST_SRC_INCLUDE: u32 = 1 << 17;
    /// NOC_CMD_ARB_PRIORITY(p) = p << 27.
    pub const ARB_PRIORITY_SHIFT: u32 = 27;
    /// NOC_CMD_L1_ACC_AT_EN (1 << 31): Blackhole only, unusable (tt-metal bh
    /// `noc_nonblocking_api.h`).
    pub const L1_ACC_AT_EN: u32 = 1 << 31;

    pub const fn static_vc(vc: u32) -> u32 {
        vc << STATIC_VC_SHIFT
    }

    pub const fn brcst_xy(y: u32) -> u32 {
        y << BRCST_XY_SHIFT
    }

    pub const fn arb_priority(p: u32) -> u32 {
        p << ARB_PRIORITY_SHIFT
    }

    /// The request words tt-metal's dataflow API writes to `NOC_CTRL`
    /// (tt-metal wh and bh `noc_nonblocking_api.h`): `ncrisc_noc_fast_read`
    /// (`noc_init`'s read word, on the read-request VC),
    /// `ncrisc_noc_fast_write` (non-posted, unicast on VC 1; a multicast on
    /// VC 4 reserves its path), `noc_fast_atomic_increment` (non-posted, on
    /// the unicast-write VC). Not linked.
    pub const READ: u32 = CMD_RD | RESP_MARKED | VC_STATIC | static_vc(super::vc::READ_REQUEST);
    pub const WRITE_UNICAST: u32 = CMD_WR | RESP_MARKED | VC_STATIC | static_vc(super::vc::UNICAST_WRITE);
    pub const WRITE_MULTICAST: u32 =
        CMD_WR | RESP_MARKED | VC_STATIC | static_vc(super::vc::MULTICAST_WRITE) | BRCST_PACKET | PATH_RESERVE;
    pub const ATOMIC: u32 = CMD_AT | RESP_MARKED | VC_STATIC | static_vc(super::vc::UNICAST_WRITE);

    /// [`WRITE_MULTICAST`] or [`WRITE_UNICAST`].
    pub const fn write(multicast: bool) -> u32 {
        if multicast {
            WRITE_MULTICAST
        } else {
            WRITE_UNICAST
        }
    }
}

/// `NOC_CMD_CTRL` values.
pub mod cmd_ctrl {
    /// NOC_CTRL_SEND_REQ (1 << 0): write it to issue the request.
    pub const SEND_REQ: u32 = 1 << 0;
    /// NOC_CTRL_STATUS_READY 0: the buffer may be reused when it reads this.
    pub const STATUS_READY: u32 = 0;
}

/// `NOC_PACKET_TAG` fields.
pub mod packet_tag {
    /// NOC_PACKET_TAG_HEADER_STORE (1 << 9).
    pub const HEADER_STORE: u32 = 1 << 9;
    /// NOC_PACKET_TAG_TRANSACTION_ID(id) = id << 10: bits `[13:10]`.
    pub const TRANSACTION_ID_SHIFT: u32 = 10;
    pub const TRANSACTION_ID_MASK: u32 = 0xF << TRANSACTION_ID_SHIFT;
    /// NOC_MAX_TRANSACTION_ID 0xF: ids 0..=15.
    pub const MAX_TRANSACTION_ID: u32 = 0xF;
    /// NOC_MAX_TRANSACTION_ID_COUNT 255: the per-id counters are 8 bits.
    pub const MAX_TRANSACTION_ID_COUNT: u32 = 255;

    pub const fn transaction_id(id: u32) -> u32 {
        id << TRANSACTION_ID_SHIFT
    }

    /// The transaction id a tag word carries.
    pub const fn transaction_id_of(tag: u32) -> u32 {
        (tag & TRANSACTION_ID_MASK) >> TRANSACTION_ID_SHIFT
    }
}

/// `NOC_AT_LEN_BE` when the request is an atomic.
pub mod atomic {
    /// NOC_AT_INS(ins) = ins << 12. The opcode field is `[14:12]` on Wormhole
    /// (tt-isa `WormholeB0/NoC/Atomics.md`) and `[15:12]` on Blackhole (tt-isa
    /// `BlackholeA0/NoC/Atomics.md`, its layout diagrams).
    pub const INS_SHIFT: u32 = 12;
    pub const INS_MASK: u32 = 0xF << INS_SHIFT;
    /// NOC_AT_INS_NOP.
    pub const INS_NOP: u32 = 0x0;
    /// NOC_AT_INS_INCR_GET: add `NOC_AT_DATA` to a word, return the old value.
    pub const INS_INCR_GET: u32 = 0x1;
    /// NOC_AT_INS_INCR_GET_PTR.
    pub const INS_INCR_GET_PTR: u32 = 0x2;
    /// NOC_AT_INS_SWAP.
    pub const INS_SWAP: u32 = 0x3;
    /// NOC_AT_INS_CAS.
    pub const INS_CAS: u32 = 0x4;
    /// NOC_AT_INS_GET_TILE_MAP.
    pub const INS_GET_TILE_MAP: u32 = 0x5;
    /// NOC_AT_INS_STORE_IND.
    pub const INS_STORE_IND: u32 = 0x6;
    /// NOC_AT_INS_SWAP_4B.
    pub const INS_SWAP_4B: u32 = 0x7;
    /// NOC_AT_INS_ACC (Blackhole only).
    pub const INS_ACC: u32 = 0x9;
    /// NOC_AT_IND_32(i) = i << 0: which 32-bit word of the 16-byte line.
    pub const IND_32_SHIFT: u32 = 0;
    /// NOC_AT_WRAP(w) = w << 2: the increment keeps the low w+1 bits (31 = a
    /// full 32-bit add).
    pub const WRAP_SHIFT: u32 = 2;
    /// NOC_AT_IND_32_SRC(i) = i << 10.
    pub const IND_32_SRC_SHIFT: u32 = 10;
    /// The wrap tt-metal's `noc_semaphore_inc` uses: a full 32-bit add.
    pub const WRAP_FULL: u32 = 31;

    pub const fn ins(ins: u32) -> u32 {
        ins << INS_SHIFT
    }

    pub const fn ind_32(i: u32) -> u32 {
        i << IND_32_SHIFT
    }

    pub const fn wrap(w: u32) -> u32 {
        w << WRAP_SHIFT
    }

    pub const fn ind_32_src(i: u32) -> u32 {
        i << IND_32_SRC_SHIFT
    }

    /// The `NOC_AT_LEN_BE` word of a full 32-bit increment of the L1 word at
    /// `addr`, as tt-metal's `noc_fast_atomic_increment` builds it (tt-metal
    /// wh and bh `noc_nonblocking_api.h`).
    pub const fn incr_get(addr: u64) -> u32 {
        ins(INS_INCR_GET) | wrap(WRAP_FULL) | ind_32(((addr >> 2) & 0x3) as u32) | ind_32_src(0)
    }

    /// The opcode of an `NOC_AT_LEN_BE` word.
    pub const fn ins_of(at_len_be: u32) -> u32 {
        (at_len_be & INS_MASK) >> INS_SHIFT
    }

    /// The word index (0..=3 in the 16-byte line) of an `NOC_AT_LEN_BE` word.
    pub const fn ind_32_of(at_len_be: u32) -> u32 {
        (at_len_be >> IND_32_SHIFT) & 0x3
    }

    /// The wrap field (5 bits) of an `NOC_AT_LEN_BE` word.
    pub const fn wrap_of(at_len_be: u32) -> u32 {
        (at_len_be >> WRAP_SHIFT) & 0x1F
    }
}

/// Virtual channels tt-metal uses (tt-metal
/// `tt_metal/hw/inc/internal/dataflow/dataflow_api_common.h`
/// `NOC_UNICAST_WRITE_VC`, `NOC_MULTICAST_WRITE_VC`,
/// `NOC_DISPATCH_MULTICAST_WRITE_VC`; noc_parameters.h `NOC_BCAST_VC_START`,
/// `NOC_VCS`).
pub mod vc {
    pub const UNICAST_WRITE: u32 = 1;
    pub const MULTICAST_WRITE: u32 = 4;
    pub const DISPATCH_MULTICAST_WRITE: u32 = 5;
    /// The default read-request VC (`read_req_vc = 1` in the nonblocking API).
    pub const READ_REQUEST: u32 = 1;
    pub const BCAST_VC_START: u32 = 4;
    pub const COUNT: u32 = 16;
}
