//! A core's local register block (cqlab-abi `mmio`): core id, soft reset,
//! the NOC command buffer, transaction counters and semaphores; and the
//! [`Bus`] that routes the hart's non-RAM accesses to it.
//!
//! Registers are 32-bit: any other access size or alignment faults. A write
//! to `NOC_CMD` validates the command and hands it to the chip, which reads a
//! write's payload from L1 as its flits leave (see `noc`), delivers it after
//! the NOC latency, and counts it in the sent and acked counters.

use crate::hart::{AccessFault, Bus, StoreEffect};
use crate::memory::Memory;
use cqlab_abi::mmio::{self, NocCmd, MMIO_BASE, MMIO_SIZE, NOC_MAX_PACKET, NOC_READ_IDS, SEMAPHORE_COUNT};
use cqlab_abi::noc::{Coord, NocAddr};

/// Wrapping transaction counters (read-only to firmware).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct NocCounters {
    pub reads_issued: u32,
    pub reads_acked: u32,
    pub writes_issued: u32,
    /// Writes whose last flit has left L1 (source reusable).
    pub writes_sent: u32,
    pub writes_acked: u32,
    pub atomics_issued: u32,
    pub atomics_acked: u32,
    /// Reads landed, per transaction id (`mmio::NOC_READ_ID`).
    pub reads_acked_id: [u32; NOC_READ_IDS as usize],
}

/// One core's register state.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CoreMmio {
    pub coord: Coord,
    /// Held in reset (power-on state until the host writes 0 to SOFT_RESET).
    pub in_reset: bool,
    target_lo: u32,
    target_hi: u32,
    local_addr: u32,
    len: u32,
    atomic_value: u32,
    read_id: u32,
    pub counters: NocCounters,
    pub semaphores: [u32; SEMAPHORE_COUNT as usize],
}

/// A NOC command as a core issued it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NocIssue {
    pub cmd: NocCmd,
    pub target: NocAddr,
    pub local: u32,
    pub len: u32,
    /// `AtomicInc` increment.
    pub value: u32,
    /// A read's transaction id.
    pub read_id: u8,
    /// Issuing hart's cycle.
    pub time: u64,
}

/// Offset of `addr` in the MMIO block if it is a whole, aligned register.
pub fn reg_offset(addr: u64, size: u64) -> Option<u32> {
    let off = addr.checked_sub(MMIO_BASE as u64)?;
    (size == 4 && off % 4 == 0 && off + 4 <= MMIO_SIZE as u64).then_some(off as u32)
}

pub(crate) fn semaphore_index(off: u32) -> Option<usize> {
    let base = mmio::SEMAPHORE_BASE;
    (off >= base && off < mmio::semaphore(SEMAPHORE_COUNT)).then(|| ((off - base) / 4) as usize)
}

impl CoreMmio {
    pub fn new(coord: Coord) -> Self {
        CoreMmio {
            coord,
            in_reset: true,
            target_lo: 0,
            target_hi: 0,
            local_addr: 0,
            len: 0,
            atomic_value: 0,
            read_id: 0,
            counters: NocCounters::default(),
            semaphores: [0; SEMAPHORE_COUNT as usize],
        }
    }

    /// Register value at `off`; `None` where nothing is mapped.
    pub fn read(&self, off: u32) -> Option<u32> {
        let c = &self.counters;
        Some(match off {
            mmio::CORE_ID => self.coord.packed(),
            mmio::SOFT_RESET => self.in_reset as u32,
            mmio::NOC_TARGET_LO => self.target_lo,
            mmio::NOC_TARGET_HI => self.target_hi,
            mmio::NOC_LOCAL_ADDR => self.local_addr,
            mmio::NOC_LEN => self.len,
            mmio::NOC_ATOMIC_VALUE => self.atomic_value,
            mmio::NOC_READ_ID => self.read_id,
            mmio::NOC_CMD => 0,
            mmio::NOC_READS_ISSUED => c.reads_issued,
            mmio::NOC_READS_ACKED => c.reads_acked,
            mmio::NOC_WRITES_ISSUED => c.writes_issued,
            mmio::NOC_WRITES_ACKED => c.writes_acked,
            mmio::NOC_WRITES_SENT => c.writes_sent,
            mmio::NOC_ATOMICS_ISSUED => c.atomics_issued,
            mmio::NOC_ATOMICS_ACKED => c.atomics_acked,
            mmio::NOC_UNACKED => c
                .writes_issued
                .wrapping_sub(c.writes_acked)
                .wrapping_add(c.atomics_issued.wrapping_sub(c.atomics_acked)),
            _ if (mmio::NOC_READS_ACKED_ID..=mmio::NOC_COUNTERS_END).contains(&off) => {
                c.reads_acked_id[((off - mmio::NOC_READS_ACKED_ID) / 4) as usize]
            }
            _ => return semaphore_index(off).map(|i| self.semaphores[i]),
        })
    }

    /// A semaphore written or incremented from the NOC or the host.
    pub fn semaphore_mut(&mut self, off: u32) -> Option<&mut u32> {
        semaphore_index(off).map(|i| &mut self.semaphores[i])
    }

    /// Firmware register write. `Ok(Some(cmd))` when `NOC_CMD` was written.
    fn write(&mut self, off: u32, v: u32) -> Result<Option<NocCmd>, AccessFault> {
        match off {
            mmio::NOC_TARGET_LO => self.target_lo = v,
            mmio::NOC_TARGET_HI => self.target_hi = v,
            mmio::NOC_LOCAL_ADDR => self.local_addr = v,
            mmio::NOC_LEN => self.len = v,
            mmio::NOC_ATOMIC_VALUE => self.atomic_value = v,
            mmio::NOC_READ_ID if v < NOC_READ_IDS => self.read_id = v,
            mmio::NOC_READ_ID => return Err(AccessFault::Rejected("NOC_READ_ID must be below NOC_READ_IDS")),
            mmio::NOC_CMD => {
                return NocCmd::from_u32(v).map(Some).ok_or(AccessFault::Rejected("unknown NOC command kind"))
            }
            mmio::CORE_ID => return Err(AccessFault::Rejected("CORE_ID is read-only")),
            mmio::SOFT_RESET => return Err(AccessFault::Rejected("SOFT_RESET is written by the host only")),
            _ => match self.semaphore_mut(off) {
                Some(s) => *s = v,
                None if (mmio::NOC_READS_ISSUED..=mmio::NOC_COUNTERS_END).contains(&off) => {
                    return Err(AccessFault::Rejected("NOC counters are read-only"))
                }
                None => return Err(AccessFault::Unmapped),
            },
        }
        Ok(None)
    }
}

/// Checks a NOC target before a command is accepted (supplied by the chip,
/// which knows the grid). `Err` names what is wrong.
pub trait TargetCheck {
    fn check(&self, target: NocAddr, len: u32, cmd: NocCmd) -> Result<(), &'static str>;
}

/// The bus a chip core's hart sees.
pub struct CoreBus<'a, T: TargetCheck> {
    pub mmio: &'a mut CoreMmio,
    pub issued: &'a mut Vec<NocIssue>,
    pub targets: &'a T,
}

impl<T: TargetCheck> CoreBus<'_, T> {
    fn issue(&mut self, mem: &Memory, cmd: NocCmd, now: u64) -> Result<(), AccessFault> {
        let m = &*self.mmio;
        let target = NocAddr::from_words(m.target_lo, m.target_hi);
        let (local, len) = (m.local_addr, if cmd == NocCmd::AtomicInc { 4 } else { m.len });
        if cmd != NocCmd::AtomicInc {
            if len == 0 || len > NOC_MAX_PACKET {
                return Err(AccessFault::Rejected("NOC_LEN must be 1..=NOC_MAX_PACKET"));
            }
            if !mem.l1.contains(local, len as u64) {
                return Err(AccessFault::Rejected("NOC_LOCAL_ADDR..+NOC_LEN is outside L1"));
            }
            if cmd == NocCmd::Read && target.is_multicast() {
                return Err(AccessFault::Rejected("a NOC read cannot be multicast"));
            }
        } else if target.is_multicast() {
            return Err(AccessFault::Rejected("a NOC atomic cannot be multicast"));
        }
        self.targets.check(target, len, cmd).map_err(AccessFault::Rejected)?;
        let c = &mut self.mmio.counters;
        match cmd {
            NocCmd::Read => c.reads_issued = c.reads_issued.wrapping_add(1),
            NocCmd::Write => c.writes_issued = c.writes_issued.wrapping_add(1),
            NocCmd::AtomicInc => c.atomics_issued = c.atomics_issued.wrapping_add(1),
        }
        let (value, read_id) = (self.mmio.atomic_value, self.mmio.read_id as u8);
        self.issued.push(NocIssue { cmd, target, local, len, value, read_id, time: now });
        Ok(())
    }
}

impl<T: TargetCheck> Bus for CoreBus<'_, T> {
    fn load(&mut self, _mem: &mut Memory, addr: u32, size: u32, _now: u64) -> Result<u32, AccessFault> {
        let off = reg_offset(addr as u64, size as u64).ok_or(AccessFault::Unmapped)?;
        self.mmio.read(off).ok_or(AccessFault::Unmapped)
    }

    fn store(
        &mut self,
        mem: &mut Memory,
        addr: u32,
        size: u32,
        value: u32,
        now: u64,
    ) -> Result<StoreEffect, AccessFault> {
        let off = reg_offset(addr as u64, size as u64).ok_or(AccessFault::Unmapped)?;
        if let Some(cmd) = self.mmio.write(off, value)? {
            self.issue(mem, cmd, now)?;
            // The scheduler may look for an idle loop after each issue.
            return Ok(StoreEffect::Yield);
        }
        Ok(StoreEffect::Continue)
    }
}
