//! `CommandQueue::enqueue_program`: one chunk per program. It waits (one
//! WAIT for a launch, named by its distance back) only when the program
//! reuses a kernel text slot or config ring bytes that one of the last
//! `LAUNCH_RING_ENTRIES` programs may still use, and the dispatcher's LAUNCH
//! waits for the launch that last used its ring entry; otherwise the
//! dispatcher writes kernel text, args and the launch message ahead while
//! earlier programs run, and the LAUNCH's multicast starts the workers.
//! Large binaries and arg blocks are staged in sysmem and gathered into
//! the chunk by the prefetcher (`super::staged`) rather than copied.

use super::mutant::mutant;
use super::ops::CommandQueue;
use super::program_state::{slot_addr, SlotChoice};
use super::stream::{inline_writes, launch_message, stream_size, write_program, Blob, Stream};
use super::trace::Resident;
use crate::error::Result;
use crate::program::Program;
use cqlab_abi::dispatch::WaitFlags;
use cqlab_abi::noc::{Coord, NocAddr};
use cqlab_abi::program::LAUNCH_RING_ENTRIES;
use cqlab_abi::size::{self, ChunkSize, DispatchSize};
use std::borrow::Cow;

/// How far back a program's WAIT reaches when it needs one at all: the
/// launch three back has finished by the time the dispatcher writes a
/// program's args unless kernels run longer than three programs' dispatch,
/// and then the dispatcher is ahead of the workers anyway.
const WAIT_REACH: u64 = 3;

impl CommandQueue<'_> {
    /// Enqueues `program`: its kernels (sent only when not already resident
    /// in the slot chosen for them), runtime args and launch. Returns at once
    /// (fast dispatch) or once it has been started (slow dispatch); inside a
    /// trace capture it is recorded.
    pub fn enqueue_program(&mut self, program: &Program) -> Result<()> {
        let chip = self.chip;
        program.check(chip)?;
        // What one chunk can carry at most (the driver refuses larger).
        let limit = self.host().layout.issue_size.min(cqlab_abi::memory_map::MAX_CHUNK) as usize;
        let stage_min = if self.cfg.slow_dispatch { 0 } else { self.stage_min(limit) };
        let plan = self.host().programs.plan(program, stage_min)?;
        let grid = chip.worker_count();
        if self.cfg.slow_dispatch {
            return self.slow_program(program, &plan, grid);
        }
        // Mutant: the WAIT reaches one launch short of the last user.
        let wait_for = plan.wait_for.saturating_sub(mutant!(self.cfg, "host-config-wait-one-short") as u64);
        let host = self.host();
        let number = host.program_launches + 1;
        // The last program using what this one overwrites, by its distance
        // back; further back than the launch ring it has finished already.
        let back = number - wait_for;
        let needed = wait_for > host.waited_launch && back <= LAUNCH_RING_ENTRIES as u64;
        // A WAIT that must be sent anyway reaches `WAIT_REACH` launches back
        // when that is later than needed, so the next programs, which reuse
        // what the following launches used, find it already waited for: a
        // WAIT every few programs instead of one each (each costs the
        // dispatcher a command) when every program reuses config-ring bytes.
        let waited = if needed { wait_for.max(number.saturating_sub(WAIT_REACH)) } else { wait_for };
        let wait = needed.then_some((number - waited) as u32);
        // In a capture, a wait for the launch before the replay is made by
        // the replay itself, before the trace (see `super::capture`).
        let waits_before =
            host.capture.as_ref().is_some_and(|c| plan.wait_for == c.before && back <= LAUNCH_RING_ENTRIES as u64);
        // Seqs are unique across queues: a kernel trace record names its launch.
        let seq = self.queues.next_launch_seq;
        let msg = launch_message(seq, program, &plan);
        let all = chip.range_noc(&chip.grid(), 0);
        let size = ChunkSize::new().relay_inline(stream_size(chip, program, &plan, wait.is_some(), msg.len())).bytes();
        let stream = Stream { chip, program, plan: &plan, wait, all, msg: &msg };
        if self.submit_program_staged(stream, limit, stage_min)? {
            // Sent, its large blobs by reference.
        } else if size <= limit {
            self.submit_with(size, |e| {
                e.relay_inline(true, |w| {
                    if let Some(back) = wait {
                        w.wait(WaitFlags::WAIT_LAUNCH, 0, back)?;
                    }
                    write_program(w, chip, program, &plan)?;
                    w.launch(all, &msg)
                })
            })?;
        } else {
            self.submit_program_in_chunks(stream, limit)?;
        }
        let host = self.host();
        if let Some(capture) = &mut host.capture {
            capture.waits_before |= waits_before;
            // Kernels the capture found resident from before it began: a
            // replay checks they still are.
            for (k, choice) in plan.slots.iter().enumerate() {
                if !choice.upload && capture.saved.0.holds_kernel(choice.slot, program, k) {
                    let spec = &program.kernels[k];
                    let known = capture.relies.iter().any(|r| {
                        let kr = &r.kernel.kernels[0];
                        r.slot == choice.slot && kr.image.build_id == spec.image.build_id && kr.ranges == spec.ranges
                    });
                    if !known {
                        let mut kernel = Program::new();
                        kernel.add_kernel(spec.image.clone(), &spec.ranges)?;
                        capture.relies.push(Resident { slot: choice.slot, kernel });
                    }
                }
            }
        }
        host.workers_outstanding += grid;
        host.waited_launch = host.waited_launch.max(waited);
        host.program_launches = number;
        host.programs.commit(program, &plan, number);
        self.queues.next_launch_seq = seq.wrapping_add(1);
        Ok(())
    }

    /// A program whose commands do not fit one chunk of `limit` bytes (the
    /// unique args of a large range, say 256 cores x 54 words): its dispatch
    /// stream goes out in several chunks of one RELAY_INLINE each, the WAIT
    /// first, every write cut into writes of at most a chunk's payload at
    /// successive offsets, the LAUNCH last (the writes of the one-chunk
    /// stream: a range's args in one). The dispatcher reads one
    /// stream: where chunks end means nothing to it, and nothing else
    /// enters this queue's stream in between.
    fn submit_program_in_chunks(&mut self, stream: Stream<'_>, limit: usize) -> Result<()> {
        let Stream { chip, program, plan, wait, all, msg } = stream;
        let launch = DispatchSize::new().launch(msg.len()).bytes();
        // Dispatch bytes per chunk: the usual payload, enough for the
        // LAUNCH alone, within the chunk limit.
        let max = self.max_inline().max(launch).min(size::relay_inline_room(limit));
        let first = if wait.is_some() { DispatchSize::new().wait() } else { DispatchSize::new() };
        // The first chunk holds its WAIT and one piece of a write at least.
        let piece = max.saturating_sub(first.header().bytes()) & !15;
        if piece == 0 || max < launch {
            return Err(crate::error::DriverError::Invalid(format!(
                "a program needs chunks of {} dispatch bytes; this queue's issue queue carries {max}",
                first.write_linear(16).bytes().max(launch)
            )));
        }
        // The writes of the one-chunk stream (a range's args in one).
        let blobs: Vec<(NocAddr, Blob<'_>)> = inline_writes(chip, program, plan).collect();
        let mut images: Vec<Option<Vec<u8>>> = vec![None; program.kernels.len()];
        for (_, blob) in &blobs {
            if let Blob::Image { k, slot } = *blob {
                images[k].get_or_insert_with(|| program.kernels[k].image.for_slot(slot));
            }
        }
        // Bytes made once for the writes cut at offsets: an image relocated
        // for its slot once however many ranges it goes to, a range's args
        // gathered. A write of each core's own args is written in place,
        // core by core, when its chunk is encoded.
        let bytes: Vec<Option<Cow<'_, [u8]>>> = blobs
            .iter()
            .map(|&(_, blob)| match blob {
                Blob::Image { k, .. } => Some(Cow::Borrowed(images[k].as_deref().expect("relocated above"))),
                Blob::OwnArgs { .. } => None,
                _ => {
                    let mut bytes = vec![0u8; blob.len(program) as usize];
                    blob.write(program, &mut bytes);
                    Some(Cow::Owned(bytes))
                }
            })
            .collect();
        let dests: Vec<Vec<Coord>> = blobs.iter().map(|(_, blob)| blob.dests(chip, program)).collect();
        // A write of every core's own bytes is cut between cores, the others
        // at successive offsets.
        let mut pieces: Vec<Piece<'_, '_>> = Vec::new();
        for (k, &(dst, blob)) in blobs.iter().enumerate() {
            let Some(each) = blob.own_block() else {
                let whole = bytes[k].as_deref().expect("made above");
                let parts = whole.chunks(piece).enumerate();
                pieces.extend(parts.map(|(i, part)| Piece::Linear(dst.offset((i * piece) as u64), part)));
                continue;
            };
            let each = each as usize;
            let fits = |n: usize| first.write_packed(n, each, false).bytes() <= max;
            let per = (1..=dests[k].len()).take_while(|&n| fits(n)).last().ok_or_else(|| {
                crate::error::DriverError::Invalid(format!(
                    "a core's {each} bytes of runtime args do not fit this queue's {max}-byte chunks"
                ))
            })?;
            pieces.extend(dests[k].chunks(per).enumerate().map(|(c, dests)| Piece::Packed {
                addr: dst.local() as u32,
                dests,
                from: c * per,
                each,
                blob,
            }));
        }
        let (mut next, mut first_chunk) = (0, true);
        loop {
            // As many writes as fit after the WAIT (first chunk only), then
            // the LAUNCH if it fits too.
            let mut payload = if first_chunk { first } else { DispatchSize::new() };
            let start = next;
            while next < pieces.len() && pieces[next].after(payload).bytes() <= max {
                payload = pieces[next].after(payload);
                next += 1;
            }
            let last = next == pieces.len() && payload.launch(msg.len()).bytes() <= max;
            if last {
                payload = payload.launch(msg.len());
            }
            let batch = &pieces[start..next];
            let first_wait = if first_chunk { wait } else { None };
            self.submit_with(ChunkSize::new().relay_inline(payload).bytes(), |e| {
                e.relay_inline(true, |w| {
                    if let Some(back) = first_wait {
                        w.wait(WaitFlags::WAIT_LAUNCH, 0, back)?;
                    }
                    for p in batch {
                        match *p {
                            Piece::Linear(dst, bytes) => w.write_linear(dst, bytes)?,
                            Piece::Packed { addr, dests, from, each, blob } => {
                                w.write_packed_with(addr, dests, each, |i, out| {
                                    blob.write_core(program, from + i, out)
                                })?
                            }
                        }
                    }
                    if last {
                        w.launch(all, msg)?;
                    }
                    Ok(())
                })
            })?;
            if last {
                return Ok(());
            }
            first_chunk = false;
        }
    }

    /// Sends kernel `r` into its text slot unless the workers hold it there
    /// (a replay whose trace relied on it), once the programs that last ran
    /// from that slot there have finished.
    pub(super) fn ensure_resident(&mut self, r: &Resident) -> Result<()> {
        let host = self.host();
        if host.programs.holds_kernel(r.slot, &r.kernel, 0) {
            return Ok(());
        }
        let wait_for = host.programs.upload_wait(r.slot, &r.kernel, 0);
        // By distance from the next launch, as a program's own WAIT.
        let back = host.program_launches + 1 - wait_for;
        let wait = (wait_for > host.waited_launch && back <= LAUNCH_RING_ENTRIES as u64).then_some(back as u32);
        let spec = &r.kernel.kernels[0];
        let choice = SlotChoice { slot: r.slot, upload: true };
        let text = DispatchSize::times(DispatchSize::new().write_linear(spec.image.len() as usize), spec.ranges.len());
        let payload = if wait.is_some() { DispatchSize::new().wait().then(text) } else { text };
        self.submit_with(ChunkSize::new().relay_inline(payload).bytes(), |e| {
            e.relay_inline(true, |w| {
                if let Some(back) = wait {
                    w.wait(WaitFlags::WAIT_LAUNCH, 0, back)?;
                }
                for range in &spec.ranges {
                    w.write_linear_with(self.chip.range_noc(range, slot_addr(choice)), spec.image.len(), |out| {
                        spec.image.write_for_slot(r.slot, out)
                    })?;
                }
                Ok(())
            })
        })?;
        let host = self.host();
        host.waited_launch = host.waited_launch.max(wait_for);
        host.programs.commit_upload(r.slot, &r.kernel, 0);
        Ok(())
    }
}

/// One dispatch command of a program sent in chunks: a piece of a write.
enum Piece<'b, 'p> {
    Linear(NocAddr, &'b [u8]),
    /// Each of `dests`, cores `from..` of `blob` (an `OwnArgs`), its own
    /// `each` bytes at L1 `addr`.
    Packed {
        addr: u32,
        dests: &'b [Coord],
        from: usize,
        each: usize,
        blob: Blob<'p>,
    },
}

impl Piece<'_, '_> {
    /// `payload` followed by this command.
    fn after(&self, payload: DispatchSize) -> DispatchSize {
        match *self {
            Piece::Linear(_, bytes) => payload.write_linear(bytes.len()),
            Piece::Packed { dests, each, .. } => payload.write_packed(dests.len(), each, false),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geometry::{CoreRange, Topology};
    use crate::kernel::KernelImage;
    use crate::queue::program_state::ProgramState;
    use crate::queue::stream::program_writes;
    use cqlab_abi::arch::tensix::Processor;
    use cqlab_abi::program::{KernelGroup, LaunchHeader, NO_KERNEL, NO_RECT};
    use std::sync::Arc;
    use zerocopy::FromBytes;

    #[test]
    fn a_program_stream_is_sized_exactly() {
        let chip = Topology::for_board(cqlab_abi::soc::Board::BlackholeP150a, None, 1).unwrap();
        let mut p = Program::new();
        let k = p.add_kernel(Arc::new(KernelImage::test_image("k")), &[CoreRange::new((0, 0), (1, 1))]).unwrap();
        p.set_common_args(k, &[1, 2, 3]).unwrap();
        p.set_unique_args(k, (1, 1), &[7]).unwrap();
        let plan = ProgramState::new(cqlab_abi::arch::Arch::Wormhole, 8, 8, 0, 1).plan(&p, 0).unwrap();
        let msg = launch_message(0, &p, &plan);
        for wait in [false, true] {
            let size = ChunkSize::new().relay_inline(stream_size(&chip, &p, &plan, wait, msg.len())).bytes();
            let c = super::super::issue::chunk(size, |e| {
                e.relay_inline(true, |w| {
                    if wait {
                        w.wait(WaitFlags::WAIT_LAUNCH, 0, 1)?;
                    }
                    write_program(w, &chip, &p, &plan)?;
                    w.launch(chip.range_noc(&chip.grid(), 0), &msg)
                })
            })
            .unwrap();
            assert_eq!(c.len(), size);
        }
        assert_eq!(program_writes(&chip, &p, &plan).count(), 3, "text, common args, unique args");
    }

    /// The args of five kernels on one rectangle (one kernel without unique
    /// args, one without common args) go inline as one write, whose bytes
    /// put every block where the separate writes of a staged stream put it;
    /// the rest of it is alignment padding, zero.
    #[test]
    fn a_rectangles_args_for_five_kernels_are_one_inline_write() {
        use crate::queue::stream::{inline_writes, Blob};
        let chip = Topology::for_board(cqlab_abi::soc::Board::BlackholeP150a, None, 1).unwrap();
        let r = CoreRange::new((0, 0), (1, 1));
        let mut p = Program::new();
        for (i, &processor) in Processor::ALL.iter().enumerate() {
            let k = p.add_kernel_on(Arc::new(KernelImage::test_image(&format!("k{i}"))), &[r], processor).unwrap();
            if i != 2 {
                p.set_common_args(k, &vec![100 + i as u32; i + 1]).unwrap();
            }
            if i != 3 {
                for (c, row) in r.cores() {
                    p.set_unique_args(k, (c, row), &[i as u32, c as u32, row as u32]).unwrap();
                }
            }
        }
        let plan = ProgramState::new(cqlab_abi::arch::Arch::Wormhole, 8, 8, 0, 1).plan(&p, 0).unwrap();
        let args = |writes: Vec<(NocAddr, Blob<'_>)>| -> Vec<(NocAddr, Vec<u8>)> {
            let args = writes.into_iter().filter(|(_, b)| !matches!(b, Blob::Image { .. }));
            args.map(|(dst, b)| {
                let mut out = vec![0; b.len(&p) as usize];
                b.write(&p, &mut out);
                (dst, out)
            })
            .collect()
        };
        let merged = args(inline_writes(&chip, &p, &plan).collect());
        let apart = args(program_writes(&chip, &p, &plan).collect());
        assert_eq!((merged.len(), apart.len()), (1, 8), "one write for eight blocks");
        let (dst, bytes) = &merged[0];
        let mut covered = vec![false; bytes.len()];
        for (d, b) in &apart {
            assert_eq!(d.with_local(0), dst.with_local(0), "one rectangle");
            let at = (d.local() - dst.local()) as usize;
            assert_eq!(&bytes[at..at + b.len()], &b[..], "the block for {:#x}", d.local());
            covered[at..at + b.len()].iter_mut().for_each(|c| *c = true);
        }
        assert!(bytes.iter().zip(&covered).all(|(&v, &c)| c || v == 0), "padding is zero");
    }

    /// Kernels on BRISC and NCRISC of one rectangle go in one kernel group,
    /// each core's entry and args in its own slot of the group.
    #[test]
    fn kernels_of_one_rectangle_share_a_launch_group() {
        let r = CoreRange::new((0, 0), (1, 1));
        let mut p = Program::new();
        let a = p.add_kernel(Arc::new(KernelImage::test_image("a")), &[r]).unwrap();
        let b = p.add_kernel_on(Arc::new(KernelImage::test_image("b")), &[r], Processor::Ncrisc).unwrap();
        p.add_kernel_on(Arc::new(KernelImage::test_image("c")), &[CoreRange::single(3, 3)], Processor::Trisc2).unwrap();
        p.set_common_args(a, &[1]).unwrap();
        p.set_common_args(b, &[2, 3]).unwrap();
        let plan = ProgramState::new(cqlab_abi::arch::Arch::Wormhole, 8, 8, 0, 1).plan(&p, 0).unwrap();
        let msg = launch_message(7, &p, &plan);
        let group = |i: u32| {
            let at = cqlab_abi::program::group_offset(i) as usize;
            KernelGroup::read_from_bytes(&msg[at..at + std::mem::size_of::<KernelGroup>()]).unwrap()
        };
        assert_eq!(LaunchHeader::read_from_prefix(&msg).unwrap().0.seq, 7);
        let g = group(0);
        assert_eq!(g.rect, cqlab_abi::program::pack_rect(0, 0, 1, 1));
        assert_eq!(g.kernels[0].entry, slot_addr(plan.slots[0]));
        assert_eq!(g.kernels[1].entry, slot_addr(plan.slots[1]));
        assert_eq!((g.kernels[0].common_count, g.kernels[1].common_count), (1, 2));
        assert!(g.kernels[2..].iter().all(|k| k.entry == NO_KERNEL));
        let g = group(1);
        assert_eq!(g.rect, cqlab_abi::program::pack_rect(3, 3, 3, 3));
        assert_eq!(g.kernels[4].entry, slot_addr(plan.slots[2]));
        assert!(g.kernels[..4].iter().all(|k| k.entry == NO_KERNEL));
        assert_eq!(group(2).rect, NO_RECT);
    }

    /// A compute kernel's three TRISCs run its image from one slot and read
    /// one set of args: its args take the ring's room once, and each
    /// TRISC's entry in the launch group names the same words.
    #[test]
    fn a_compute_kernels_triscs_share_its_text_and_args() {
        let r = CoreRange::new((0, 0), (1, 1));
        let mut p = Program::new();
        let dm = p.add_kernel(Arc::new(KernelImage::test_image("dm")), &[r]).unwrap();
        let compute = p.add_compute_kernel(Arc::new(KernelImage::test_image("compute")), &[r]).unwrap();
        for k in [dm, compute] {
            p.set_common_args(k, &[1, 2]).unwrap();
            for core in r.cores() {
                p.set_unique_args(k, core, &[3, 4, 5]).unwrap();
            }
        }
        let plan = ProgramState::new(cqlab_abi::arch::Arch::Wormhole, 8, 8, 0, 1).plan(&p, 0).unwrap();
        assert_eq!((plan.slots.len(), plan.groups.len()), (2, 2), "one text slot and one arg plan a kernel");
        let msg = launch_message(1, &p, &plan);
        let at = cqlab_abi::program::group_offset(0) as usize;
        let g = KernelGroup::read_from_bytes(&msg[at..at + std::mem::size_of::<KernelGroup>()]).unwrap();
        assert_eq!(g.kernels[Processor::Ncrisc.index()].entry, NO_KERNEL);
        let brisc = g.kernels[Processor::Brisc.index()];
        let [t0, t1, t2] = Processor::COMPUTE.map(|t| g.kernels[t.index()]);
        assert_eq!((t0, t1), (t2, t2), "the three TRISCs' entries are one");
        assert_eq!(t0.entry, slot_addr(plan.slots[1]));
        assert_eq!((t0.unique_count, t0.common_count), (3, 2));
        assert_ne!((t0.unique_word, t0.common_word), (brisc.unique_word, brisc.common_word), "its own args");
        let chip = Topology::for_board(cqlab_abi::soc::Board::BlackholeP150a, None, 1).unwrap();
        assert_eq!(program_writes(&chip, &p, &plan).count(), 6, "two kernels' text, common args and unique args");
    }
}
