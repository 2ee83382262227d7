//! Programs on worker cores: the launch-message ring, the GO word, kernel
//! text slots, the kernel-config ring and what a kernel is handed.
//!
//! Every worker tile runs the resident worker firmware on its five cores
//! (BRISC, NCRISC, TRISC0-2). BRISC keeps a count of the
//! launches it has started; the dispatcher's `LAUNCH` command multicasts
//! launch message number `n` (counting from 1) into ring entry
//! `launch_entry(n)` of every worker of the grid, with `n` stamped in the
//! entry's last word (`LAUNCH_TAG`): that one multicast is the GO, and it
//! carries the launch-ring index. A worker starts entry `started + 1` once
//! its tag reads `started + 1`, finds the group containing its tile (if
//! any), starts each subordinate core that has a kernel in it with one
//! store (`mailbox::SubordinateRun`: each reads its own kernel and args
//! from the group), runs its own, waits for the subordinates' `done` bytes
//! and increments the dispatcher's done semaphores once, so
//! every launch adds one completion per worker tile of the grid (as
//! tt-metal counts every worker of a sub-device), whichever of its cores
//! ran kernels. The message's last word lands last (one write,
//! flits in order; the simulator delivers a write at once), and everything
//! the kernels read (text, args) was acknowledged before the message was sent.
//!
//! The dispatcher never writes entry `n` before launch `n - LAUNCH_RING_ENTRIES`
//! has finished on every worker (it counts completions per entry,
//! `launch_done_sem`), and the host reuses kernel text slots and
//! kernel-config bytes only once the programs using them have finished: it
//! names the last such program by its distance in launches
//! (`WaitFlags::WAIT_LAUNCH`), which stays true when a trace replays.

use crate::memory_map::{KERNEL_CONFIG, KERNEL_TEXT, WORKER_LAUNCH};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// First entry of the launch-message ring of queue 0; queue `q`'s ring follows
/// `q` rings later. A worker serves the rings of every queue of the device
/// (their number is in its `mailbox::CQ_CONFIG`, `CqConfig::num_cqs`) in
/// whatever order launches arrive: queues launching on the same cores order
/// their launches with events.
pub const LAUNCH_RING: u32 = WORKER_LAUNCH.base;
/// Entries in the launch-message ring (the dispatcher may be this many
/// launches ahead of the slowest worker).
pub const LAUNCH_RING_ENTRIES: u32 = 8;
// One done semaphore per ring entry (`launch_done_sem`).
const _: () = assert!(crate::semaphore::LAUNCH_DONE + LAUNCH_RING_ENTRIES <= crate::semaphore::COUNT);
/// Bytes of one ring entry (a `LaunchHeader`, `MAX_KERNEL_GROUPS` groups,
/// the tag); a LAUNCH writes whole entries. Every word a worker reads from
/// it is an L1 load on its launch path, so the entry is packed.
pub const LAUNCH_ENTRY_SIZE: u32 = 448;
/// Offset of the tag in an entry: the launch count `n` of the message, u32.
pub const LAUNCH_TAG: u32 = LAUNCH_ENTRY_SIZE - 4;
/// Kernel groups (rectangles) one launch message names. Unused groups have
/// the rectangle `NO_RECT`; a worker stops at the first one.
pub const MAX_KERNEL_GROUPS: usize = 6;

/// Dispatcher semaphore a worker increments (besides `semaphore::WORKERS_DONE`,
/// both on the dispatcher of the queue whose ring held the launch)
/// when it finishes launch `n`: one per ring entry, so the dispatcher knows
/// exactly when every worker is done with the launch that last used an entry,
/// however unevenly workers progress.
pub const fn launch_done_sem(n: u32) -> u32 {
    crate::semaphore::LAUNCH_DONE + n % LAUNCH_RING_ENTRIES
}

/// L1 address of the entry of queue `cq`'s ring holding its launch number `n`.
pub const fn launch_entry(cq: u32, n: u32) -> u32 {
    LAUNCH_RING + (cq * LAUNCH_RING_ENTRIES + n % LAUNCH_RING_ENTRIES) * LAUNCH_ENTRY_SIZE
}

/// Kernel text slots; kernels are linked for slot 0 (`KERNEL_TEXT_ADDR`)
/// and relocated by the host for the others (slots differ by multiples of
/// 4 KiB, so only absolute high parts and words move). The host gives each
/// command queue its own share of the slots and of the kernel-config ring,
/// so a queue only ever waits for its own launches before reusing them.
pub const KERNEL_SLOTS: u32 = 16;
pub const KERNEL_SLOT_SIZE: u32 = KERNEL_TEXT.size / KERNEL_SLOTS;
/// Link address of every kernel (its entry is its first byte).
pub const KERNEL_TEXT_ADDR: u32 = KERNEL_TEXT.base;

/// L1 address of kernel text slot `slot`.
pub const fn kernel_slot(slot: u32) -> u32 {
    KERNEL_TEXT.base + slot * KERNEL_SLOT_SIZE
}

/// Runtime arguments per core (unique) and per kernel (common), in u32 words.
pub const MAX_UNIQUE_ARGS: u32 = 256;
pub const MAX_COMMON_ARGS: u32 = 256;

/// Where the digest `spin` folds its arguments after the third into
/// starts: FNV-1a's offset basis, so that leading zero words count too.
pub const ARGS_DIGEST_BASIS: u32 = 0x811c_9dc5;

/// One step of that digest (FNV-1a over words: each word and its place
/// count, so a lost, changed or moved word changes the digest).
pub const fn args_digest_step(digest: u32, word: u32) -> u32 {
    (digest ^ word).wrapping_mul(0x0100_0193)
}

/// The value `spin` stores for `args` (`[cycles, addr, value, rest...]`):
/// `value` XOR the digest of `rest` (`value` itself when there is no
/// rest), so a kernel that received a word of `rest`, or `value`, wrong
/// stores a wrong value (and one whose `addr` was wrong stores elsewhere).
pub fn spin_stored_value(args: &[u32]) -> Option<u32> {
    let rest = args.get(3..)?;
    if rest.is_empty() {
        return Some(args[2]);
    }
    Some(args[2] ^ rest.iter().fold(ARGS_DIGEST_BASIS, |d, &w| args_digest_step(d, w)))
}

/// The kernel-config ring: runtime arguments, at the same L1 address on
/// every worker; the host allocates it in order and reuses bytes only after
/// the programs reading them have finished.
pub const CONFIG_RING: u32 = KERNEL_CONFIG.base;
pub const CONFIG_RING_SIZE: u32 = KERNEL_CONFIG.size;

/// First 4 bytes of a launch message.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
#[repr(C)]
pub struct LaunchHeader {
    /// Program sequence number, echoed in trace records. A worker reports
    /// launches of queue `q`'s ring to that queue's dispatcher
    /// (`noc_map::NocMap::dispatcher`, semaphores `semaphore::WORKERS_DONE`
    /// and `launch_done_sem`), so the message does not name it.
    pub seq: u32,
}
assert_layout!(LaunchHeader, 4, seq => 0);

/// The kernel one core of a tile runs in a group: its entry (0: none)
/// and where its runtime args are.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
#[repr(C)]
pub struct ProcessorKernel {
    /// Kernel entry (a `kernel_slot` address), or [`NO_KERNEL`].
    pub entry: u32,
    /// Unique args per core and common args, in words (one u32 load: the
    /// low half is `unique_count`), `unique_count` with [`UNIQUE_OWN`] set
    /// when each tile was sent only its own.
    pub unique_count: u16,
    pub common_count: u16,
    /// Where the args are, in words from `CONFIG_RING` (one u32 load: the
    /// low half is `unique_word`). This kernel's unique args are multicast
    /// to the whole rectangle, where tile `i` of it (row-major) finds its
    /// words at `config_addr(unique_word) + 4 * unique_count * i`, or, with
    /// [`UNIQUE_OWN`], written to each tile alone at `config_addr(unique_word)`
    /// ([`unique_args`]); the common args are the same on every tile of the
    /// group.
    pub unique_word: u16,
    pub common_word: u16,
}
assert_layout!(ProcessorKernel, 12, entry => 0, unique_count => 4, common_count => 6, unique_word => 8,
    common_word => 10);

/// Set in `ProcessorKernel::unique_count` when each tile of the group was
/// sent its own unique args alone (one `WRITE_PACKED` with a block a tile,
/// as tt-metal sends unique runtime args: `tt_metal/impl/program/dispatch.cpp`,
/// packed unicast of RTAs), so they take one tile's room in the config ring
/// instead of the whole rectangle's.
pub const UNIQUE_OWN: u16 = 1 << 15;

/// Where tile `index` of a group (row-major) finds a kernel's unique args
/// and how many words they are, from its `ProcessorKernel`'s words at
/// `KERNEL_COUNTS` and `KERNEL_ARGS` (loaded as u32s).
pub const fn unique_args(counts: u32, args: u32, index: u32) -> (u32, u32) {
    let count = counts & (UNIQUE_OWN as u32 - 1);
    let stride = if counts & UNIQUE_OWN as u32 != 0 { 0 } else { 4 * count };
    (config_addr(args as u16) + stride * index, count)
}

/// `ProcessorKernel::entry` of a core that runs no kernel in a group.
pub const NO_KERNEL: u32 = 0;

/// One kernel group: a rectangle of worker tiles and, per core of a tile
/// (`arch::tensix::Processor::ALL` order), the kernel it runs there, if
/// any. BRISC and NCRISC kernels may use the NOC (BRISC NOC0, NCRISC
/// NOC1); TRISC kernels run plain RISC-V code (a NOC access halts the
/// core with `DeviceError::NoNoc`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
#[repr(C)]
pub struct KernelGroup {
    /// Logical worker rectangle, inclusive (`pack_rect`); `NO_RECT` ends the groups.
    pub rect: u32,
    /// Host-chosen kernel identity, echoed in trace records.
    pub kernel_id: u32,
    pub kernels: [ProcessorKernel; 5],
}
assert_layout!(KernelGroup, 68, rect => 0, kernel_id => 4, kernels => 8);

/// The rectangle of unused groups: it contains no core (`c0 > c1`).
pub const NO_RECT: u32 = pack_rect(u8::MAX, u8::MAX, 0, 0);

/// Offset, in a `KernelGroup`, of processor `p`'s `ProcessorKernel`
/// (`arch::tensix::Processor::index`).
pub const fn group_kernel(p: usize) -> u32 {
    core::mem::offset_of!(KernelGroup, kernels) as u32 + (p * core::mem::size_of::<ProcessorKernel>()) as u32
}
/// Offsets, in a `ProcessorKernel`, of the words a worker loads as whole u32s.
pub const KERNEL_ENTRY: u32 = core::mem::offset_of!(ProcessorKernel, entry) as u32;
pub const KERNEL_COUNTS: u32 = core::mem::offset_of!(ProcessorKernel, unique_count) as u32;
pub const KERNEL_ARGS: u32 = core::mem::offset_of!(ProcessorKernel, unique_word) as u32;
/// Offset of the kernel identity in a `KernelGroup`.
pub const GROUP_KERNEL_ID: u32 = core::mem::offset_of!(KernelGroup, kernel_id) as u32;

/// L1 address of config-ring word `word` (`KernelGroup` arg positions).
pub const fn config_addr(word: u16) -> u32 {
    CONFIG_RING + 4 * word as u32
}

/// The config-ring word of L1 address `addr` (inside the ring, 4-aligned).
pub const fn config_word(addr: u32) -> u16 {
    ((addr - CONFIG_RING) / 4) as u16
}

const _: () =
    assert!(group_offset(MAX_KERNEL_GROUPS as u32) <= LAUNCH_TAG && CONFIG_RING_SIZE / 4 <= u16::MAX as u32 + 1);
const _: () = assert!(MAX_UNIQUE_ARGS < UNIQUE_OWN as u32 && MAX_COMMON_ARGS <= u16::MAX as u32);
const _: () = assert!(
    launch_entry(crate::noc::MAX_CQS as u32 - 1, LAUNCH_RING_ENTRIES - 1) + LAUNCH_ENTRY_SIZE <= WORKER_LAUNCH.end()
);
const _: () = assert!(LAUNCH_ENTRY_SIZE % 16 == 0, "launch entries are whole 16-byte L1 lines");
const _: () = assert!(KERNEL_SLOT_SIZE % 4096 == 0 && KERNEL_SLOTS * KERNEL_SLOT_SIZE == KERNEL_TEXT.size);
const _: () = assert!(CONFIG_RING + CONFIG_RING_SIZE <= KERNEL_CONFIG.end());

/// Offset of group `i` in a launch message.
pub const fn group_offset(i: u32) -> u32 {
    core::mem::size_of::<LaunchHeader>() as u32 + core::mem::size_of::<KernelGroup>() as u32 * i
}

/// Packs an inclusive logical rectangle `(c0, r0)..=(c1, r1)`.
pub const fn pack_rect(c0: u8, r0: u8, c1: u8, r1: u8) -> u32 {
    c0 as u32 | (r0 as u32) << 8 | (c1 as u32) << 16 | (r1 as u32) << 24
}

/// Whether logical core `(c, r)` lies in packed rectangle `rect`; if so its
/// row-major index in it.
#[inline]
pub const fn rect_index(rect: u32, c: u8, r: u8) -> Option<u32> {
    let (c0, r0, c1, r1) = (rect as u8, (rect >> 8) as u8, (rect >> 16) as u8, (rect >> 24) as u8);
    if c < c0 || c > c1 || r < r0 || r > r1 {
        return None;
    }
    Some((r - r0) as u32 * (c1 - c0 + 1) as u32 + (c - c0) as u32)
}

/// What the worker firmware hands a kernel (a pointer in `a0`, to the
/// calling core's stack in its local memory).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
#[repr(C)]
pub struct KernelCtx {
    pub seq: u32,
    /// This tile's index in its group's rectangle (row-major).
    pub index: u32,
    /// This tile's own unique args and the group's common args (L1 addresses).
    pub unique_addr: u32,
    pub unique_count: u32,
    pub common_addr: u32,
    pub common_count: u32,
    pub rect: u32,
    pub kernel_id: u32,
    /// The core running the kernel (`arch::tensix::Processor::index`): it
    /// picks the core's NOC (BRISC NOC0, NCRISC NOC1, TRISCs none).
    pub processor: u32,
    pub _reserved: [u32; 3],
}
assert_layout!(KernelCtx, 48, seq => 0, index => 4, unique_addr => 8, unique_count => 12, common_addr => 16,
    common_count => 20, rect => 24, kernel_id => 28, processor => 32);

#[cfg(test)]
mod tests {
    use super::*;
    use zerocopy::IntoBytes;

    /// `spin`'s stored value shows a lost, changed or moved arg word.
    #[test]
    fn the_spin_digest_sees_every_word_and_its_place() {
        let args = [100, 0x1000, 0xabcd, 1, 2, 3, 0, 0];
        let stored = spin_stored_value(&args).unwrap();
        assert_eq!(spin_stored_value(&args[..3]), Some(0xabcd), "no words after the third: the value itself");
        assert_eq!(spin_stored_value(&args[..2]), None);
        for i in 3..args.len() {
            let mut changed = args;
            changed[i] ^= 1 << (i % 32);
            assert_ne!(spin_stored_value(&changed), Some(stored), "word {i} changed");
        }
        let mut swapped = args;
        swapped.swap(3, 4);
        assert_ne!(spin_stored_value(&swapped), Some(stored), "words swapped");
        assert_ne!(spin_stored_value(&args[..7]), Some(stored), "last word lost");
        let leading_zero = [100, 0x1000, 0xabcd, 0, 1, 2, 3, 0, 0];
        assert_ne!(spin_stored_value(&leading_zero), Some(stored), "a zero word in front");
    }

    #[test]
    fn rect_index_is_row_major_and_inclusive() {
        let r = pack_rect(2, 1, 4, 3);
        assert_eq!(rect_index(r, 2, 1), Some(0));
        assert_eq!(rect_index(r, 4, 1), Some(2));
        assert_eq!(rect_index(r, 2, 2), Some(3));
        assert_eq!(rect_index(r, 4, 3), Some(8));
        assert_eq!(rect_index(r, 1, 1), None);
        assert_eq!(rect_index(r, 5, 3), None);
        assert_eq!(rect_index(r, 3, 4), None);
    }

    #[test]
    fn ring_entries_wrap() {
        assert_eq!(launch_entry(0, 0), launch_entry(0, LAUNCH_RING_ENTRIES));
        assert_eq!(launch_entry(0, 1) - launch_entry(0, 0), LAUNCH_ENTRY_SIZE);
        assert_eq!(launch_entry(1, 0), launch_entry(0, LAUNCH_RING_ENTRIES - 1) + LAUNCH_ENTRY_SIZE);
        assert_eq!(kernel_slot(1) - kernel_slot(0), KERNEL_SLOT_SIZE);
    }

    #[test]
    fn unique_args_are_at_the_tiles_place_in_the_block_or_its_own() {
        let counts = |n: u16| (100u32 << 16) | n as u32;
        let args = (9u32 << 16) | 40;
        assert_eq!(unique_args(counts(3), args, 0), (config_addr(40), 3));
        assert_eq!(unique_args(counts(3), args, 5), (config_addr(40) + 4 * 3 * 5, 3));
        assert_eq!(unique_args(counts(3 | UNIQUE_OWN), args, 5), (config_addr(40), 3));
        assert_eq!(unique_args(counts(MAX_UNIQUE_ARGS as u16 | UNIQUE_OWN), args, 7).1, MAX_UNIQUE_ARGS);
    }

    #[test]
    fn packed_group_words_and_config_words() {
        let mut g = KernelGroup { rect: pack_rect(0, 0, 1, 1), kernel_id: 9, ..Default::default() };
        g.kernels[1] = ProcessorKernel {
            entry: kernel_slot(2),
            unique_count: 3,
            common_count: 256,
            unique_word: 7,
            common_word: 0x7fff,
        };
        let word = |at: u32| u32::from_le_bytes(g.as_bytes()[at as usize..at as usize + 4].try_into().unwrap());
        assert_eq!(word(group_kernel(1) + KERNEL_ENTRY), kernel_slot(2));
        assert_eq!(word(group_kernel(1) + KERNEL_COUNTS), 3 | 256 << 16);
        assert_eq!(word(group_kernel(1) + KERNEL_ARGS), 7 | 0x7fff << 16);
        assert_eq!(word(group_kernel(0) + KERNEL_ENTRY), NO_KERNEL);
        assert_eq!(word(GROUP_KERNEL_ID), 9);
        assert!(group_offset(MAX_KERNEL_GROUPS as u32) <= LAUNCH_TAG);
        let last = CONFIG_RING + CONFIG_RING_SIZE - 4;
        assert_eq!(config_addr(config_word(last)), last);
        assert_eq!(rect_index(NO_RECT, 0, 0), None);
        assert_eq!(rect_index(NO_RECT, 255, 255), None);
    }
}
