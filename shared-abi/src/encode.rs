//! Encoder: builds issue-queue byte streams (prefetch commands with nested
//! dispatch commands) into a caller-provided buffer, padded the way the
//! decoder and the firmware require. No allocation, so the host can encode
//! straight into a mapped issue queue.
//!
//! Every command is validated by the decoder's own header checks before it is
//! written: the encoder cannot produce bytes the device would reject.

use crate::completion::EventRecord;
use crate::decode::{DecodeErrorKind, DispatchHeader, PrefetchHeader};
use crate::dispatch::{
    DispatchCmdId, GoCmd, LaunchCmd, PackedFlags, PackedSubCmd, ValueCmd, WaitCmd, WaitFlags, WriteHostCmd,
    WriteHostFlags, WriteLinearCmd, WritePackedCmd,
};
use crate::noc::{Coord, NocAddr};
use crate::prefetch::{
    checksum, BareCmd, DebugCmd, ExecBufCmd, ExecBufFlags, PagedFlags, PrefetchCmdId, RelayInlineCmd, RelayLinearCmd,
    RelayPagedCmd,
};
use crate::{CMD_HEADER_SIZE, L1_ALIGNMENT, PCIE_ALIGNMENT};
use zerocopy::{Immutable, IntoBytes};

/// Why a command could not be encoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EncodeError {
    /// The buffer has no room for the command.
    Full { needed: usize, available: usize },
    /// The command's fields are invalid.
    Invalid(DecodeErrorKind),
    /// A data slice does not match the size the command declares.
    DataLength { expected: u64, found: u64 },
}

impl core::fmt::Display for EncodeError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Self::Full { needed, available } => write!(f, "buffer full: need {needed} bytes, {available} free"),
            Self::Invalid(k) => write!(f, "invalid command: {k}"),
            Self::DataLength { expected, found } => write!(f, "data is {found} bytes, command declares {expected}"),
        }
    }
}

impl core::error::Error for EncodeError {}

type Result<T = ()> = core::result::Result<T, EncodeError>;

/// Writes prefetch commands into `buf`.
pub struct Encoder<'a> {
    buf: &'a mut [u8],
    len: usize,
}

impl<'a> Encoder<'a> {
    pub fn new(buf: &'a mut [u8]) -> Self {
        Self { buf, len: 0 }
    }
    /// Bytes written so far (always a multiple of `PCIE_ALIGNMENT` between commands).
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    pub fn bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }

    fn reserve(&mut self, n: usize) -> Result<&mut [u8]> {
        let available = self.buf.len() - self.len;
        if n > available {
            return Err(EncodeError::Full { needed: n, available });
        }
        let start = self.len;
        self.len += n;
        Ok(&mut self.buf[start..start + n])
    }

    /// Writes a header alone, padded to one PCIe line.
    fn header_only<T: IntoBytes + Immutable>(&mut self, cmd: &T) -> Result {
        check_prefetch(cmd.as_bytes())?;
        let out = self.reserve(PCIE_ALIGNMENT)?;
        out[..CMD_HEADER_SIZE].copy_from_slice(cmd.as_bytes());
        out[CMD_HEADER_SIZE..].fill(0);
        Ok(())
    }

    /// `RELAY_INLINE` (or `_NOFLUSH` when `flush` is false) whose payload is the
    /// dispatch commands `build` writes. On error nothing is kept.
    pub fn relay_inline(&mut self, flush: bool, build: impl FnOnce(&mut DispatchWriter<'_>) -> Result) -> Result {
        let start = self.len;
        let body = &mut self.buf[start..];
        let body_len = body.len();
        if body_len < CMD_HEADER_SIZE {
            return Err(EncodeError::Full { needed: PCIE_ALIGNMENT, available: body_len });
        }
        let (head, rest) = body.split_at_mut(CMD_HEADER_SIZE);
        let mut w = DispatchWriter { buf: &mut *rest, len: 0 };
        build(&mut w)?;
        let length = w.len;
        let stride = align(CMD_HEADER_SIZE + length, PCIE_ALIGNMENT);
        let id = if flush { PrefetchCmdId::RelayInline } else { PrefetchCmdId::RelayInlineNoflush };
        let cmd = RelayInlineCmd { id: id as u8, length: length as u32, stride: stride as u32, ..Default::default() };
        check_prefetch(cmd.as_bytes())?;
        if stride > body_len {
            return Err(EncodeError::Full { needed: stride, available: body_len });
        }
        head.copy_from_slice(cmd.as_bytes());
        rest[length..stride - CMD_HEADER_SIZE].fill(0);
        self.len = start + stride;
        Ok(())
    }

    /// `RELAY_LINEAR`: relay `length` bytes read from `src`.
    pub fn relay_linear(&mut self, src: NocAddr, length: u32) -> Result {
        let id = PrefetchCmdId::RelayLinear as u8;
        self.header_only(&RelayLinearCmd { id, length, src: src.0, ..Default::default() })
    }

    /// `RELAY_PAGED`: relay `pages` pages from `start_page` of an interleaved buffer.
    pub fn relay_paged(
        &mut self,
        flags: PagedFlags,
        base_addr: u32,
        page_size: u32,
        start_page: u16,
        pages: u32,
    ) -> Result {
        let id = PrefetchCmdId::RelayPaged as u8;
        self.header_only(&RelayPagedCmd { id, flags: flags.bits(), start_page, base_addr, page_size, pages })
    }

    pub fn stall(&mut self) -> Result {
        self.header_only(&bare(PrefetchCmdId::Stall as u8))
    }

    /// `EXEC_BUF`: the fetch entry holding it must carry the stall flag.
    pub fn exec_buf(&mut self, base_addr: u32, page_size: u32, pages: u32) -> Result {
        self.exec_buf_with_head(base_addr, page_size, pages, &[])
    }

    /// `EXEC_BUF` carrying the trace's first bytes inline (`head`: the
    /// trace's own first `head.len()` bytes, a multiple of `PCIE_ALIGNMENT`
    /// and at most `EXEC_BUF_HEAD_MAX`). On error nothing is kept.
    pub fn exec_buf_with_head(&mut self, base_addr: u32, page_size: u32, pages: u32, head: &[u8]) -> Result {
        self.exec_buf_inline(base_addr, page_size, pages, head, ExecBufFlags::empty())
    }

    /// `EXEC_BUF` carrying the whole trace inline (`trace`: all of it,
    /// through its `EXEC_BUF_END`, within the limits of a head), flagged
    /// so that the prefetcher reads nothing from DRAM.
    pub fn exec_buf_whole(&mut self, base_addr: u32, page_size: u32, pages: u32, trace: &[u8]) -> Result {
        self.exec_buf_inline(base_addr, page_size, pages, trace, ExecBufFlags::WHOLE)
    }

    fn exec_buf_inline(
        &mut self,
        base_addr: u32,
        page_size: u32,
        pages: u32,
        head: &[u8],
        flags: ExecBufFlags,
    ) -> Result {
        let id = PrefetchCmdId::ExecBuf as u8;
        let too_long = || EncodeError::DataLength {
            expected: crate::prefetch::EXEC_BUF_HEAD_MAX as u64,
            found: head.len() as u64,
        };
        let n = u16::try_from(head.len()).map_err(|_| too_long())?;
        let cmd = ExecBufCmd { id, flags: flags.bits(), head: n, base_addr, page_size, pages };
        check_prefetch(cmd.as_bytes())?;
        let out = self.reserve(PCIE_ALIGNMENT + head.len())?;
        out[..CMD_HEADER_SIZE].copy_from_slice(cmd.as_bytes());
        out[CMD_HEADER_SIZE..PCIE_ALIGNMENT].fill(0);
        out[PCIE_ALIGNMENT..].copy_from_slice(head);
        Ok(())
    }

    pub fn exec_buf_end(&mut self) -> Result {
        self.header_only(&bare(PrefetchCmdId::ExecBufEnd as u8))
    }

    /// Prefetch `DEBUG` carrying `payload` and its checksum.
    pub fn debug(&mut self, payload: &[u8]) -> Result {
        let stride = align(CMD_HEADER_SIZE + payload.len(), PCIE_ALIGNMENT);
        let cmd = debug_cmd(PrefetchCmdId::Debug as u8, payload, stride);
        check_prefetch(cmd.as_bytes())?;
        let out = self.reserve(stride)?;
        write_with_payload(out, cmd.as_bytes(), payload);
        Ok(())
    }

    pub fn terminate(&mut self) -> Result {
        self.header_only(&bare(PrefetchCmdId::Terminate as u8))
    }
}

/// Writes dispatch commands into the payload of a `RELAY_INLINE`.
pub struct DispatchWriter<'b> {
    buf: &'b mut [u8],
    len: usize,
}

/// Data of a packed write.
#[derive(Clone, Copy, Debug)]
pub enum PackedData<'d> {
    /// The same bytes to every destination.
    Shared(&'d [u8]),
    /// One block per destination, all of equal length, concatenated.
    PerCore(&'d [u8]),
}

impl DispatchWriter<'_> {
    /// Bytes written so far.
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Appends `header` and `payload` (if any), validating the header and
    /// padding the payload to 16. `payload_len` is the stream payload the
    /// header declares; inline bytes may be fewer when the rest is relayed.
    fn emit<T: IntoBytes + Immutable>(&mut self, header: &T, payload: &[&[u8]]) -> Result<DispatchHeader> {
        let h: &[u8; 16] = header.as_bytes().try_into().map_err(|_| EncodeError::Invalid(bad_size()))?;
        let parsed = DispatchHeader::parse(h).map_err(EncodeError::Invalid)?;
        let inline: usize = payload.iter().map(|p| align(p.len(), L1_ALIGNMENT)).sum();
        let need = CMD_HEADER_SIZE + inline;
        let available = self.buf.len() - self.len;
        if need > available {
            return Err(EncodeError::Full { needed: need, available });
        }
        let out = &mut self.buf[self.len..self.len + need];
        out[..CMD_HEADER_SIZE].copy_from_slice(h);
        let mut at = CMD_HEADER_SIZE;
        for p in payload {
            out[at..at + p.len()].copy_from_slice(p);
            let padded = align(p.len(), L1_ALIGNMENT);
            out[at + p.len()..at + padded].fill(0);
            at += padded;
        }
        self.len += need;
        Ok(parsed)
    }

    /// `WRITE_LINEAR` of `data` to `dst` (unicast or multicast).
    pub fn write_linear(&mut self, dst: NocAddr, data: &[u8]) -> Result {
        let length = u32::try_from(data.len()).map_err(|_| EncodeError::Invalid(bad_size()))?;
        self.emit(&linear(dst, length), &[data]).map(drop)
    }

    /// `WRITE_LINEAR` of `length` bytes to `dst` that `fill` writes in place
    /// (handed exactly `length` bytes, zeroed padding follows): the data goes
    /// into the stream with no copy of its own. On error nothing is kept.
    pub fn write_linear_with(&mut self, dst: NocAddr, length: u32, fill: impl FnOnce(&mut [u8])) -> Result {
        let start = self.len;
        self.emit(&linear(dst, length), &[])?;
        let padded = align(length as usize, L1_ALIGNMENT);
        let available = self.buf.len() - self.len;
        if padded > available {
            self.len = start;
            return Err(EncodeError::Full { needed: CMD_HEADER_SIZE + padded, available: available + CMD_HEADER_SIZE });
        }
        let out = &mut self.buf[self.len..self.len + padded];
        fill(&mut out[..length as usize]);
        out[length as usize..].fill(0);
        self.len += padded;
        Ok(())
    }

    /// `WRITE_LINEAR` header only: its `length` bytes follow by a relay.
    pub fn write_linear_header(&mut self, dst: NocAddr, length: u32) -> Result {
        self.emit(&linear(dst, length), &[]).map(drop)
    }

    /// `WRITE_PAGED` of `data` (= `pages * page_size` bytes).
    pub fn write_paged(
        &mut self,
        flags: PagedFlags,
        base_addr: u32,
        page_size: u32,
        start_page: u16,
        data: &[u8],
    ) -> Result {
        let pages = if page_size == 0 { 0 } else { (data.len() / page_size as usize) as u32 };
        if pages as u64 * page_size as u64 != data.len() as u64 {
            return Err(EncodeError::DataLength {
                expected: pages as u64 * page_size as u64,
                found: data.len() as u64,
            });
        }
        let cmd = RelayPagedCmd {
            id: DispatchCmdId::WritePaged as u8,
            flags: flags.bits(),
            start_page,
            base_addr,
            page_size,
            pages,
        };
        self.emit(&cmd, &[data]).map(drop)
    }

    /// `WRITE_PAGED` header only: its pages follow by a relay.
    pub fn write_paged_header(
        &mut self,
        flags: PagedFlags,
        base_addr: u32,
        page_size: u32,
        start_page: u16,
        pages: u32,
    ) -> Result {
        let cmd = RelayPagedCmd {
            id: DispatchCmdId::WritePaged as u8,
            flags: flags.bits(),
            start_page,
            base_addr,
            page_size,
            pages,
        };
        self.emit(&cmd, &[]).map(drop)
    }

    /// `WRITE_PACKED` to L1 address `addr` on each core of `dests`.
    pub fn write_packed(&mut self, addr: u32, dests: &[Coord], data: PackedData<'_>) -> Result {
        match data {
            PackedData::Shared(d) => self.packed(addr, dests, PackedFlags::SHARED_DATA, d.len(), |_, out| {
                out.copy_from_slice(d);
            }),
            PackedData::PerCore(d) => {
                let each = if dests.is_empty() { 0 } else { d.len() / dests.len() };
                if each * dests.len() != d.len() {
                    return Err(EncodeError::DataLength {
                        expected: (each * dests.len()) as u64,
                        found: d.len() as u64,
                    });
                }
                self.write_packed_with(addr, dests, each, |i, out| out.copy_from_slice(&d[i * each..(i + 1) * each]))
            }
        }
    }

    /// `WRITE_PACKED` of a block of `each` bytes a core of `dests`, written
    /// in place by `fill(i, block)` for core `i` (the block zeroed first):
    /// no copy of the blocks beside the stream.
    pub fn write_packed_with(
        &mut self,
        addr: u32,
        dests: &[Coord],
        each: usize,
        fill: impl FnMut(usize, &mut [u8]),
    ) -> Result {
        self.packed(addr, dests, PackedFlags::empty(), each, fill)
    }

    /// A `WRITE_PACKED` of `flags` whose blocks (one, or one a core) of
    /// `size` bytes `fill` writes.
    fn packed(
        &mut self,
        addr: u32,
        dests: &[Coord],
        flags: PackedFlags,
        size: usize,
        mut fill: impl FnMut(usize, &mut [u8]),
    ) -> Result {
        let count = u16::try_from(dests.len()).map_err(|_| EncodeError::Invalid(bad_size()))?;
        let size = u32::try_from(size).map_err(|_| EncodeError::Invalid(bad_size()))?;
        let cmd = WritePackedCmd {
            id: DispatchCmdId::WritePacked as u8,
            flags: flags.bits(),
            count,
            size,
            addr,
            _reserved: 0,
        };
        // Sub-commands, then one block or one 16-aligned block per core.
        let start = self.len;
        let parsed = self.emit(&cmd, &[])?;
        let subs = align(dests.len() * core::mem::size_of::<PackedSubCmd>(), L1_ALIGNMENT);
        let blocks = if flags.is_empty() { dests.len() } else { 1 };
        let padded = align(size as usize, L1_ALIGNMENT);
        let need = subs + blocks * padded;
        let available = self.buf.len() - self.len;
        if need > available {
            self.len = start;
            return Err(EncodeError::Full { needed: need + CMD_HEADER_SIZE, available: available + CMD_HEADER_SIZE });
        }
        debug_assert_eq!(need as u64, parsed.payload_len());
        let out = &mut self.buf[self.len..self.len + need];
        out[..subs].fill(0);
        for (i, d) in dests.iter().enumerate() {
            out[4 * i..4 * i + 4].copy_from_slice(&d.packed().to_le_bytes());
        }
        if padded > 0 {
            for (b, block) in out[subs..].chunks_exact_mut(padded).enumerate() {
                block.fill(0);
                fill(b, &mut block[..size as usize]);
            }
        }
        self.len += need;
        Ok(())
    }

    /// `WRITE_HOST` with inline `data` (a data completion record).
    pub fn write_host(&mut self, tag: u32, data: &[u8]) -> Result {
        let length = u32::try_from(data.len()).map_err(|_| EncodeError::Invalid(bad_size()))?;
        self.emit(&host(WriteHostFlags::empty(), length, tag), &[data]).map(drop)
    }

    /// `WRITE_HOST` header only: its `length` bytes follow by a relay (read-back).
    pub fn write_host_header(&mut self, tag: u32, length: u32) -> Result {
        self.emit(&host(WriteHostFlags::empty(), length, tag), &[]).map(drop)
    }

    /// `WRITE_HOST` of an event completion record.
    pub fn write_event(&mut self, event: &EventRecord) -> Result {
        let len = core::mem::size_of::<EventRecord>() as u32;
        self.emit(&host(WriteHostFlags::EVENT, len, event.event_id), &[event.as_bytes()]).map(drop)
    }

    /// `WAIT`.
    pub fn wait(&mut self, flags: WaitFlags, addr: u32, count: u32) -> Result {
        let cmd = WaitCmd { id: DispatchCmdId::Wait as u8, flags: flags.bits(), addr, count, ..Default::default() };
        self.emit(&cmd, &[]).map(drop)
    }

    /// `GO`: write `signal` to `dst` (the launch mailbox of one core or a rectangle).
    pub fn go(&mut self, signal: u32, dst: NocAddr) -> Result {
        let cmd = GoCmd { id: DispatchCmdId::Go as u8, signal, dst: dst.0, ..Default::default() };
        self.emit(&cmd, &[]).map(drop)
    }

    /// `LAUNCH` of `msg` (one launch-ring entry) on the rectangle `dst`.
    pub fn launch(&mut self, dst: NocAddr, msg: &[u8]) -> Result {
        let length = u16::try_from(msg.len()).map_err(|_| EncodeError::Invalid(bad_size()))?;
        let cmd = LaunchCmd { id: DispatchCmdId::Launch as u8, length, dst: dst.0, ..Default::default() };
        self.emit(&cmd, &[msg]).map(drop)
    }

    pub fn set_write_offset(&mut self, offset: u32) -> Result {
        self.emit(&value(DispatchCmdId::SetWriteOffset, offset), &[]).map(drop)
    }

    pub fn delay(&mut self, cycles: u32) -> Result {
        self.emit(&value(DispatchCmdId::Delay, cycles), &[]).map(drop)
    }

    /// Dispatch `DEBUG` carrying `payload` and its checksum.
    pub fn debug(&mut self, payload: &[u8]) -> Result {
        let stride = align(CMD_HEADER_SIZE + payload.len(), L1_ALIGNMENT);
        self.emit(&debug_cmd(DispatchCmdId::Debug as u8, payload, stride), &[payload]).map(drop)
    }

    pub fn terminate(&mut self) -> Result {
        self.emit(&bare(DispatchCmdId::Terminate as u8), &[]).map(drop)
    }
}

fn align(n: usize, a: usize) -> usize {
    (n + a - 1) & !(a - 1)
}

fn bad_size() -> DecodeErrorKind {
    DecodeErrorKind::BadSize { field: "length", value: u64::MAX }
}

fn bare(id: u8) -> BareCmd {
    BareCmd { id, _pad: [0; 15] }
}

fn linear(dst: NocAddr, length: u32) -> WriteLinearCmd {
    WriteLinearCmd { id: DispatchCmdId::WriteLinear as u8, length, dst: dst.0, ..Default::default() }
}

fn host(flags: WriteHostFlags, length: u32, tag: u32) -> WriteHostCmd {
    WriteHostCmd { id: DispatchCmdId::WriteHost as u8, flags: flags.bits(), length, tag, ..Default::default() }
}

fn value(id: DispatchCmdId, value: u32) -> ValueCmd {
    ValueCmd { id: id as u8, value, ..Default::default() }
}

fn debug_cmd(id: u8, payload: &[u8], stride: usize) -> DebugCmd {
    DebugCmd {
        id,
        length: payload.len() as u32,
        checksum: checksum(payload),
        stride: stride as u32,
        ..Default::default()
    }
}

fn check_prefetch(h: &[u8]) -> Result {
    let h: &[u8; 16] = h.try_into().map_err(|_| EncodeError::Invalid(bad_size()))?;
    PrefetchHeader::parse(h).map(drop).map_err(EncodeError::Invalid)
}

fn write_with_payload(out: &mut [u8], header: &[u8], payload: &[u8]) {
    out[..CMD_HEADER_SIZE].copy_from_slice(header);
    out[CMD_HEADER_SIZE..CMD_HEADER_SIZE + payload.len()].copy_from_slice(payload);
    out[CMD_HEADER_SIZE + payload.len()..].fill(0);
}
