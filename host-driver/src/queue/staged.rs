//! A program sent with its large blobs (kernel binaries and unique-arg
//! blocks of at least `DeviceConfig::stage_min_bytes`) staged in sysmem
//! (`super::staging`): each is written there once, and this and later
//! enqueues name it with `STAGED` fetch entries instead of copying it. The
//! dispatch stream has the writes of `stream::program_writes` (each group's
//! args apart, where `stream::write_program` sends a range's together), in
//! chunks of at most one staged piece each: the prefetcher gathers a chunk from its head
//! in the issue queue, the staged piece and its tail in the issue queue
//! again.

use super::mutant::mutant;
use super::ops::CommandQueue;
use super::program_state::stages;
use super::staging::Placed;
use super::stream::{program_writes, Blob, Stream};
use crate::config::HostBug;
use crate::error::Result;
use cqlab_abi::dispatch::WaitFlags;
use cqlab_abi::encode::Encoder;
use cqlab_abi::noc::NocAddr;
use cqlab_abi::size::{self, DispatchSize};

/// Chunks smaller than this are not worth gathering around a staged piece:
/// a queue whose chunks are limited below it copies every blob.
const MIN_GATHER_CHUNK: usize = 4096;

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

impl CommandQueue<'_> {
    /// The smallest blob an enqueue in chunks of at most `limit` bytes
    /// stages now; 0 when it stages none (staging off, no arena, a trace
    /// being captured: a trace holds its bytes, or chunks too small).
    pub(super) fn stage_min(&mut self, limit: usize) -> u32 {
        let min = self.cfg.stage_min_bytes;
        let host = self.host();
        if host.staging.is_none() || host.capture.is_some() || limit < MIN_GATHER_CHUNK {
            return 0;
        }
        min
    }

    /// Sends `program` with its large blobs staged, in chunks of at most
    /// `limit` bytes; `min` is `stage_min(limit)`, as the program was
    /// planned with. Returns false, having sent nothing, when there is
    /// nothing to stage, so the caller sends the program inline.
    pub(super) fn submit_program_staged(&mut self, stream: Stream<'_>, limit: usize, min: u32) -> Result<bool> {
        let Stream { chip, program, plan, wait, msg, .. } = stream;
        // A program that sends each core its own unique args sends them
        // inline: what a core gets is gathered from several blocks.
        let own = plan.groups.iter().any(|g| g.unique_own);
        if min == 0 || own {
            return Ok(false);
        }
        let stageable = |blob: &Blob| stages(blob.len(program), min) && blob.key(program).is_some();
        if !program_writes(chip, program, plan).any(|(_, blob)| stageable(&blob)) {
            return Ok(false);
        }
        let items: Vec<(NocAddr, Blob)> = program_writes(chip, program, plan).collect();
        // Place the large ones (written into sysmem now if not there yet).
        let next = self.host().fetch_issued;
        let early = self.cfg.host_bug == Some(HostBug::StagedReuseEarly);
        // Mutant: the entry being fetched counts as taken.
        let at_entry = mutant!(self.cfg, "host-staged-reuse-while-fetching") as i32;
        // Mutant: fresh blobs are written after the doorbell of the first chunk gathering them.
        let write_late = mutant!(self.cfg, "host-doorbell-before-staged-blob");
        let mut unwritten = Vec::new();
        let mut placed: Vec<Option<Placed>> = Vec::with_capacity(items.len());
        for &(_, blob) in &items {
            let len = blob.len(program) as usize;
            // Whether the prefetcher has taken entry `entry`, by the fetch
            // count last read; read anew only when that count holds a
            // placement up (a staged hit reads nothing).
            let mut p = None;
            if let Some(key) = blob.key(program).filter(|_| stageable(&blob)) {
                for fresh_look in [false, true] {
                    let fetched = if fresh_look {
                        self.queues.fetched_now(self.backend, self.q)?
                    } else {
                        self.host().fetched_seen
                    };
                    let released = |entry: u32| early || fetched.wrapping_sub(entry) as i32 + at_entry > 0;
                    let staging = self.host().staging.as_mut().expect("checked above");
                    p = staging.place(key, len as u64, next, released);
                    if p.is_some() {
                        break;
                    }
                }
            }
            if let Some(p) = p.filter(|p| p.fresh && write_late) {
                unwritten.push((placed.len(), p));
            } else if let Some(p) = p.filter(|p| p.fresh) {
                let out = match self.backend.sysmem_claim(p.at as usize, p.len as usize) {
                    Ok(out) => out,
                    Err(e) => {
                        self.host().staging.as_mut().expect("checked above").forget(p.key);
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
        // The stream in ops (staged blobs in pieces a chunk can hold beside
        // its WAIT), packed into chunks of at most one staged piece each.
        let room = size::relay_inline_room(limit);
        let piece = (room - DispatchSize::new().wait().header().bytes()) as u32 & !15;
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
        let add = |s: DispatchSize, op: &Op| match *op {
            Op::Wait(_) => s.wait(),
            Op::Write { len, .. } => s.write_linear(len as usize),
            Op::Launch => s.launch(msg.len()),
        };
        if ops.iter().any(|op| add(DispatchSize::new(), op).bytes() > room) {
            // An inline write too large for a chunk: the caller cuts it.
            return Ok(false);
        }
        // Chunks as ranges of `ops`.
        let mut chunks: Vec<std::ops::Range<usize>> = Vec::with_capacity(2);
        chunks.push(0..0);
        let mut used = DispatchSize::new();
        for (i, op) in ops.iter().enumerate() {
            let cur = chunks.last_mut().expect("one at least");
            let staged_too = matches!(op, Op::Write { staged: true, .. })
                && ops[cur.clone()].iter().any(|o| matches!(o, Op::Write { staged: true, .. }));
            if cur.start < cur.end && (staged_too || add(used, op).bytes() > room) {
                chunks.push(i..i);
                used = DispatchSize::new();
            }
            used = add(used, op);
            chunks.last_mut().expect("one at least").end = i + 1;
        }
        let mut scratch = std::mem::take(&mut self.host().scratch);
        scratch.resize(limit, 0);
        let sent = self.submit_chunks(&ops, &chunks, &items, &placed, stream, &mut scratch, &mut unwritten);
        self.host().scratch = scratch;
        sent.map(|()| true)
    }

    /// Encodes each of `chunks` in `scratch` and sends it, gathered around
    /// its staged piece if it has one (whose bytes in `scratch` are never
    /// written nor sent). `unwritten` (a mutant's): fresh blobs, by item,
    /// to write once the first chunk gathering them has been rung.
    #[allow(clippy::too_many_arguments)]
    fn submit_chunks(
        &mut self,
        ops: &[Op],
        chunks: &[std::ops::Range<usize>],
        items: &[(NocAddr, Blob<'_>)],
        placed: &[Option<Placed>],
        stream: Stream<'_>,
        scratch: &mut [u8],
        unwritten: &mut Vec<(usize, Placed)>,
    ) -> Result<()> {
        let Stream { program, all, msg, .. } = stream;
        let (q, header) = (self.q, DispatchSize::new().header().bytes());
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
                            // The RELAY_INLINE header precedes the dispatch commands.
                            staged = Some((header + w.len() - padded as usize, p, off as u64, padded, item));
                        }
                        Op::Launch => w.launch(all, msg)?,
                    }
                }
                Ok(())
            })?;
            let n = enc.len();
            let bytes = &scratch[..n];
            match staged {
                Some((start, p, off, len, item)) => {
                    let end = start + len as usize;
                    let entry = self.queues.submit_gathered(
                        self.backend,
                        self.cfg,
                        q,
                        &bytes[..start],
                        p.at + off,
                        len,
                        &bytes[end..],
                    )?;
                    self.host().staging.as_mut().expect("staged").used_by(p.key, entry);
                    if let Some(k) = unwritten.iter().position(|&(i, _)| i == item) {
                        let (_, p) = unwritten.swap_remove(k);
                        let out = self.backend.sysmem_claim(p.at as usize, p.len as usize)?;
                        let blob = items[item].1;
                        let n = blob.len(program) as usize;
                        out[n..].fill(0);
                        blob.write(program, &mut out[..n]);
                    }
                }
                None => self.submit(bytes, false)?,
            }
        }
        Ok(())
    }
}
