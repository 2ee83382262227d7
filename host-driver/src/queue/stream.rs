//! A program's dispatch stream: the writes that put its kernel text and
//! runtime args on the workers, the launch message, and their sizes.

use super::program_state::{slot_addr, GroupPlan, Plan};
use super::staging::BlobKey;
use crate::geometry::Topology;
use crate::program::Program;
use cqlab_abi::encode::{DispatchWriter, EncodeError};
use cqlab_abi::noc::{Coord, NocAddr};
use cqlab_abi::program::{
    config_word, pack_rect, KernelGroup, LaunchHeader, ProcessorKernel, LAUNCH_ENTRY_SIZE, MAX_KERNEL_GROUPS, NO_RECT,
    UNIQUE_OWN,
};
use cqlab_abi::size::DispatchSize;
use cqlab_abi::L1_ALIGNMENT;
use std::mem::size_of;
use zerocopy::IntoBytes;

/// A program's dispatch stream as it is sent: the program and its plan, its
/// WAIT (launches back, if any), the rectangle its LAUNCH reaches and the
/// launch message.
#[derive(Clone, Copy)]
pub(super) struct Stream<'a> {
    pub chip: &'a Topology,
    pub program: &'a Program,
    pub plan: &'a Plan,
    pub wait: Option<u32>,
    pub all: NocAddr,
    pub msg: &'a [u8],
}

/// Launch header and groups, as the LAUNCH payload (a whole ring entry; the
/// tag is stamped by whoever sends it). Each distinct rectangle is one
/// group, holding the kernel of each core that runs one there; its kernel
/// id is that of the first kernel placed on it.
pub(super) fn launch_message(seq: u32, program: &Program, plan: &Plan) -> [u8; LAUNCH_ENTRY_SIZE as usize] {
    let mut msg = [0u8; LAUNCH_ENTRY_SIZE as usize];
    let mut at = size_of::<LaunchHeader>();
    msg[..at].copy_from_slice(LaunchHeader { seq }.as_bytes());
    // Args a group has none of have no place in the ring.
    let word = |addr: u32, count: u32| if count == 0 { 0 } else { config_word(addr) };
    let mut groups: Vec<KernelGroup> = Vec::with_capacity(MAX_KERNEL_GROUPS);
    for g in &plan.groups {
        let spec = &program.kernels[g.kernel];
        let r = spec.ranges[g.range];
        let rect = pack_rect(r.start.0, r.start.1, r.end.0, r.end.1);
        let i = match groups.iter().position(|k| k.rect == rect) {
            Some(i) => i,
            None => {
                groups.push(KernelGroup { rect, kernel_id: spec.image.build_id as u32, ..Default::default() });
                groups.len() - 1
            }
        };
        // A compute kernel's three TRISCs run one image and read one set of args.
        for p in spec.processors() {
            groups[i].kernels[p.index()] = ProcessorKernel {
                entry: slot_addr(plan.slots[g.kernel]),
                unique_count: g.unique_count as u16 | if g.unique_own { UNIQUE_OWN } else { 0 },
                common_count: g.common_count as u16,
                unique_word: word(g.unique_addr, g.unique_count),
                common_word: word(g.common_addr, g.common_count),
            };
        }
    }
    for group in &groups {
        msg[at..at + size_of::<KernelGroup>()].copy_from_slice(group.as_bytes());
        at += size_of::<KernelGroup>();
    }
    if groups.len() < MAX_KERNEL_GROUPS {
        let end = KernelGroup { rect: NO_RECT, ..Default::default() };
        msg[at..at + size_of::<KernelGroup>()].copy_from_slice(end.as_bytes());
    }
    msg
}

/// The writes of a program's stream sent inline (`write_program`): those of
/// `program_writes`, with the args of the kernel groups that follow one
/// another on one range in one write (a `WRITE_PACKED` of each core's own
/// where the plan sends unique args so). The plan lays out a range's groups
/// back to back in the kernel-config ring (each group's unique block, then
/// its common args, each 16-byte aligned), so five kernels' args on one
/// rectangle are one multicast instead of ten, as tt-metal sends a kernel
/// group's common args in one (tt-metal `tt_metal/impl/program/dispatch.cpp`,
/// kernel-group CRTA multicast). The gaps are alignment padding of this
/// program's own allocation, written as zeros. A stream too large for one
/// chunk sends the same writes, cut into pieces. A staged stream
/// (`super::staged`) keeps `program_writes`' writes: its large blocks are
/// gathered from their staged copies one by one.
pub(super) fn inline_writes<'a>(
    chip: &'a Topology,
    program: &'a Program,
    plan: &'a Plan,
) -> impl Iterator<Item = (NocAddr, Blob<'a>)> + 'a {
    let text = program_writes(chip, program, plan).take_while(|(_, blob)| matches!(blob, Blob::Image { .. }));
    let groups = &plan.groups[..];
    let rect = |g: &GroupPlan| chip.range_noc(&program.kernels[g.kernel].ranges[g.range], 0);
    let mut i = 0;
    let args = std::iter::from_fn(move || {
        // The next group with args starts a write; each group after it on
        // the same rectangle whose args begin where the write ends joins it.
        let (first, (start, mut end)) = (i..groups.len()).find_map(|j| Some((j, args_extent(program, &groups[j])?)))?;
        let dst = rect(&groups[first]);
        i = first + 1;
        while let Some(g) = groups.get(i) {
            match args_extent(program, g) {
                Some((s, e)) if rect(g) == dst && s == end.next_multiple_of(L1_ALIGNMENT as u32) => end = e,
                _ => break,
            }
            i += 1;
        }
        let run = &groups[first..i];
        let blob = if run.iter().any(|g| g.unique_own) {
            Blob::OwnArgs { groups: run, start, len: (end - start).next_multiple_of(L1_ALIGNMENT as u32) }
        } else {
            Blob::Args { groups: run, start, len: end - start }
        };
        Some((dst.with_local(start as u64), blob))
    });
    text.chain(args)
}

/// The range an `OwnArgs`' groups share.
fn own_range(program: &Program, groups: &[GroupPlan]) -> crate::geometry::CoreRange {
    program.kernels[groups[0].kernel].ranges[groups[0].range]
}

/// Where group `g`'s args lie in the kernel-config ring (first byte, end of
/// its last part), if it has any.
fn args_extent(program: &Program, g: &GroupPlan) -> Option<(u32, u32)> {
    let spec = &program.kernels[g.kernel];
    // A kernel without unique args has no block to measure.
    let unique_len = || if g.unique_own { 4 * g.unique_count } else { spec.unique_block(g.range).len() as u32 };
    let unique = (g.unique_count > 0).then(|| (g.unique_addr, g.unique_addr + unique_len()));
    let common = (g.common_count > 0).then(|| (g.common_addr, g.common_addr + spec.common_bytes().len() as u32));
    match (unique, common) {
        (Some((s, _)), Some((_, e))) => Some((s, e)),
        (one, other) => one.or(other),
    }
}

/// Kernel text, common args and unique args: one multicast each per range.
pub(super) fn write_program(
    w: &mut DispatchWriter<'_>,
    chip: &Topology,
    program: &Program,
    plan: &Plan,
) -> Result<(), EncodeError> {
    for (dst, blob) in inline_writes(chip, program, plan) {
        if let Some(each) = blob.own_block() {
            // Each core's block written in place (no copy beside the stream).
            let dests = blob.dests(chip, program);
            w.write_packed_with(dst.local() as u32, &dests, each as usize, |i, out| blob.write_core(program, i, out))?;
        } else {
            // Written into the stream in place (a binary relocated as it
            // is): one copy.
            w.write_linear_with(dst, blob.len(program), |out| blob.write(program, out))?;
        }
    }
    Ok(())
}

/// The writes of a program's dispatch stream, in order: each uploaded
/// kernel's text to each of its ranges, then per kernel group its common
/// args and its unique-arg block (laid out as the workers read them when
/// they were set), each one multicast, or, where each core is sent its own
/// unique args, one write of each core's args.
pub(super) fn program_writes<'a>(
    chip: &'a Topology,
    program: &'a Program,
    plan: &'a Plan,
) -> impl Iterator<Item = (NocAddr, Blob<'a>)> + 'a {
    let text = plan.slots.iter().enumerate().filter(|(_, c)| c.upload).flat_map(move |(k, choice)| {
        program.kernels[k]
            .ranges
            .iter()
            .map(move |r| (chip.range_noc(r, slot_addr(*choice)), Blob::Image { k, slot: choice.slot }))
    });
    let args = plan.groups.iter().enumerate().flat_map(move |(i, g)| {
        let spec = &program.kernels[g.kernel];
        let range = spec.ranges[g.range];
        // Each core's own args: one write of its unique and common args.
        let own = g.unique_own.then(|| {
            let (start, end) = args_extent(program, g).expect("a group with unique args");
            let len = (end - start).next_multiple_of(L1_ALIGNMENT as u32);
            (chip.range_noc(&range, start), Blob::OwnArgs { groups: &plan.groups[i..=i], start, len })
        });
        let common = (!g.unique_own && g.common_count > 0)
            .then(|| (chip.range_noc(&range, g.common_addr), Blob::Bytes(spec.common_bytes())));
        let unique = (!g.unique_own && g.unique_count > 0)
            .then(|| (chip.range_noc(&range, g.unique_addr), Blob::Unique { k: g.kernel, range: g.range }));
        own.into_iter().chain(common).chain(unique)
    });
    text.chain(args)
}

/// A write of a program's stream: what its bytes are.
#[derive(Clone, Copy)]
pub(super) enum Blob<'a> {
    /// Kernel `k`'s binary, relocated for text slot `slot`.
    Image {
        k: usize,
        slot: u32,
    },
    /// Kernel `k`'s unique-arg block for range `range`.
    Unique {
        k: usize,
        range: usize,
    },
    Bytes(&'a [u8]),
    /// The args of consecutive kernel groups on one range, `len` bytes of
    /// the kernel-config ring from `start` (`inline_writes`).
    Args {
        groups: &'a [GroupPlan],
        start: u32,
        len: u32,
    },
    /// The same for groups one of which at least sends each core its own
    /// unique args: each core of their range (row-major) its own `len`
    /// bytes (a multiple of 16), one block after another, as a
    /// `WRITE_PACKED` carries them.
    OwnArgs {
        groups: &'a [GroupPlan],
        start: u32,
        len: u32,
    },
}

impl Blob<'_> {
    /// What names its staged copy (`None`: never staged).
    pub(super) fn key(&self, program: &Program) -> Option<BlobKey> {
        match *self {
            Blob::Image { k, slot } => {
                let image = &program.kernels[k].image;
                Some(BlobKey::Image { build_id: image.build_id, slot, len: image.len() })
            }
            Blob::Unique { k, range } => Some(BlobKey::UniqueArgs { stamp: program.kernels[k].unique_stamp(), range }),
            Blob::Bytes(_) | Blob::Args { .. } | Blob::OwnArgs { .. } => None,
        }
    }

    /// The bytes each core gets, if each gets its own (`OwnArgs`).
    pub(super) fn own_block(&self) -> Option<u32> {
        match *self {
            Blob::OwnArgs { len, .. } => Some(len),
            _ => None,
        }
    }

    /// The cores an `OwnArgs` goes to, in the order of its blocks (none for
    /// any other blob).
    pub(super) fn dests(&self, chip: &Topology, program: &Program) -> Vec<Coord> {
        let Blob::OwnArgs { groups, .. } = *self else { return Vec::new() };
        own_range(program, groups)
            .cores()
            .map(|(c, r)| chip.worker(c, r).expect("a range checked against the grid"))
            .collect()
    }

    pub(super) fn len(&self, program: &Program) -> u32 {
        match *self {
            Blob::Image { k, .. } => program.kernels[k].image.len(),
            Blob::Unique { k, range } => program.kernels[k].unique_block(range).len() as u32,
            Blob::Bytes(b) => b.len() as u32,
            Blob::Args { len, .. } => len,
            Blob::OwnArgs { groups, len, .. } => len * own_range(program, groups).count(),
        }
    }

    /// Writes its bytes into `out` (exactly `len` bytes).
    pub(super) fn write(&self, program: &Program, out: &mut [u8]) {
        match *self {
            Blob::Image { k, slot } => program.kernels[k].image.write_for_slot(slot, out),
            Blob::Unique { k, range } => out.copy_from_slice(program.kernels[k].unique_block(range)),
            Blob::Bytes(b) => out.copy_from_slice(b),
            Blob::Args { groups, start, .. } => {
                out.fill(0);
                for g in groups {
                    let spec = &program.kernels[g.kernel];
                    // A kernel without unique args has no block to borrow.
                    if g.unique_count > 0 {
                        let (at, bytes) = ((g.unique_addr - start) as usize, spec.unique_block(g.range));
                        out[at..at + bytes.len()].copy_from_slice(bytes);
                    }
                    if g.common_count > 0 {
                        let (at, bytes) = ((g.common_addr - start) as usize, spec.common_bytes());
                        out[at..at + bytes.len()].copy_from_slice(bytes);
                    }
                }
            }
            Blob::OwnArgs { len, .. } => {
                for (i, block) in out.chunks_exact_mut(len as usize).enumerate() {
                    block.fill(0);
                    self.write_core(program, i, block);
                }
            }
        }
    }

    /// Core `i`'s block of an `OwnArgs` into `block` (zeroed, `len` bytes);
    /// nothing for any other blob.
    pub(super) fn write_core(&self, program: &Program, i: usize, block: &mut [u8]) {
        let Blob::OwnArgs { groups, start, .. } = *self else { return };
        for g in groups {
            let spec = &program.kernels[g.kernel];
            if g.unique_count > 0 {
                let (at, bytes) = ((g.unique_addr - start) as usize, spec.unique_of(g.range, i));
                block[at..at + bytes.len()].copy_from_slice(bytes);
            }
            if g.common_count > 0 {
                let (at, bytes) = ((g.common_addr - start) as usize, spec.common_bytes());
                block[at..at + bytes.len()].copy_from_slice(bytes);
            }
        }
    }
}

/// The dispatch commands of a program's one-chunk stream: its WAIT (if
/// any), its writes, its LAUNCH of a `msg`-byte message.
pub(super) fn stream_size(chip: &Topology, program: &Program, plan: &Plan, wait: bool, msg: usize) -> DispatchSize {
    let start = if wait { DispatchSize::new().wait() } else { DispatchSize::new() };
    inline_writes(chip, program, plan)
        .fold(start, |s, (_, blob)| match blob {
            Blob::OwnArgs { groups, len, .. } => {
                s.write_packed(own_range(program, groups).count() as usize, len as usize, false)
            }
            _ => s.write_linear(blob.len(program) as usize),
        })
        .launch(msg)
}
