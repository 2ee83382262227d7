//! The completion rings: the host reads the dispatcher's records (read-back
//! data, events) and writes its read pointer back; and the waits for them.

use super::mutant::mutant;
use super::ops::PendingRead;
use super::state::{Awaited, Queues, EVENT_CYCLES_KEPT};
use crate::backend::Backend;
use crate::config::{DeviceConfig, HostBug};
use crate::dump::Wait;
use crate::error::{DeviceFault, DriverError, Result};
use crate::events::Event;
use cqlab_abi::completion::{record_size, CompletionHeader, CompletionKind, EventRecord};
use cqlab_abi::mailbox;
use cqlab_abi::noc::NocAddr;
use cqlab_abi::ring::RingPtr;
use cqlab_abi::sysmem::COMPLETION_WR_PTR;
use std::mem::size_of;
use zerocopy::{FromBytes, FromZeros, IntoBytes};

impl Queues {
    /// Consumes every completion record queue `q` has written.
    fn drain(&mut self, backend: &mut dyn Backend, cfg: &DeviceConfig, q: u8) -> Result<()> {
        let cq = &self.list[q as usize];
        let (size, base, mut rd) = (cq.layout.completion_size, cq.layout.completion_base() as usize, cq.completion_rd);
        // The next record's header, read before the pointer that covers it.
        let mut early = None;
        if mutant!(cfg, "host-completion-read-before-pointer") {
            let mut header = CompletionHeader::new_zeroed();
            backend.sysmem_read(base + rd.offset_bytes() as usize, header.as_mut_bytes())?;
            early = Some(header);
        }
        let wr = RingPtr(self.header_word(backend, q, COMPLETION_WR_PTR)?);
        if rd == wr {
            return Ok(());
        }
        let dispatcher_rd = NocAddr::unicast(self.chip.dispatcher(q), mailbox::COMPLETION_RD_PTR as u64);
        let published_early = mutant!(cfg, "host-completion-rd-before-consume");
        if published_early {
            // Frees the records before they are read.
            backend.write_u32(dispatcher_rd, wr.0)?;
            self.list[q as usize].completion_rd_published = wr;
        }
        while rd != wr {
            let at = base + rd.offset_bytes() as usize;
            let mut header = CompletionHeader::new_zeroed();
            match early.take() {
                Some(h) => header = h,
                None => backend.sysmem_read(at, header.as_mut_bytes())?,
            }
            let record = record_in_ring(header.length, size);
            let kind = CompletionKind::from_u8(header.kind);
            let expected_seq = self.list[q as usize].completions as u32;
            if kind.is_none() || record.is_none() || header.cq != q as u16 || header.seq != expected_seq {
                let fault = DeviceFault::CorruptCompletion {
                    cq: q,
                    offset: rd.offset_bytes(),
                    kind: header.kind,
                    record_cq: header.cq,
                    length: header.length,
                    seq: header.seq,
                    expected_seq,
                };
                let chip = self.chip.clone();
                let dump = crate::wait::dump(backend, cfg, &chip, self, Wait::CompletionQueue { cq: q })?;
                return Err(DriverError::Device { core: chip.dispatcher(q), fault, dump });
            }
            // The payload may wrap the ring: at most two pieces.
            let mut payload = vec![0u8; header.length as usize];
            let start = (rd.offset_bytes() as usize + size_of::<CompletionHeader>()) % size as usize;
            let first = (size as usize - start).min(payload.len());
            backend.sysmem_read(base + start, &mut payload[..first])?;
            backend.sysmem_read(base, &mut payload[first..])?;
            let found = match kind {
                Some(CompletionKind::Event) => match EventRecord::read_from_prefix(&payload) {
                    Ok((ev, _)) if header.length as usize == size_of::<EventRecord>() && ev.cq == q as u32 => {
                        Awaited::Event { id: ev.event_id }
                    }
                    _ => Awaited::Event { id: 0 },
                },
                _ => Awaited::Read { tag: header.tag, length: header.length },
            };
            let expected = self.list[q as usize].awaited.front().copied();
            if expected != Some(found) {
                let found = match (kind, found) {
                    (Some(CompletionKind::Event), Awaited::Event { id: 0 }) => {
                        match EventRecord::read_from_prefix(&payload) {
                            Ok((ev, _)) => {
                                format!("event {} of CQ{} in a record of {} bytes", ev.event_id, ev.cq, header.length)
                            }
                            Err(_) => format!("an event record of {} bytes", header.length),
                        }
                    }
                    _ => found.to_string(),
                };
                let fault = DeviceFault::UnexpectedCompletion {
                    cq: q,
                    offset: rd.offset_bytes(),
                    found,
                    expected: expected.map_or("no record".into(), |e| e.to_string()),
                };
                // The records before it were consumed: a later drain starts here.
                self.list[q as usize].completion_rd = rd;
                let chip = self.chip.clone();
                let dump = crate::wait::dump(backend, cfg, &chip, self, Wait::CompletionQueue { cq: q })?;
                return Err(DriverError::Device { core: chip.dispatcher(q), fault, dump });
            }
            let cq = &mut self.list[q as usize];
            cq.awaited.pop_front();
            match kind {
                Some(CompletionKind::Event) => {
                    let (ev, _) = EventRecord::read_from_prefix(&payload).expect("checked above");
                    cq.last_event_done = cq.last_event_done.max(ev.event_id);
                    if cq.event_cycles.len() == EVENT_CYCLES_KEPT {
                        cq.event_cycles.pop_front();
                    }
                    cq.event_cycles.push_back((ev.event_id, ev.cycle));
                }
                _ => {
                    cq.reads.insert(header.tag, payload);
                }
            }
            cq.completions += 1;
            rd = rd.advance(record.expect("checked above"), size);
        }
        self.list[q as usize].completion_rd = rd;
        if published_early {
            return Ok(());
        }
        // Known host bug: the pointer written back keeps its first lap's toggle.
        let publish = if cfg.host_bug == Some(HostBug::CompletionRdWithoutToggle) {
            RingPtr::new(rd.offset_bytes(), false)
        } else {
            rd
        };
        backend.write_u32(dispatcher_rd, publish.0)?;
        self.list[q as usize].completion_rd_published = publish;
        Ok(())
    }

    /// `drain_all` from inside a wait: only every
    /// `DeviceConfig::drain_every_polls` polls.
    pub(super) fn drain_in_wait(&mut self, backend: &mut dyn Backend, cfg: &DeviceConfig) -> Result<()> {
        if self.polls_since_drain < cfg.drain_every_polls.saturating_sub(1) {
            return Ok(());
        }
        self.polls_since_drain = 0;
        self.drain_all(backend, cfg)
    }

    pub(super) fn drain_all(&mut self, backend: &mut dyn Backend, cfg: &DeviceConfig) -> Result<()> {
        for q in 0..cfg.num_cqs {
            self.drain(backend, cfg, q)?;
        }
        Ok(())
    }

    /// Waits for a pending read and returns its bytes.
    pub(crate) fn complete_read(
        &mut self,
        backend: &mut dyn Backend,
        cfg: &DeviceConfig,
        pending: &PendingRead,
    ) -> Result<Vec<u8>> {
        let q = pending.cq;
        let mut out = Vec::new();
        let chip = self.chip.clone();
        for &(tag, len) in &pending.tags {
            crate::wait::until(
                backend,
                cfg,
                &chip,
                self,
                || Wait::ReadBack { cq: q, tag },
                |backend, queues| {
                    queues.drain_in_wait(backend, cfg)?;
                    Ok(queues.list[q as usize].reads.contains_key(&tag))
                },
            )?;
            let piece = self.list[q as usize].reads.remove(&tag).expect("present");
            // Paged reads relay whole pages; keep the bytes asked for.
            out.extend_from_slice(&piece[..(len as usize).min(piece.len())]);
        }
        Ok(out)
    }

    /// Blocks until `event` has completed.
    pub(crate) fn event_synchronize(
        &mut self,
        backend: &mut dyn Backend,
        cfg: &DeviceConfig,
        event: Event,
    ) -> Result<()> {
        self.get(event.cq)?;
        let chip = self.chip.clone();
        crate::wait::until(
            backend,
            cfg,
            &chip,
            self,
            || Wait::Event { cq: event.cq, id: event.id },
            |backend, queues| {
                queues.drain_in_wait(backend, cfg)?;
                Ok(queues.list[event.cq as usize].last_event_done >= event.id)
            },
        )
    }

    /// The device cycle at which `event` completed, once it has (see
    /// `Device::event_cycle`). Drains completions, never blocks.
    pub(crate) fn event_cycle(
        &mut self,
        backend: &mut dyn Backend,
        cfg: &DeviceConfig,
        event: Event,
    ) -> Result<Option<u64>> {
        self.drain_all(backend, cfg)?;
        let cq = self.get(event.cq)?;
        Ok(cq.event_cycles.iter().rev().find(|&&(id, _)| id == event.id).map(|&(_, cycle)| cycle))
    }

    /// Whether `event` has completed (drains completions, never blocks).
    pub(crate) fn event_query(&mut self, backend: &mut dyn Backend, cfg: &DeviceConfig, event: Event) -> Result<bool> {
        self.drain_all(backend, cfg)?;
        Ok(self.get(event.cq)?.last_event_done >= event.id)
    }
}

/// The bytes a record of `length` payload bytes takes in a ring of `size`,
/// `None` when it cannot fit: a corrupt length near `u32::MAX` wraps
/// `record_size` to a small record (helper-47), which would then size the
/// payload buffer by the corrupt length.
fn record_in_ring(length: u32, size: u32) -> Option<u32> {
    (length < size).then(|| record_size(length)).filter(|&r| r <= size)
}

#[cfg(test)]
mod tests {
    use super::record_in_ring;

    #[test]
    fn a_length_that_cannot_fit_is_no_record_even_where_its_size_wraps() {
        assert_eq!(record_in_ring(16, 4096), Some(64));
        assert_eq!(record_in_ring(4096 - 16, 4096), Some(4096));
        assert_eq!(record_in_ring(4096 - 15, 4096), None);
        assert_eq!(record_in_ring(u32::MAX, 4096), None, "16 + u32::MAX wraps to 15");
        assert_eq!(record_in_ring(u32::MAX - 20, 4096), None);
    }
}
