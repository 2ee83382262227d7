//! Decoder: bytes -> typed commands. `no_std`, never panics, never allocates.
//!
//! Header parsing validates every field a core would act on, so the firmware,
//! the simulator's checks and `cqlab decode` reject the same inputs with the
//! same reasons. A header's named fields and its text form are in
//! `fields`.

use crate::dispatch::{
    DispatchCmdId, GoCmd, LaunchCmd, PackedFlags, PackedSubCmd, ValueCmd, WaitCmd, WaitFlags, WriteHostCmd,
    WriteHostFlags, WriteLinearCmd, WritePackedCmd, WritePagedCmd,
};
use crate::noc::NocAddr;
use crate::prefetch::{
    checksum, DebugCmd, ExecBufCmd, ExecBufFlags, PagedFlags, PrefetchCmdId, RelayInlineCmd, RelayLinearCmd,
    RelayPagedCmd,
};
use crate::{semaphore, CMD_HEADER_SIZE, L1_ALIGNMENT, PCIE_ALIGNMENT};
use core::fmt;
use zerocopy::FromBytes;

/// Which command set a byte was decoded as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Space {
    Prefetch,
    Dispatch,
}

impl Space {
    /// The name of command `id` of this set (`None`: no such command).
    pub const fn command_name(self, id: u8) -> Option<&'static str> {
        match self {
            Space::Prefetch => match PrefetchCmdId::from_u8(id) {
                Some(c) => Some(c.name()),
                None => None,
            },
            Space::Dispatch => match DispatchCmdId::from_u8(id) {
                Some(c) => Some(c.name()),
                None => None,
            },
        }
    }
}

/// What is wrong with the bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecodeErrorKind {
    UnknownId { space: Space, id: u8 },
    Truncated { needed: u64, available: u64 },
    Misaligned { align: usize },
    BadSize { field: &'static str, value: u64 },
    BadFlags { flags: u8 },
    BadChecksum { expected: u32, found: u32 },
}

/// A decode failure at byte `offset` of the input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DecodeError {
    pub offset: usize,
    pub kind: DecodeErrorKind,
}

impl fmt::Display for DecodeErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::UnknownId { space, id } => write!(f, "unknown {space:?} command id 0x{id:02x}"),
            Self::Truncated { needed, available } => {
                write!(f, "truncated: command needs {needed} bytes, {available} available")
            }
            Self::Misaligned { align } => write!(f, "command header not aligned to {align} bytes"),
            Self::BadSize { field, value } => write!(f, "invalid {field} {value}"),
            Self::BadFlags { flags } => write!(f, "invalid flags 0x{flags:02x}"),
            Self::BadChecksum { expected, found } => {
                write!(f, "checksum mismatch: header says 0x{expected:08x}, payload sums to 0x{found:08x}")
            }
        }
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "at byte offset {} (0x{:x}): {}", self.offset, self.offset, self.kind)
    }
}

impl core::error::Error for DecodeError {}

const fn align16(n: u64) -> u64 {
    (n + 15) & !15
}
const fn align64(n: u64) -> u64 {
    (n + 63) & !63
}

#[inline]
fn read<T: FromBytes>(h: &[u8; 16]) -> T {
    // Every command struct is exactly 16 bytes (asserted at its definition).
    match T::read_from_prefix(h) {
        Ok((v, _)) => v,
        Err(_) => unreachable_layout(),
    }
}

#[cold]
fn unreachable_layout() -> ! {
    panic!("command structs are 16 bytes")
}

fn bad(field: &'static str, value: u64) -> DecodeErrorKind {
    DecodeErrorKind::BadSize { field, value }
}

/// A validated prefetch command header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PrefetchHeader {
    RelayInline { flush: bool, cmd: RelayInlineCmd },
    RelayLinear(RelayLinearCmd),
    RelayPaged(RelayPagedCmd),
    Stall,
    ExecBuf(ExecBufCmd),
    ExecBufEnd,
    Debug(DebugCmd),
    Terminate,
}

impl PrefetchHeader {
    #[inline]
    pub fn parse(h: &[u8; 16]) -> Result<Self, DecodeErrorKind> {
        let id = PrefetchCmdId::from_u8(h[0]).ok_or(DecodeErrorKind::UnknownId { space: Space::Prefetch, id: h[0] })?;
        Ok(match id {
            PrefetchCmdId::RelayInline | PrefetchCmdId::RelayInlineNoflush => {
                let cmd: RelayInlineCmd = read(h);
                if cmd.length == 0 || cmd.length % L1_ALIGNMENT as u32 != 0 {
                    return Err(bad("RELAY_INLINE length", cmd.length as u64));
                }
                if cmd.stride as u64 != align64(CMD_HEADER_SIZE as u64 + cmd.length as u64) {
                    return Err(bad("RELAY_INLINE stride", cmd.stride as u64));
                }
                Self::RelayInline { flush: id == PrefetchCmdId::RelayInline, cmd }
            }
            PrefetchCmdId::RelayLinear => {
                let cmd: RelayLinearCmd = read(h);
                if cmd.length == 0 {
                    return Err(bad("RELAY_LINEAR length", 0));
                }
                Self::RelayLinear(cmd)
            }
            PrefetchCmdId::RelayPaged => Self::RelayPaged(check_paged(read(h), "RELAY_PAGED")?),
            PrefetchCmdId::Stall => Self::Stall,
            PrefetchCmdId::ExecBuf => {
                let cmd: ExecBufCmd = read(h);
                // Pages stream through the prefetcher's trace windows: one
                // must divide a window.
                let window = crate::memory_map::TRACE_WINDOW;
                if cmd.page_size == 0 || cmd.page_size % PCIE_ALIGNMENT as u32 != 0 || window % cmd.page_size != 0 {
                    return Err(bad("EXEC_BUF page_size", cmd.page_size as u64));
                }
                if cmd.pages == 0 {
                    return Err(bad("EXEC_BUF pages", 0));
                }
                let Some(flags) = ExecBufFlags::from_bits(cmd.flags) else {
                    return Err(DecodeErrorKind::BadFlags { flags: cmd.flags });
                };
                let head = cmd.head as u32;
                // A whole trace holds its EXEC_BUF_END at least.
                let least = if flags.contains(ExecBufFlags::WHOLE) { PCIE_ALIGNMENT as u32 } else { 0 };
                if head % PCIE_ALIGNMENT as u32 != 0 || head > crate::prefetch::EXEC_BUF_HEAD_MAX || head < least {
                    return Err(bad("EXEC_BUF head", head as u64));
                }
                Self::ExecBuf(cmd)
            }
            PrefetchCmdId::ExecBufEnd => Self::ExecBufEnd,
            PrefetchCmdId::Debug => Self::Debug(check_debug(read(h), PCIE_ALIGNMENT as u64)?),
            PrefetchCmdId::Terminate => Self::Terminate,
        })
    }

    pub fn id(&self) -> PrefetchCmdId {
        match self {
            Self::RelayInline { flush: true, .. } => PrefetchCmdId::RelayInline,
            Self::RelayInline { flush: false, .. } => PrefetchCmdId::RelayInlineNoflush,
            Self::RelayLinear(_) => PrefetchCmdId::RelayLinear,
            Self::RelayPaged(_) => PrefetchCmdId::RelayPaged,
            Self::Stall => PrefetchCmdId::Stall,
            Self::ExecBuf(_) => PrefetchCmdId::ExecBuf,
            Self::ExecBufEnd => PrefetchCmdId::ExecBufEnd,
            Self::Debug(_) => PrefetchCmdId::Debug,
            Self::Terminate => PrefetchCmdId::Terminate,
        }
    }

    /// Payload bytes that follow the header in the issue queue.
    pub fn inline_len(&self) -> u32 {
        match self {
            Self::RelayInline { cmd, .. } => cmd.length,
            Self::Debug(cmd) => cmd.length,
            Self::ExecBuf(cmd) => cmd.head as u32,
            _ => 0,
        }
    }

    /// Where the inline payload starts, from the header's first byte: right
    /// after the header, or (an `EXEC_BUF`'s trace head) after its whole
    /// PCIe line.
    pub fn payload_offset(&self) -> u32 {
        match self {
            Self::ExecBuf(_) => PCIE_ALIGNMENT as u32,
            _ => CMD_HEADER_SIZE as u32,
        }
    }

    /// Bytes the whole command occupies in the issue queue (multiple of 64).
    pub fn stride(&self) -> u32 {
        match self {
            Self::RelayInline { cmd, .. } => cmd.stride,
            Self::Debug(cmd) => cmd.stride,
            Self::ExecBuf(cmd) => PCIE_ALIGNMENT as u32 + cmd.head as u32,
            _ => PCIE_ALIGNMENT as u32,
        }
    }

    /// Bytes this command adds to the dispatcher's stream (before padding to 16).
    pub fn relay_len(&self) -> u64 {
        match self {
            Self::RelayInline { cmd, .. } => cmd.length as u64,
            Self::RelayLinear(cmd) => cmd.length as u64,
            Self::RelayPaged(cmd) => cmd.pages as u64 * cmd.page_size as u64,
            _ => 0,
        }
    }
}

fn check_paged(cmd: RelayPagedCmd, what: &'static str) -> Result<RelayPagedCmd, DecodeErrorKind> {
    if PagedFlags::from_bits(cmd.flags).is_none() {
        return Err(DecodeErrorKind::BadFlags { flags: cmd.flags });
    }
    if cmd.page_size == 0 || cmd.page_size % L1_ALIGNMENT as u32 != 0 {
        return Err(DecodeErrorKind::BadSize { field: concat_field(what, true), value: cmd.page_size as u64 });
    }
    if cmd.pages == 0 {
        return Err(DecodeErrorKind::BadSize { field: concat_field(what, false), value: 0 });
    }
    let total = cmd.pages as u64 * cmd.page_size as u64;
    if total > u32::MAX as u64 {
        return Err(DecodeErrorKind::BadSize { field: "paged transfer bytes", value: total });
    }
    Ok(cmd)
}

fn concat_field(what: &'static str, page_size: bool) -> &'static str {
    match (what, page_size) {
        ("RELAY_PAGED", true) => "RELAY_PAGED page_size",
        ("RELAY_PAGED", false) => "RELAY_PAGED pages",
        (_, true) => "WRITE_PAGED page_size",
        (_, false) => "WRITE_PAGED pages",
    }
}

fn check_debug(cmd: DebugCmd, align: u64) -> Result<DebugCmd, DecodeErrorKind> {
    let expected = (CMD_HEADER_SIZE as u64 + cmd.length as u64 + align - 1) & !(align - 1);
    if cmd.stride as u64 != expected {
        return Err(bad("DEBUG stride", cmd.stride as u64));
    }
    Ok(cmd)
}

/// A validated dispatch command header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DispatchHeader {
    WriteLinear(WriteLinearCmd),
    WritePaged(WritePagedCmd),
    WritePacked(WritePackedCmd),
    WriteHost(WriteHostCmd),
    Wait(WaitCmd),
    Go(GoCmd),
    Launch(LaunchCmd),
    SetWriteOffset(u32),
    Delay(u32),
    Debug(DebugCmd),
    Terminate,
}

impl DispatchHeader {
    #[inline]
    pub fn parse(h: &[u8; 16]) -> Result<Self, DecodeErrorKind> {
        let id = DispatchCmdId::from_u8(h[0]).ok_or(DecodeErrorKind::UnknownId { space: Space::Dispatch, id: h[0] })?;
        Ok(match id {
            DispatchCmdId::WriteLinear => {
                let cmd: WriteLinearCmd = read(h);
                if cmd.length == 0 {
                    return Err(bad("WRITE_LINEAR length", 0));
                }
                let dst = NocAddr(cmd.dst);
                let (s, e) = dst.rect();
                if e.x < s.x || e.y < s.y {
                    return Err(bad("WRITE_LINEAR multicast end", e.packed() as u64));
                }
                Self::WriteLinear(cmd)
            }
            DispatchCmdId::WritePaged => Self::WritePaged(check_paged(read(h), "WRITE_PAGED")?),
            DispatchCmdId::WritePacked => {
                let cmd: WritePackedCmd = read(h);
                if PackedFlags::from_bits(cmd.flags).is_none() {
                    return Err(DecodeErrorKind::BadFlags { flags: cmd.flags });
                }
                if cmd.count == 0 || cmd.count > crate::dispatch::MAX_PACKED_DESTS {
                    return Err(bad("WRITE_PACKED count", cmd.count as u64));
                }
                if cmd.size == 0 || cmd.size > crate::dispatch::MAX_PACKED_SIZE {
                    return Err(bad("WRITE_PACKED size", cmd.size as u64));
                }
                if cmd.addr % L1_ALIGNMENT as u32 != 0 {
                    return Err(bad("WRITE_PACKED addr", cmd.addr as u64));
                }
                Self::WritePacked(cmd)
            }
            DispatchCmdId::WriteHost => {
                let cmd: WriteHostCmd = read(h);
                let Some(flags) = WriteHostFlags::from_bits(cmd.flags) else {
                    return Err(DecodeErrorKind::BadFlags { flags: cmd.flags });
                };
                if cmd.length == 0 {
                    return Err(bad("WRITE_HOST length", 0));
                }
                let event_len = core::mem::size_of::<crate::completion::EventRecord>() as u32;
                if flags.contains(WriteHostFlags::EVENT) && cmd.length != event_len {
                    return Err(bad("WRITE_HOST event length", cmd.length as u64));
                }
                Self::WriteHost(cmd)
            }
            DispatchCmdId::Wait => {
                let cmd: WaitCmd = read(h);
                let Some(flags) = WaitFlags::from_bits(cmd.flags) else {
                    return Err(DecodeErrorKind::BadFlags { flags: cmd.flags });
                };
                let mem = flags.contains(WaitFlags::WAIT_MEMORY);
                let ctr = flags.contains(WaitFlags::WAIT_COUNTER);
                if (mem && ctr) || (flags.contains(WaitFlags::CLEAR) && !(mem || ctr)) {
                    return Err(DecodeErrorKind::BadFlags { flags: cmd.flags });
                }
                if flags.contains(WaitFlags::WAIT_LAUNCH) {
                    if mem || ctr {
                        return Err(DecodeErrorKind::BadFlags { flags: cmd.flags });
                    }
                    if cmd.count == 0 || cmd.count > crate::program::LAUNCH_RING_ENTRIES {
                        return Err(bad("WAIT launch distance", cmd.count as u64));
                    }
                }
                if ctr && cmd.addr >= semaphore::COUNT {
                    return Err(bad("WAIT semaphore index", cmd.addr as u64));
                }
                // Address 0 (the reset jump) is no word to wait on; the
                // dispatcher also refuses one past its chip's L1.
                if mem && (cmd.addr % 4 != 0 || cmd.addr == 0) {
                    return Err(bad("WAIT address", cmd.addr as u64));
                }
                Self::Wait(cmd)
            }
            DispatchCmdId::Go => Self::Go(read(h)),
            DispatchCmdId::Launch => {
                let cmd: LaunchCmd = read(h);
                let len = cmd.length as u32;
                if len != crate::program::LAUNCH_ENTRY_SIZE {
                    return Err(bad("LAUNCH length", cmd.length as u64));
                }
                let dst = NocAddr(cmd.dst);
                let (s, e) = dst.rect();
                if e.x < s.x || e.y < s.y {
                    return Err(bad("LAUNCH multicast end", e.packed() as u64));
                }
                Self::Launch(cmd)
            }
            DispatchCmdId::SetWriteOffset => Self::SetWriteOffset(read::<ValueCmd>(h).value),
            DispatchCmdId::Delay => Self::Delay(read::<ValueCmd>(h).value),
            DispatchCmdId::Debug => Self::Debug(check_debug(read(h), L1_ALIGNMENT as u64)?),
            DispatchCmdId::Terminate => Self::Terminate,
        })
    }

    pub fn id(&self) -> DispatchCmdId {
        match self {
            Self::WriteLinear(_) => DispatchCmdId::WriteLinear,
            Self::WritePaged(_) => DispatchCmdId::WritePaged,
            Self::WritePacked(_) => DispatchCmdId::WritePacked,
            Self::WriteHost(_) => DispatchCmdId::WriteHost,
            Self::Wait(_) => DispatchCmdId::Wait,
            Self::Go(_) => DispatchCmdId::Go,
            Self::Launch(_) => DispatchCmdId::Launch,
            Self::SetWriteOffset(_) => DispatchCmdId::SetWriteOffset,
            Self::Delay(_) => DispatchCmdId::Delay,
            Self::Debug(_) => DispatchCmdId::Debug,
            Self::Terminate => DispatchCmdId::Terminate,
        }
    }

    /// Stream bytes after the header that belong to this command (padded to 16).
    pub fn payload_len(&self) -> u64 {
        match self {
            Self::WriteLinear(c) => align16(c.length as u64),
            Self::WritePaged(c) => align16(c.pages as u64 * c.page_size as u64),
            Self::WritePacked(c) => {
                let subs = align16(c.count as u64 * core::mem::size_of::<PackedSubCmd>() as u64);
                let blocks = if PackedFlags::from_bits_retain(c.flags).contains(PackedFlags::SHARED_DATA) {
                    1
                } else {
                    c.count as u64
                };
                subs + blocks * align16(c.size as u64)
            }
            Self::WriteHost(c) => align16(c.length as u64),
            Self::Launch(c) => align16(c.length as u64),
            Self::Debug(c) => c.stride as u64 - CMD_HEADER_SIZE as u64,
            _ => 0,
        }
    }

    /// The start of the payload that the dispatcher checks before acting on
    /// it (`check_payload` reads these bytes), and what they hold; `None`
    /// for a command whose payload has no rule. A decoder can check a
    /// payload that arrives in pieces once it holds this much.
    pub fn payload_rule(&self) -> Option<PayloadRule> {
        match self {
            Self::WritePacked(c) => Some(PayloadRule {
                len: c.count as u64 * core::mem::size_of::<PackedSubCmd>() as u64,
                what: "destinations",
            }),
            Self::Debug(c) => Some(PayloadRule { len: c.length as u64, what: "checksum" }),
            _ => None,
        }
    }

    /// Checks the payload rule (`payload_rule`) on `payload`, the start of
    /// this command's payload: a `WRITE_PACKED`'s destinations, a `DEBUG`'s
    /// checksum. Bytes past the rule's are not read; fewer are `Truncated`.
    pub fn check_payload(&self, payload: &[u8]) -> Result<(), DecodeErrorKind> {
        let Some(rule) = self.payload_rule() else {
            return Ok(());
        };
        let Some(checked) = payload.get(..rule.len as usize) else {
            return Err(DecodeErrorKind::Truncated { needed: rule.len, available: payload.len() as u64 });
        };
        match self {
            Self::Debug(cmd) => {
                let found = checksum(checked);
                if found != cmd.checksum {
                    return Err(DecodeErrorKind::BadChecksum { expected: cmd.checksum, found });
                }
            }
            Self::WritePacked(_) => {
                for word in checked.chunks_exact(core::mem::size_of::<PackedSubCmd>()) {
                    let sub = u32::from_le_bytes([word[0], word[1], word[2], word[3]]);
                    // Coordinates only: whether they name a compute core is the
                    // chip's to say (the dispatcher checks its `NocMap`).
                    let c = crate::noc::Coord::unpack(sub);
                    if sub >> 16 != 0 || c.x > crate::noc::MAX_COORD || c.y > crate::noc::MAX_COORD {
                        return Err(bad("WRITE_PACKED destination", sub as u64));
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }
}

/// The payload bytes a command's rule reads (`DispatchHeader::payload_rule`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PayloadRule {
    /// Bytes from the payload's start.
    pub len: u64,
    /// What the rule checks, for a message ("destinations", "checksum").
    pub what: &'static str,
}

fn header_at(bytes: &[u8], offset: usize) -> Result<&[u8; 16], DecodeError> {
    let avail = bytes.len().saturating_sub(offset);
    bytes
        .get(offset..)
        .and_then(|b| b.first_chunk::<16>())
        .ok_or(DecodeError { offset, kind: DecodeErrorKind::Truncated { needed: 16, available: avail as u64 } })
}

/// A prefetch command with its inline payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PrefetchCmd<'a> {
    pub header: PrefetchHeader,
    pub payload: &'a [u8],
}

/// Decode the prefetch command at `offset` of an issue-queue byte stream.
/// Returns the command and the offset of the next one.
pub fn decode_prefetch(bytes: &[u8], offset: usize) -> Result<(PrefetchCmd<'_>, usize), DecodeError> {
    if offset % PCIE_ALIGNMENT != 0 {
        return Err(DecodeError { offset, kind: DecodeErrorKind::Misaligned { align: PCIE_ALIGNMENT } });
    }
    let header = PrefetchHeader::parse(header_at(bytes, offset)?).map_err(|kind| DecodeError { offset, kind })?;
    let stride = header.stride() as usize;
    let available = bytes.len() - offset;
    if stride > available {
        return Err(DecodeError {
            offset,
            kind: DecodeErrorKind::Truncated { needed: stride as u64, available: available as u64 },
        });
    }
    let start = offset + header.payload_offset() as usize;
    let payload = &bytes[start..start + header.inline_len() as usize];
    if let PrefetchHeader::Debug(cmd) = header {
        let found = checksum(payload);
        if found != cmd.checksum {
            return Err(DecodeError { offset, kind: DecodeErrorKind::BadChecksum { expected: cmd.checksum, found } });
        }
    }
    Ok((PrefetchCmd { header, payload }, offset + stride))
}

/// A dispatch command with the part of its payload present in the input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DispatchCmd<'a> {
    pub header: DispatchHeader,
    /// Payload bytes present (padded length, or up to the end of the input).
    pub payload: &'a [u8],
    /// Payload bytes still to come from later relays (0 when complete).
    pub missing: u64,
}

/// Decode the dispatch command at `offset` of a dispatch byte stream whose
/// payloads may continue past the end of `bytes` (they arrive by later
/// relays); `missing` says how much is still to come. The payload rule
/// (`DispatchHeader::payload_rule`) is checked when its bytes are in
/// `bytes`; a caller that gets the rest elsewhere checks it there
/// (`DispatchHeader::check_payload`).
pub fn decode_dispatch_partial(bytes: &[u8], offset: usize) -> Result<(DispatchCmd<'_>, usize), DecodeError> {
    if offset % L1_ALIGNMENT != 0 {
        return Err(DecodeError { offset, kind: DecodeErrorKind::Misaligned { align: L1_ALIGNMENT } });
    }
    let header = DispatchHeader::parse(header_at(bytes, offset)?).map_err(|kind| DecodeError { offset, kind })?;
    let start = offset + CMD_HEADER_SIZE;
    let want = header.payload_len();
    let have = (bytes.len() - start) as u64;
    let take = want.min(have) as usize;
    let payload = &bytes[start..start + take];
    let missing = want - take as u64;
    // The dispatcher checks these bytes before it acts on the rest (a
    // packed write's destinations before its blocks), so they are checked
    // here once present, whatever is still to come.
    if header.payload_rule().is_some_and(|r| take as u64 >= r.len) {
        header.check_payload(payload).map_err(|kind| DecodeError { offset, kind })?;
    }
    Ok((DispatchCmd { header, payload, missing }, start + take))
}

/// Decode the dispatch command at `offset`; its whole payload must be present.
pub fn decode_dispatch(bytes: &[u8], offset: usize) -> Result<(DispatchCmd<'_>, usize), DecodeError> {
    let (cmd, next) = decode_dispatch_partial(bytes, offset)?;
    if cmd.missing != 0 {
        let available = (bytes.len() - offset) as u64;
        let needed = available + cmd.missing;
        return Err(DecodeError { offset, kind: DecodeErrorKind::Truncated { needed, available } });
    }
    Ok((cmd, next))
}

/// Iterator over the dispatch commands of a complete stream (e.g. one
/// `RELAY_INLINE` payload). Stops after the first error.
pub struct DispatchStream<'a> {
    bytes: &'a [u8],
    offset: usize,
    failed: bool,
}

impl<'a> DispatchStream<'a> {
    pub fn new(bytes: &'a [u8]) -> Self {
        Self { bytes, offset: 0, failed: false }
    }
}

impl<'a> Iterator for DispatchStream<'a> {
    type Item = Result<(usize, DispatchCmd<'a>), DecodeError>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.offset >= self.bytes.len() {
            return None;
        }
        match decode_dispatch(self.bytes, self.offset) {
            Ok((cmd, next)) => {
                let at = self.offset;
                self.offset = next;
                Some(Ok((at, cmd)))
            }
            Err(e) => {
                self.failed = true;
                Some(Err(e))
            }
        }
    }
}

/// Iterator over the prefetch commands of an issue-queue byte stream.
pub struct PrefetchStream<'a> {
    bytes: &'a [u8],
    offset: usize,
    failed: bool,
}

impl<'a> PrefetchStream<'a> {
    pub fn new(bytes: &'a [u8]) -> Self {
        Self { bytes, offset: 0, failed: false }
    }
}

impl<'a> Iterator for PrefetchStream<'a> {
    type Item = Result<(usize, PrefetchCmd<'a>), DecodeError>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.offset >= self.bytes.len() {
            return None;
        }
        match decode_prefetch(self.bytes, self.offset) {
            Ok((cmd, next)) => {
                let at = self.offset;
                self.offset = next;
                Some(Ok((at, cmd)))
            }
            Err(e) => {
                self.failed = true;
                Some(Err(e))
            }
        }
    }
}

/// Formats a raw NOC address as `(x,y)+0xlocal` or `(x,y)..(x,y)+0xlocal`.
pub struct NocFmt(pub u64);

impl fmt::Display for NocFmt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let a = NocAddr(self.0);
        let (s, e) = a.rect();
        if a.is_multicast() {
            write!(f, "({},{})..({},{})+0x{:x}", s.x, s.y, e.x, e.y, a.local())
        } else {
            write!(f, "({},{})+0x{:x}", s.x, s.y, a.local())
        }
    }
}
