//! The chip's memory map: L1 regions of every core, DRAM banks and the
//! sysmem window, as addresses the firmware, linker script, simulator and
//! driver all use.
//!
//! Every core sees its own L1 at address 0. Regions are laid out identically
//! on every core so one linker script serves all firmware; a region a core
//! does not use (the command buffer on a worker) is simply free L1.

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

/// Default L1 size per core (Wormhole-like 1.5 MiB). The simulator may be
/// configured larger; the fixed regions below always fit the default.
pub const L1_DEFAULT_SIZE: u32 = 1536 * 1024;

/// Size of a host TLB window onto the NOC (as Wormhole's 2 MiB windows): a
/// window maps `[base, base + TLB_WINDOW_SIZE)` of one endpoint, `base`
/// aligned to the size. The simulated chip's L1 fits one window.
pub const TLB_WINDOW_SIZE: u64 = 2 << 20;
const _: () = assert!(L1_DEFAULT_SIZE as u64 <= TLB_WINDOW_SIZE);

/// Never mapped to anything useful: catches null-pointer writes.
pub const NULL_GUARD: Region = Region { name: "null_guard", base: 0x0000_0000, size: 0x100 };
/// Launch, alive, waypoint, CQ config, error and exit mailboxes (see `mailbox`).
pub const MAILBOXES: Region = Region { name: "mailboxes", base: 0x0000_0100, size: 0x300 };
/// Prefetcher fetch queue: `u32` entries and their source and split words,
/// written by the host through the BAR (see `fetch_queue`).
pub const FETCH_QUEUE: Region = Region { name: "fetch_queue", base: 0x0000_0400, size: 0xC00 };
/// Firmware text and read-only data; the entry point is its first byte.
pub const CODE: Region = Region { name: "code", base: 0x0000_1000, size: 0x1_0000 };
/// Firmware `.data` and `.bss`.
pub const DATA: Region = Region { name: "data", base: 0x0001_1000, size: 0x8000 };
/// Stack of standalone programs (`cqlab sim exec`, ISA tests); device
/// firmware keeps its stack in `LOCAL_MEM` instead (see `FIRMWARE_STACK_TOP`).
pub const STACK: Region = Region { name: "stack", base: 0x0001_9000, size: 0x4000 };
/// Trace ring: a `TraceRingHeader` followed by `TraceRecord`s.
pub const TRACE_RING: Region = Region { name: "trace_ring", base: 0x0001_D000, size: 0x4000 };
/// Prefetcher command buffer: chunks read from the issue queue land here.
pub const CMD_BUFFER: Region = Region { name: "cmd_buffer", base: 0x0002_1000, size: 0x4_0000 };
/// Dispatcher ring buffer, filled by the prefetcher page by page.
pub const DISPATCH_RING: Region = Region { name: "dispatch_ring", base: 0x0006_1000, size: 0x4_0000 };
/// Buffers the host allocates in L1.
pub const USER: Region = Region { name: "user", base: 0x000A_1000, size: 0x0013_1000 - 0x000A_1000 };
/// Worker kernels' own working memory (tiles, staging pages).
pub const KERNEL_SCRATCH: Region =
    Region { name: "kernel_scratch", base: USER.base + USER.size, size: L1_DEFAULT_SIZE - (USER.base + USER.size) };

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
const _: () = assert!(TRACE_WINDOW % crate::mmio::NOC_MAX_PACKET == 0);

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
pub const WORKER_LAUNCH: Region = Region { name: "worker_launch", base: CMD_BUFFER.base, size: 0x8000 };
pub const KERNEL_TEXT: Region = Region { name: "kernel_text", base: WORKER_LAUNCH.end(), size: 0x4_0000 };
pub const KERNEL_CONFIG: Region = Region { name: "kernel_config", base: KERNEL_TEXT.end(), size: 0x2_0000 };
const _: () = assert!(CMD_BUFFER.end() == DISPATCH_RING.base && KERNEL_CONFIG.end() <= DISPATCH_RING.end());

/// Per-core local data memory: private to its core (not on the NOC, not
/// reachable through the BAR), one cycle per access where L1 takes
/// `LOAD_CYCLES`. Firmware stack and hot state live here. Modelled on the
/// local memory of Wormhole/Blackhole baby RISC-V cores (tt-metal's
/// `MEM_LOCAL_BASE`: 4 KiB for BRISC on Wormhole, 8 KiB on Blackhole).
/// It sits above every L1 size the simulator accepts and below the MMIO block.
pub const LOCAL_MEM: Region = Region { name: "local_mem", base: 0xFFA0_0000, size: 0x2000 };
const _: () = assert!(LOCAL_MEM.end() <= crate::mmio::MMIO_BASE);

/// Initial stack pointer of device firmware (and so of the kernels it calls).
pub const FIRMWARE_STACK_TOP: u32 = LOCAL_MEM.end();

/// Default dispatcher ring geometry (the ring fills `DISPATCH_RING`).
pub const DEFAULT_RING_PAGE_SIZE: u32 = 4096;
pub const DEFAULT_RING_PAGES: u32 = DISPATCH_RING.size / DEFAULT_RING_PAGE_SIZE;

/// Every fixed L1 region, in address order, back to back.
pub const L1_REGIONS: [Region; 11] = [
    NULL_GUARD,
    MAILBOXES,
    FETCH_QUEUE,
    CODE,
    DATA,
    STACK,
    TRACE_RING,
    CMD_BUFFER,
    DISPATCH_RING,
    USER,
    KERNEL_SCRATCH,
];

/// Initial stack pointer of standalone programs.
pub const STACK_TOP: u32 = STACK.end();

/// Firmware entry point: the first byte of `CODE`.
pub const ENTRY_POINT: u32 = CODE.base;

/// Maximum number of DRAM banks the NOC addresses.
pub const MAX_DRAM_BANKS: u32 = 16;
/// Default number of DRAM banks.
pub const DEFAULT_DRAM_BANKS: u32 = 8;
/// Default size of one DRAM bank (memory is allocated lazily by the simulator).
pub const DEFAULT_DRAM_BANK_SIZE: u64 = 1 << 30;

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
    assert!(KERNEL_SCRATCH.end() == L1_DEFAULT_SIZE);
    assert!(KERNEL_SCRATCH.size == 0x4_F000);
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
        assert!(CODE.contains(CODE.base, CODE.size));
        assert!(!CODE.contains(CODE.base, CODE.size + 1));
        assert!(!CODE.contains(CODE.base - 1, 1));
    }
}
