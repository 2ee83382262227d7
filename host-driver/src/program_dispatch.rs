//! `CommandQueue::enqueue_program`: one chunk per program. It waits (one
//! WAIT for a launch, named by its distance back) only when the program
//! reuses a kernel text slot or config ring bytes that one of the last
//! `LAUNCH_RING_ENTRIES` programs may still use, and the dispatcher's LAUNCH
//! waits for the launch that last used its ring entry; otherwise the
//! dispatcher writes kernel text, args and the launch message ahead while
//! earlier programs run, and the LAUNCH's multicast starts the workers.
//! Large binaries and arg blocks are staged in sysmem and gathered into
//! the chunk by the prefetcher (`crate::staging`) rather than copied.

use crate::command_queue::{CommandQueue, Resident};
use crate::error::{DriverError, Result};
use crate::program::Program;
use crate::program_state::{slot_addr, Plan, ProgramState, SlotChoice};
use crate::staging::{BlobKey, Placed};
use cqlab_abi::dispatch::WaitFlags;
use cqlab_abi::encode::{DispatchWriter, EncodeError, Encoder};
use cqlab_abi::noc::{self, NocAddr};
use cqlab_abi::program::{
    config_word, launch_entry, pack_rect, KernelGroup, LaunchHeader, LAUNCH_ENTRY_SIZE, LAUNCH_RING_ENTRIES,
    LAUNCH_TAG, MAX_KERNEL_GROUPS, NO_RECT,
};
use std::mem::size_of;
use zerocopy::IntoBytes;

impl CommandQueue<'_> {
    /// Enqueues `program`: its kernels (sent only when not already resident
    /// in the slot chosen for them), runtime args and launch. Returns at once
    /// (fast dispatch) or once it has been started (slow dispatch); inside a
    /// trace capture it is recorded.
    pub fn enqueue_program(&mut self, program: &Program) -> Result<()> {
        let (cols, rows) = (self.dev.cfg.worker_cols, self.dev.cfg.worker_rows);
        program.check_grid(cols, rows)?;
        let plan = self.dev.programs[self.q as usize].plan(program).map_err(DriverError::Invalid)?;
        let grid = cols as u32 * rows as u32;
        if self.dev.cfg.slow_dispatch {
            return self.slow_program(program, &plan, grid);
        }
        let host = &self.dev.cqs[self.q as usize];
        let number = host.program_launches + 1;
        // The last program using what this one overwrites, by its distance
        // back; further back than the launch ring it has finished already.
        let back = number - plan.wait_for;
        let needed = plan.wait_for > host.waited_launch && back <= LAUNCH_RING_ENTRIES as u64;
        // A WAIT that must be sent anyway reaches `WAIT_REACH` launches back
        // when that is later than needed, so the next programs, which reuse
        // what the following launches used, find it already waited for: a
        // WAIT every few programs instead of one each (each costs the
        // dispatcher a command) when every program reuses config-ring bytes.
        let waited = if needed { plan.wait_for.max(number.saturating_sub(WAIT_REACH)) } else { plan.wait_for };
        let wait = needed.then_some((number - waited) as u32);
        // In a capture, a wait for the launch before the replay is made by
        // the replay itself, before the trace (`begin_trace`).
        let waits_before =
            host.capture.is_some() && plan.wait_for == host.capture_before && back <= LAUNCH_RING_ENTRIES as u64;
        // Seqs are unique across queues: a kernel trace record names its launch.
        let seq = self.dev.next_launch_seq;
        let msg = launch_message(seq, program, &plan);
        let all = grid_noc(cols, rows);
        let capacity = chunk_capacity(program, &plan, msg.len());
        let q = self.q;
        // What one chunk can carry at most (the driver refuses larger).
        let limit = self.dev.cqs[q as usize].layout.issue_size.min(cqlab_abi::memory_map::MAX_CHUNK) as usize;
        if self.submit_program_staged(program, &plan, wait, all, &msg, limit)? {
            // Sent, its large blobs by reference.
        } else if capacity <= limit {
            self.dev.submit_with(q, capacity, |e| {
                e.relay_inline(true, |w| {
                    if let Some(back) = wait {
                        w.wait(WaitFlags::WAIT_LAUNCH, 0, back)?;
                    }
                    write_program(w, program, &plan)?;
                    w.launch(all, &msg)
                })
            })?;
        } else {
            // Chunks of the usual payload, enough for the LAUNCH alone.
            let max = self.max_inline().max(16 + msg.len() + 64).min(limit.saturating_sub(128));
            self.submit_program_in_chunks(program, &plan, wait, all, &msg, max)?;
        }
        let host = &mut self.dev.cqs[self.q as usize];
        host.capture_waits_before |= waits_before;
        if let Some((before_capture, ..)) = &host.capture_saved {
            // Kernels the capture found resident from before it began: a
            // replay checks they still are.
            for (k, choice) in plan.slots.iter().enumerate() {
                if !choice.upload && before_capture.holds_kernel(choice.slot, program, k) {
                    let spec = &program.kernels[k];
                    let known = host.capture_relies.iter().any(|r| {
                        let kr = &r.kernel.kernels[0];
                        r.slot == choice.slot && kr.image.build_id == spec.image.build_id && kr.ranges == spec.ranges
                    });
                    if !known {
                        let mut kernel = Program::new();
                        kernel.add_kernel(spec.image.clone(), &spec.ranges).map_err(|e| {
                            DriverError::Invalid(format!("kernel {} of a captured program: {e}", spec.image.name))
                        })?;
                        host.capture_relies.push(Resident { slot: choice.slot, kernel });
                    }
                }
            }
        }
        host.workers_outstanding += grid;
        host.waited_launch = host.waited_launch.max(waited);
        host.program_launches = number;
        self.dev.programs[self.q as usize].commit(program, &plan, number);
        self.dev.next_launch_seq = seq.wrapping_add(1);
        Ok(())
    }

    /// A program whose commands do not fit one chunk (the unique args of a
    /// large range, say 256 cores x 54 words): its dispatch stream goes out
    /// in several chunks of one RELAY_INLINE each, the WAIT first, every
    /// write cut into writes of at most a chunk's payload at successive
    /// offsets, the LAUNCH last. The dispatcher reads one stream: where
    /// chunks end means nothing to it, and nothing else enters this
    /// queue's stream in between.
    fn submit_program_in_chunks(
        &mut self,
        program: &Program,
        plan: &Plan,
        wait: Option<u32>,
        all: NocAddr,
        msg: &[u8],
        max: usize,
    ) -> Result<()> {
        const HEADER: usize = 16;
        let launch = HEADER + msg.len().next_multiple_of(16);
        if max < 4 * HEADER + launch {
            return Err(DriverError::Invalid(format!(
                "a program needs chunks of {} bytes; this queue's issue queue carries {max}",
                4 * HEADER + launch
            )));
        }
        let piece = (max - 4 * HEADER) & !15;
        // Each uploaded image relocated once, for its slot.
        let images: Vec<Option<Vec<u8>>> = plan
            .slots
            .iter()
            .enumerate()
            .map(|(k, choice)| choice.upload.then(|| program.kernels[k].image.for_slot(choice.slot)))
            .collect();
        let mut writes: Vec<(NocAddr, &[u8])> = Vec::new();
        for (k, image) in images.iter().enumerate() {
            if let Some(image) = image {
                for range in &program.kernels[k].ranges {
                    writes.push((range.noc(slot_addr(plan.slots[k])), image));
                }
            }
        }
        for g in &plan.groups {
            let spec = &program.kernels[g.kernel];
            let range = spec.ranges[g.range];
            if g.common_count > 0 {
                writes.push((range.noc(g.common_addr), spec.common_bytes()));
            }
            if g.unique_count > 0 {
                writes.push((range.noc(g.unique_addr), spec.unique_block(g.range)));
            }
        }
        let pieces: Vec<(NocAddr, &[u8])> = writes
            .iter()
            .flat_map(|(dst, bytes)| {
                bytes.chunks(piece).enumerate().map(move |(i, part)| (dst.offset((i * piece) as u64), part))
            })
            .collect();
        let (mut next, mut first) = (0, true);
        loop {
            // As many writes as fit after the WAIT (first chunk only), then
            // the LAUNCH if it fits too.
            let mut size = if first && wait.is_some() { HEADER } else { 0 };
            let start = next;
            while next < pieces.len() && size + HEADER + pieces[next].1.len().next_multiple_of(16) <= max {
                size += HEADER + pieces[next].1.len().next_multiple_of(16);
                next += 1;
            }
            let last = next == pieces.len() && size + launch <= max;
            let batch = &pieces[start..next];
            let capacity = 64 + size + if last { launch } else { 0 } + 64;
            let first_wait = if first { wait } else { None };
            self.dev.submit_with(self.q, capacity, |e| {
                e.relay_inline(true, |w| {
                    if let Some(back) = first_wait {
                        w.wait(WaitFlags::WAIT_LAUNCH, 0, back)?;
                    }
                    for &(dst, bytes) in batch {
                        w.write_linear(dst, bytes)?;
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
            first = false;
        }
    }

    /// Sends `program` with its large blobs (kernel binaries and unique-arg
    /// blocks of at least `DeviceConfig::stage_min_bytes`) staged in sysmem
    /// (`crate::staging`): each is written there once, and this and later
    /// enqueues name it with `STAGED` fetch entries instead of copying it.
    /// The dispatch stream is the one `write_program` makes, in chunks of
    /// at most one staged piece each: the prefetcher gathers a chunk from
    /// its head in the issue queue, the staged piece and its tail in the
    /// issue queue again. Returns false, having sent nothing, when there is
    /// nothing to stage (or no arena, or a trace is being captured: a trace
    /// holds its bytes), so the caller sends the program inline.
    fn submit_program_staged(
        &mut self,
        program: &Program,
        plan: &Plan,
        wait: Option<u32>,
        all: NocAddr,
        msg: &[u8],
        limit: usize,
    ) -> Result<bool> {
        let q = self.q;
        let min = self.dev.cfg.stage_min_bytes as usize;
        let host = &self.dev.cqs[q as usize];
        if min == 0 || host.staging.is_none() || host.capture.is_some() {
            return Ok(false);
        }
        let stageable = |blob: &Blob| blob.len(program) as usize >= min && blob.key(program).is_some();
        if limit < 4096 || !program_writes(program, plan).any(|(_, blob)| stageable(&blob)) {
            // Nothing to stage, or too small a queue to gather around
            // pieces worth staging.
            return Ok(false);
        }
        let items: Vec<(NocAddr, Blob)> = program_writes(program, plan).collect();
        // Place the large ones (written into sysmem now if not there yet).
        let next = self.dev.cqs[q as usize].fetch_issued;
        let early = self.dev.cfg.host_bug == Some(crate::config::HostBug::StagedReuseEarly);
        let mut placed: Vec<Option<Placed>> = Vec::with_capacity(items.len());
        for &(_, blob) in &items {
            let len = blob.len(program) as usize;
            // Whether the prefetcher has taken entry `entry`, by the fetch
            // count last read; read anew only when that count holds a
            // placement up (a staged hit reads nothing).
            let mut p = None;
            if let Some(key) = blob.key(program).filter(|_| stageable(&blob)) {
                for fresh_look in [false, true] {
                    let fetched =
                        if fresh_look { self.dev.fetched_now(q)? } else { self.dev.cqs[q as usize].fetched_seen };
                    let released = |entry: u32| early || fetched.wrapping_sub(entry) as i32 > 0;
                    let staging = self.dev.cqs[q as usize].staging.as_mut().expect("checked above");
                    p = staging.place(key, len as u64, next, released);
                    if p.is_some() {
                        break;
                    }
                }
            }
            if let Some(p) = p.filter(|p| p.fresh) {
                let out = match self.dev.backend.sysmem_claim(p.at as usize, p.len as usize) {
                    Ok(out) => out,
                    Err(e) => {
                        self.dev.cqs[q as usize].staging.as_mut().expect("checked above").forget(p.key);
                        return Err(e);
                    }
                };
                out[len..].fill(0);
                blob.write(program, &mut out[..len]);
            }
            placed.push(p);
        }
        if placed.iter().all(Option::is_none) {
            return Ok(false);
        }
        // The stream in ops (staged blobs in pieces a chunk can hold),
        // packed into chunks of at most one staged piece each.
        let piece = ((limit - 1024) & !15) as u32;
        let mut ops: Vec<Op> = wait.map(Op::Wait).into_iter().collect();
        for (i, (_, blob)) in items.iter().enumerate() {
            let len = blob.len(program);
            match placed[i] {
                Some(_) => ops.extend((0..len).step_by(piece as usize).map(|off| Op::Write {
                    item: i,
                    off,
                    len: (len - off).min(piece),
                    staged: true,
                })),
                None => ops.push(Op::Write { item: i, off: 0, len, staged: false }),
            }
        }
        ops.push(Op::Launch);
        let size = |op: &Op| match *op {
            Op::Wait(_) => 16,
            Op::Write { len, .. } => 16 + len.next_multiple_of(16) as usize,
            Op::Launch => 16 + msg.len().next_multiple_of(16),
        };
        if ops.iter().any(|op| 16 + size(op) + 64 > limit) {
            // An inline write too large for a chunk: the caller cuts it.
            return Ok(false);
        }
        // Chunks as ranges of `ops`.
        let mut chunks: Vec<std::ops::Range<usize>> = Vec::with_capacity(2);
        chunks.push(0..0);
        let mut used = 16;
        for (i, op) in ops.iter().enumerate() {
            let cur = chunks.last_mut().expect("one at least");
            let staged_too = matches!(op, Op::Write { staged: true, .. })
                && ops[cur.clone()].iter().any(|o| matches!(o, Op::Write { staged: true, .. }));
            if cur.start < cur.end && (staged_too || used + size(op) + 64 > limit) {
                chunks.push(i..i);
                used = 16;
            }
            used += size(op);
            chunks.last_mut().expect("one at least").end = i + 1;
        }
        let mut scratch = std::mem::take(&mut self.dev.cqs[q as usize].scratch);
        scratch.resize(limit, 0);
        let sent = self.submit_chunks(&ops, &chunks, &items, &placed, program, all, msg, &mut scratch);
        self.dev.cqs[q as usize].scratch = scratch;
        sent.map(|()| true)
    }

    /// Encodes each of `chunks` in `scratch` and sends it, gathered around
    /// its staged piece if it has one (whose bytes in `scratch` are never
    /// written nor sent).
    #[allow(clippy::too_many_arguments)]
    fn submit_chunks(
        &mut self,
        ops: &[Op],
        chunks: &[std::ops::Range<usize>],
        items: &[(NocAddr, Blob<'_>)],
        placed: &[Option<Placed>],
        program: &Program,
        all: NocAddr,
        msg: &[u8],
        scratch: &mut [u8],
    ) -> Result<()> {
        let q = self.q;
        for chunk in chunks {
            let chunk = &ops[chunk.clone()];
            let mut enc = Encoder::new(scratch);
            // (offset in the chunk, blob's sysmem offset, offset in the
            // blob, bytes) of its staged piece.
            let mut staged = None;
            enc.relay_inline(true, |w| {
                for op in chunk {
                    match *op {
                        Op::Wait(back) => w.wait(WaitFlags::WAIT_LAUNCH, 0, back)?,
                        Op::Write { item, off: _, len, staged: false } => {
                            let (dst, blob) = items[item];
                            w.write_linear_with(dst, len, |out| blob.write(program, out))?;
                        }
                        Op::Write { item, off, len, staged: true } => {
                            let (dst, p) = (items[item].0, placed[item].expect("staged"));
                            w.write_linear_with(dst.offset(off as u64), len, |_| {})?;
                            let padded = len.next_multiple_of(16);
                            staged = Some((16 + w.len() - padded as usize, p, off as u64, padded));
                        }
                        Op::Launch => w.launch(all, msg)?,
                    }
                }
                Ok(())
            })
            .map_err(|e| DriverError::Invalid(format!("encoding: {e}")))?;
            let n = enc.len();
            let bytes = &scratch[..n];
            match staged {
                Some((start, p, off, len)) => {
                    let end = start + len as usize;
                    let entry = self.dev.submit_gathered(q, &bytes[..start], p.at + off, len, &bytes[end..])?;
                    self.dev.cqs[q as usize].staging.as_mut().expect("staged").used_by(p.key, entry);
                }
                None => self.dev.submit(q, bytes, false)?,
            }
        }
        Ok(())
    }

    /// Sends kernel `r` into its text slot unless the workers hold it there
    /// (a replay whose trace relied on it), once the programs that last ran
    /// from that slot there have finished.
    pub(crate) fn ensure_resident(&mut self, r: &Resident) -> Result<()> {
        let q = self.q as usize;
        if self.dev.programs[q].holds_kernel(r.slot, &r.kernel, 0) {
            return Ok(());
        }
        let wait_for = self.dev.programs[q].upload_wait(r.slot, &r.kernel, 0);
        let host = &self.dev.cqs[q];
        // By distance from the next launch, as a program's own WAIT.
        let back = host.program_launches + 1 - wait_for;
        let wait = (wait_for > host.waited_launch && back <= LAUNCH_RING_ENTRIES as u64).then_some(back as u32);
        let spec = &r.kernel.kernels[0];
        let choice = SlotChoice { slot: r.slot, upload: true };
        let capacity = 64 + 16 + 64 + spec.ranges.len() * (16 + spec.image.len() as usize);
        self.dev.submit_with(self.q, capacity, |e| {
            e.relay_inline(true, |w| {
                if let Some(back) = wait {
                    w.wait(WaitFlags::WAIT_LAUNCH, 0, back)?;
                }
                for range in &spec.ranges {
                    w.write_linear_with(range.noc(slot_addr(choice)), spec.image.len(), |out| {
                        spec.image.write_for_slot(r.slot, out)
                    })?;
                }
                Ok(())
            })
        })?;
        let host = &mut self.dev.cqs[q];
        host.waited_launch = host.waited_launch.max(wait_for);
        self.dev.programs[q].commit_upload(r.slot, &r.kernel, 0);
        Ok(())
    }

    /// Slow dispatch: everything through the BAR once earlier work is done.
    fn slow_program(&mut self, program: &Program, plan: &Plan, grid: u32) -> Result<()> {
        self.slow_wait_workers()?;
        let be = &mut self.dev.backend;
        for (k, choice) in plan.slots.iter().enumerate() {
            let spec = &program.kernels[k];
            let image = choice.upload.then(|| spec.image.for_slot(choice.slot));
            for g in plan.groups.iter().filter(|g| g.kernel == k) {
                for core in ProgramState::range_cores(program, k, g.range) {
                    let at = |a: u32| NocAddr::unicast(noc::worker(core.0, core.1), a as u64);
                    if let Some(img) = &image {
                        be.write(at(slot_addr(*choice)), img)?;
                    }
                    if g.common_count > 0 {
                        be.write(at(g.common_addr), spec.common_bytes())?;
                    }
                    if g.unique_count > 0 {
                        be.write(at(g.unique_addr), spec.unique_block(g.range))?;
                    }
                }
            }
        }
        let seq = self.dev.next_launch_seq;
        let msg = launch_message(seq, program, plan);
        // Tags count this queue's launches: each queue has its own ring, and
        // a worker expects tag n + 1 in a ring after tag n there (a count
        // shared by the queues left gaps, and the workers waited forever).
        let n = self.dev.cqs[self.q as usize].slow_launches.wrapping_add(1);
        let mut msg = msg;
        msg[LAUNCH_TAG as usize..].copy_from_slice(&n.to_le_bytes());
        let workers: Vec<_> = self.dev.workers().collect();
        for &w in &workers {
            // One BAR write per worker, tag last: the message is its GO.
            self.dev.backend.write(NocAddr::unicast(w, launch_entry(self.q as u32, n) as u64), &msg)?;
        }
        let host = &mut self.dev.cqs[self.q as usize];
        host.slow_launches = n;
        host.slow_expected = host.slow_expected.wrapping_add(grid);
        host.program_launches += 1;
        host.waited_launch = host.program_launches;
        let number = host.program_launches;
        self.dev.programs[self.q as usize].commit(program, plan, number);
        self.dev.next_launch_seq = seq.wrapping_add(1);
        Ok(())
    }
}

/// How far back a program's WAIT reaches when it needs one at all: the
/// launch three back has finished by the time the dispatcher writes a
/// program's args unless kernels run longer than three programs' dispatch,
/// and then the dispatcher is ahead of the workers anyway.
const WAIT_REACH: u64 = 3;

/// The rectangle of every worker (each launch reaches all of them).
fn grid_noc(cols: u8, rows: u8) -> NocAddr {
    let (s, e) = (noc::worker(0, 0), noc::worker(cols - 1, rows - 1));
    if s == e {
        NocAddr::unicast(s, 0)
    } else {
        NocAddr::multicast(s, e, 0)
    }
}

/// Launch header and groups, as the LAUNCH payload (a whole ring entry; the
/// tag is stamped by whoever sends it).
fn launch_message(seq: u32, program: &Program, plan: &Plan) -> [u8; LAUNCH_ENTRY_SIZE as usize] {
    let mut msg = [0u8; LAUNCH_ENTRY_SIZE as usize];
    let mut at = size_of::<LaunchHeader>();
    msg[..at].copy_from_slice(LaunchHeader { seq }.as_bytes());
    // Args a group has none of have no place in the ring.
    let word = |addr: u32, count: u32| if count == 0 { 0 } else { config_word(addr) };
    for g in &plan.groups {
        let r = program.kernels[g.kernel].ranges[g.range];
        let group = KernelGroup {
            rect: pack_rect(r.start.0, r.start.1, r.end.0, r.end.1),
            entry: slot_addr(plan.slots[g.kernel]),
            unique_count: g.unique_count as u16,
            common_count: g.common_count as u16,
            unique_word: word(g.unique_addr, g.unique_count),
            common_word: word(g.common_addr, g.common_count),
            kernel_id: program.kernels[g.kernel].image.build_id as u32,
        };
        msg[at..at + size_of::<KernelGroup>()].copy_from_slice(group.as_bytes());
        at += size_of::<KernelGroup>();
    }
    if plan.groups.len() < MAX_KERNEL_GROUPS {
        let end = KernelGroup { rect: NO_RECT, ..Default::default() };
        msg[at..at + size_of::<KernelGroup>()].copy_from_slice(end.as_bytes());
    }
    msg
}

/// Kernel text, common args and unique args: one multicast each per range.
fn write_program(w: &mut DispatchWriter<'_>, program: &Program, plan: &Plan) -> Result<(), EncodeError> {
    for (dst, blob) in program_writes(program, plan) {
        // Written into the stream in place (a binary relocated as it is):
        // one copy.
        w.write_linear_with(dst, blob.len(program), |out| blob.write(program, out))?;
    }
    Ok(())
}

/// The writes of a program's dispatch stream, in order: each uploaded
/// kernel's text to each of its ranges, then per kernel group its common
/// args and its unique-arg block (laid out as the workers read them when
/// they were set), each one multicast.
fn program_writes<'a>(program: &'a Program, plan: &'a Plan) -> impl Iterator<Item = (NocAddr, Blob<'a>)> + 'a {
    let text = plan.slots.iter().enumerate().filter(|(_, c)| c.upload).flat_map(move |(k, choice)| {
        program.kernels[k].ranges.iter().map(move |r| (r.noc(slot_addr(*choice)), Blob::Image { k, slot: choice.slot }))
    });
    let args = plan.groups.iter().flat_map(move |g| {
        let spec = &program.kernels[g.kernel];
        let range = spec.ranges[g.range];
        let common = (g.common_count > 0).then(|| (range.noc(g.common_addr), Blob::Bytes(spec.common_bytes())));
        let unique =
            (g.unique_count > 0).then(|| (range.noc(g.unique_addr), Blob::Unique { k: g.kernel, range: g.range }));
        common.into_iter().chain(unique)
    });
    text.chain(args)
}

/// One command of a staged program's stream.
enum Op {
    Wait(u32),
    /// `len` bytes from offset `off` of item `item`'s blob, inline or from
    /// its staged copy.
    Write {
        item: usize,
        off: u32,
        len: u32,
        staged: bool,
    },
    Launch,
}

/// A write of a program's stream: what its bytes are.
#[derive(Clone, Copy)]
enum Blob<'a> {
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
}

impl Blob<'_> {
    /// What names its staged copy (`None`: never staged).
    fn key(&self, program: &Program) -> Option<BlobKey> {
        match *self {
            Blob::Image { k, slot } => {
                let image = &program.kernels[k].image;
                Some(BlobKey::Image { build_id: image.build_id, slot, len: image.len() })
            }
            Blob::Unique { k, range } => Some(BlobKey::UniqueArgs { stamp: program.kernels[k].unique_stamp(), range }),
            Blob::Bytes(_) => None,
        }
    }

    fn len(&self, program: &Program) -> u32 {
        match *self {
            Blob::Image { k, .. } => program.kernels[k].image.len(),
            Blob::Unique { k, range } => program.kernels[k].unique_block(range).len() as u32,
            Blob::Bytes(b) => b.len() as u32,
        }
    }

    /// Writes its bytes into `out` (exactly `len` bytes).
    fn write(&self, program: &Program, out: &mut [u8]) {
        match *self {
            Blob::Image { k, slot } => program.kernels[k].image.write_for_slot(slot, out),
            Blob::Unique { k, range } => out.copy_from_slice(program.kernels[k].unique_block(range)),
            Blob::Bytes(b) => out.copy_from_slice(b),
        }
    }
}

/// Bytes the program's chunk can take at most.
fn chunk_capacity(program: &Program, plan: &Plan, msg: usize) -> usize {
    let mut n = 64 + 16 + 16 + msg.next_multiple_of(16) + 64;
    for (k, choice) in plan.slots.iter().enumerate() {
        if choice.upload {
            n += program.kernels[k].ranges.len() * (16 + program.kernels[k].image.len() as usize);
        }
    }
    for g in &plan.groups {
        let cores = program.kernels[g.kernel].ranges[g.range].count() as usize;
        n += 16 + (g.common_count as usize * 4).next_multiple_of(16);
        n += 16 + (cores * g.unique_count as usize * 4).next_multiple_of(16);
    }
    n
}
