//! The L1 map of every Tensix tile and the local memories of its cores, as
//! addresses the firmware, the linker scripts, the simulator and the driver
//! all use.
//!
//! The map is the same on Wormhole and Blackhole up to [`USER`]'s end; the
//! last region, [`kernel_scratch`], runs to the end of L1 and so is smaller
//! on Wormhole (1464 KiB of L1) than on Blackhole (1536 KiB). Regions are
//! laid out identically on every tile, so one set of linker scripts serves
//! all firmware; a region a tile does not use (the command buffer on a
//! worker) is simply free L1.
//!
//! The five cores of a tile each have their own code and data region
//! ([`code`], [`data`]): the host loads one image per core, and BRISC's
//! image also holds the reset jump at address 0 ([`BOOT`]). Each core's
//! private local memory ([`local_mem`]) holds its stack, its hot state and,
//! at its top, the HAL's NOC issue counters ([`noc_state`]).

use crate::arch::tensix::{Processor, LOCAL_MEM_BASE};
use crate::arch::{ArchParams, BLACKHOLE, WORMHOLE};

/// A named, contiguous L1 region `[base, base + size)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Region {
    pub name: &'static str,
    pub base: u32,
    pub size: u32,
}

impl Region {
    pub const fn end(&self) -> u32 {
        self.base + self.size
    }
    pub const fn contains(&self, addr: u32, len: u32) -> bool {
        addr >= self.base && (addr as u64 + len as u64) <= self.end() as u64
    }
}

/// Address 0: BRISC's reset PC is hard-wired to 0 (tt-isa
/// `TensixTile/SoftReset.md`), so word 0 holds a `jal` to the BRISC image's
/// entry, written by the host before release ([`crate::boot::reset_jal`],
/// as tt-metal's `generate_risc_startup_addr`); word 1 is where NOC atomics
/// return the old value ([`NOC_ATOMIC_RET`]). The rest is never used, so a
/// stray null-pointer store lands in harmless bytes.
pub const BOOT: Region = Region { name: "boot", base: 0x0000_0000, size: 0x100 };
/// The BRISC reset jump (`MEM_BOOT_CODE_BASE`, tt-metal wh and bh
/// `dev_mem_map.h`).
pub const RESET_JAL: u32 = BOOT.base;
/// Where a non-posted NOC atomic's response (the old value) lands on the
/// issuing tile (`MEM_NOC_ATOMIC_RET_VAL_ADDR` 4, tt-metal wh and bh
/// `dev_mem_map.h`). Nobody reads it: the HAL programs it once.
pub const NOC_ATOMIC_RET: u32 = BOOT.base + 4;
/// Launch, alive, waypoint, CQ config, NOC map, semaphores, subordinate,
/// error and exit mailboxes (see `mailbox`).
pub const MAILBOXES: Region = Region { name: "mailboxes", base: 0x0000_0100, size: 0xF00 };
/// Prefetcher fetch queue: `u32` entries and their source and split words,
/// written by the host through the BAR (see `fetch_queue`).
pub const FETCH_QUEUE: Region = Region { name: "fetch_queue", base: 0x0000_1000, size: 0x1000 };

/// Code (text and read-only data) of each core's firmware image, in
/// [`Processor::ALL`] order; the entry point is the region's first byte.
/// BRISC runs the prefetcher, the dispatcher or the worker firmware
/// (about 12 KiB each when this map was laid out); the others run the
/// small worker loops of their own cores.
pub const CODE: [Region; 5] = [
    Region { name: "brisc_code", base: 0x0000_2000, size: 0xA000 },
    Region { name: "ncrisc_code", base: 0x0000_C000, size: 0x2000 },
    Region { name: "trisc0_code", base: 0x0000_E000, size: 0x1000 },
    Region { name: "trisc1_code", base: 0x0000_F000, size: 0x1000 },
    Region { name: "trisc2_code", base: 0x0001_0000, size: 0x1000 },
];
/// `.data` and `.bss` of each core's firmware image.
pub const DATA: [Region; 5] = [
    Region { name: "brisc_data", base: 0x0001_1000, size: 0x2000 },
    Region { name: "ncrisc_data", base: 0x0001_3000, size: 0x1000 },
    Region { name: "trisc0_data", base: 0x0001_4000, size: 0x1000 },
    Region { name: "trisc1_data", base: 0x0001_5000, size: 0x1000 },
    Region { name: "trisc2_data", base: 0x0001_6000, size: 0x1000 },
];

/// Processor `p`'s code region.
pub const fn code(p: Processor) -> Region {
    CODE[p.index()]
}

/// Processor `p`'s data region.
pub const fn data(p: Processor) -> Region {
    DATA[p.index()]
}

/// Processor `p`'s firmware entry: the first byte of its code region. The
/// host points BRISC's reset jump there; BRISC's worker firmware points
/// the reset-PC registers of the others there.
pub const fn firmware_entry(p: Processor) -> u32 {
    code(p).base
}

/// Stack of standalone programs (`cqlab sim exec`, ISA tests), which run
/// from [`ENTRY_POINT`] on one core; device firmware keeps its stack in
/// local memory instead ([`firmware_stack_top`]).
pub const STACK: Region = Region { name: "stack", base: 0x0001_7000, size: 0x6000 };
/// Trace ring: a `TraceRingHeader` followed by `TraceRecord`s (BRISC's).
pub const TRACE_RING: Region = Region { name: "trace_ring", base: 0x0001_D000, size: 0x4000 };
/// Prefetcher command buffer: chunks read from the issue queue land here.
pub const CMD_BUFFER: Region = Region { name: "cmd_buffer", base: 0x0002_1000, size: 0x4_0000 };
/// Dispatcher ring buffer, filled by the prefetcher page by page.
pub const DISPATCH_RING: Region = Region { name: "dispatch_ring", base: 0x0006_1000, size: 0x4_0000 };
/// Buffers the host allocates in L1.
pub const USER: Region = Region { name: "user", base: 0x000A_1000, size: 0x0013_1000 - 0x000A_1000 };

/// Worker kernels' own working memory (tiles, staging pages): the rest of
/// L1, whose size is the chip's.
pub const fn kernel_scratch(chip: &ArchParams) -> Region {
    Region { name: "kernel_scratch", base: USER.end(), size: chip.l1_size - USER.end() }
}

/// Where [`kernel_scratch`] starts on every chip.
pub const KERNEL_SCRATCH_BASE: u32 = USER.end();
/// The smallest [`kernel_scratch`] of the chips cqlab models (Wormhole's).
pub const KERNEL_SCRATCH_MIN: u32 = min_l1_size() - KERNEL_SCRATCH_BASE;

const fn min_l1_size() -> u32 {
    if WORMHOLE.l1_size < BLACKHOLE.l1_size {
        WORMHOLE.l1_size
    } else {
        BLACKHOLE.l1_size
    }
}

/// Prefetcher `CMD_BUFFER` split: fetched chunks land in `CHUNK_AREA`, and
/// data on its way from DRAM/L1 to the dispatcher ring passes through
/// `RELAY_SCRATCH`.
pub const CHUNK_AREA: Region = Region { name: "chunk_area", base: CMD_BUFFER.base, size: 0x3_0000 };
pub const RELAY_SCRATCH: Region = Region { name: "relay_scratch", base: CMD_BUFFER.end() - 0x1_0000, size: 0x1_0000 };
const _: () = assert!(CHUNK_AREA.end() == RELAY_SCRATCH.base && RELAY_SCRATCH.end() == CMD_BUFFER.end());

/// Prefetcher-only use of `DISPATCH_RING` (only a dispatcher core has a
/// ring there): a replayed trace streams through `TRACE_AREA`.
pub const TRACE_AREA: Region = Region { name: "trace_area", base: DISPATCH_RING.base, size: 0x3_0000 };
const _: () = assert!(TRACE_AREA.end() <= DISPATCH_RING.end());

/// A replayed trace streams through `TRACE_AREA` as a ring of this many
/// windows: while the prefetcher relays from one, the next one's DRAM pages
/// are landing and the one before is still being sent. A trace's DRAM page
/// size must divide a window (`TRACE_WINDOW`), so no page straddles two; a
/// trace may be any length. The next window's reads are issued when one
/// lands and must land while that one is relayed, so a window is large: a
/// DRAM read of 8 KiB takes ~800 cycles, and a 32 KiB window (one program
/// with 128 unique args on 64 cores) was relayed faster than that, which
/// made replays of such programs wait for DRAM at every window.
pub const TRACE_WINDOWS: u32 = 3;
pub const TRACE_WINDOW: u32 = TRACE_AREA.size / TRACE_WINDOWS;
const _: () = assert!(TRACE_WINDOW * TRACE_WINDOWS == TRACE_AREA.size && TRACE_WINDOW % 64 == 0);
const _: () = assert!(
    TRACE_WINDOW % WORMHOLE.noc.max_packet == 0 && TRACE_WINDOW % BLACKHOLE.noc.max_packet == 0,
    "a trace window is whole NOC packets on both chips"
);

/// The chunk area is a ring of buffers that chunks take in turn, so the
/// prefetcher reads the next chunks while it runs the current one (one
/// chunk's read takes the PCIe latency, ~750 cycles, plus its data time:
/// the link stays busy only with several in flight). A chunk (one
/// fetch-queue entry) is at most one buffer. Five buffers of 36 KiB rather
/// than four of 48 KiB: read-ahead leaves the buffer of the chunk that ran
/// last alone (its relay may take a thousand cycles to leave), and with
/// four that left two reads in flight, too few to keep PCIe busy with 33
/// KiB chunks (128 unique args x 64 cores, untraced).
pub const CHUNK_BUFFERS: u32 = 5;
pub const MAX_CHUNK: u32 = (CHUNK_AREA.size / CHUNK_BUFFERS) & !0xFFF;

/// L1 address of chunk buffer `i`.
pub const fn chunk_buffer(i: u32) -> u32 {
    CHUNK_AREA.base + (i % CHUNK_BUFFERS) * MAX_CHUNK
}

/// Worker-only use of `CMD_BUFFER` and `DISPATCH_RING` (which only CQ cores
/// use): the launch-message rings, one per command queue (`program`), the
/// kernel text slots, and the kernel-config ring that holds runtime args.
pub const WORKER_LAUNCH: Region = Region { name: "worker_launch", base: CMD_BUFFER.base, size: 0xE000 };
pub const KERNEL_TEXT: Region = Region { name: "kernel_text", base: WORKER_LAUNCH.end(), size: 0x4_0000 };
pub const KERNEL_CONFIG: Region = Region { name: "kernel_config", base: KERNEL_TEXT.end(), size: 0x2_0000 };
const _: () = assert!(CMD_BUFFER.base == WORKER_LAUNCH.base && KERNEL_CONFIG.end() <= DISPATCH_RING.end());

/// Every core's private local data memory: one cycle per access where L1
/// takes `LOAD_CYCLES`, not on the NOC (Wormhole; Blackhole has a slow
/// alias), one per core at the same address (tt-metal `MEM_LOCAL_BASE`).
/// The firmware stack, the hot state and [`noc_state`] live here.
pub const fn local_mem(chip: &ArchParams, p: Processor) -> Region {
    Region { name: "local_mem", base: LOCAL_MEM_BASE, size: chip.tensix.local_mem_size(p) }
}

/// The HAL's per-core NOC state at the top of local memory: the software
/// issue counters barriers compare with the NIU's counters (as tt-metal's
/// `noc_reads_num_issued` etc.). Firmware and the kernels it calls share
/// them, so their address is fixed per chip and core: a kernel's writes
/// count toward the barrier the firmware waits on before it reports done.
/// They sit above the stack, so a stack that outgrows local memory runs off
/// its bottom (an unmapped address: the core halts) instead of over them.
pub const fn noc_state(chip: &ArchParams, p: Processor) -> Region {
    Region { name: "noc_state", base: local_mem(chip, p).end() - NOC_STATE_SIZE, size: NOC_STATE_SIZE }
}

/// Bytes of [`noc_state`].
pub const NOC_STATE_SIZE: u32 = 32;

/// Initial stack pointer of processor `p`'s firmware (and so of the
/// kernels it calls): just below [`noc_state`]. The stack grows down
/// towards the base of local memory.
pub const fn firmware_stack_top(chip: &ArchParams, p: Processor) -> u32 {
    noc_state(chip, p).base
}

/// Default dispatcher ring geometry (the ring fills `DISPATCH_RING`).
pub const DEFAULT_RING_PAGE_SIZE: u32 = 4096;
pub const DEFAULT_RING_PAGES: u32 = DISPATCH_RING.size / DEFAULT_RING_PAGE_SIZE;

/// Every fixed L1 region, in address order, back to back; then
/// [`kernel_scratch`] to the end of L1.
pub const L1_REGIONS: [Region; 18] = [
    BOOT,
    MAILBOXES,
    FETCH_QUEUE,
    CODE[0],
    CODE[1],
    CODE[2],
    CODE[3],
    CODE[4],
    DATA[0],
    DATA[1],
    DATA[2],
    DATA[3],
    DATA[4],
    STACK,
    TRACE_RING,
    CMD_BUFFER,
    DISPATCH_RING,
    USER,
];

/// Initial stack pointer of standalone programs.
pub const STACK_TOP: u32 = STACK.end();

/// Entry point of standalone programs (`cqlab sim exec`, ISA tests): the
/// first byte of BRISC's code region, where firmware starts too.
pub const ENTRY_POINT: u32 = CODE[0].base;

/// Most DRAM banks a `NocMap` describes (Wormhole has 12, Blackhole 8).
pub const MAX_DRAM_BANKS: u32 = 16;

/// Page-interleaved buffer placement: page `p` of a buffer at `base` lives in
/// bank `p % banks` at byte offset `base + (p / banks) * page_size`.
pub const fn interleaved_page(base: u32, page: u32, page_size: u32, banks: u32) -> (u32, u64) {
    let bank = page % banks;
    let offset = base as u64 + (page / banks) as u64 * page_size as u64;
    (bank, offset)
}

const _: () = {
    let mut i = 1;
    while i < L1_REGIONS.len() {
        assert!(L1_REGIONS[i - 1].end() == L1_REGIONS[i].base, "L1 regions must be contiguous");
        assert!(L1_REGIONS[i].base % 16 == 0, "L1 regions must be 16-byte aligned");
        i += 1;
    }
    assert!(L1_REGIONS[L1_REGIONS.len() - 1].end() == KERNEL_SCRATCH_BASE);
    assert!(KERNEL_SCRATCH_BASE < WORMHOLE.l1_size && KERNEL_SCRATCH_BASE < BLACKHOLE.l1_size);
    assert!(kernel_scratch(&WORMHOLE).end() == WORMHOLE.l1_size);
    assert!(kernel_scratch(&BLACKHOLE).end() == BLACKHOLE.l1_size);
    assert!(KERNEL_SCRATCH_MIN == 0x3_D000, "Wormhole's kernel scratch: 244 KiB");
    // Local memory sits above every L1 and holds the NOC state below the stack.
    assert!(WORMHOLE.l1_size <= LOCAL_MEM_BASE && BLACKHOLE.l1_size <= LOCAL_MEM_BASE);
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interleaving_round_robins_banks() {
        assert_eq!(interleaved_page(0x1000, 0, 2048, 8), (0, 0x1000));
        assert_eq!(interleaved_page(0x1000, 7, 2048, 8), (7, 0x1000));
        assert_eq!(interleaved_page(0x1000, 8, 2048, 8), (0, 0x1000 + 2048));
        assert_eq!(interleaved_page(0, 17, 4096, 8), (1, 2 * 4096));
    }

    #[test]
    fn region_contains_checks_both_ends() {
        let c = code(Processor::Brisc);
        assert!(c.contains(c.base, c.size));
        assert!(!c.contains(c.base, c.size + 1));
        assert!(!c.contains(c.base - 1, 1));
    }

    #[test]
    fn only_the_tail_depends_on_the_chip() {
        assert_eq!(kernel_scratch(&WORMHOLE).size, 0x16_E000 - 0x13_1000);
        assert_eq!(kernel_scratch(&BLACKHOLE).size, 0x18_0000 - 0x13_1000);
        for p in Processor::ALL {
            assert_eq!(firmware_entry(p), code(p).base);
            assert!(code(p).end() <= data(Processor::Brisc).base);
        }
        // Wormhole TRISCs have 2 KiB of local memory, Blackhole's BRISC 8 KiB.
        assert_eq!(noc_state(&WORMHOLE, Processor::Trisc1).end(), 0xFFB0_0800);
        assert_eq!(firmware_stack_top(&WORMHOLE, Processor::Trisc1), 0xFFB0_0800 - 32);
        assert_eq!(firmware_stack_top(&BLACKHOLE, Processor::Brisc), 0xFFB0_2000 - 32);
    }
}
