//! The wire protocol between `cqlab sim serve` and its clients.
//!
//! Every message is a frame: a little-endian `u32` payload length, then the
//! payload (at most [`MAX_FRAME`] bytes). A request payload is an opcode
//! byte and its fields (integers little-endian). A reply payload is a status
//! byte (0 ok, 1 error), the device time (`u64`), then the body (ok) or a
//! UTF-8 message (error).
//!
//! | op | request fields | ok body | who may send it |
//! |---|---|---|---|
//! | 1 HELLO | version u32, client pid u32 | [`ChipInfo`] | anyone while no other connection owns the device; makes the sender the owner |
//! | 2 WRITE | NOC address u64 (NOC0, translated coordinates), data (rest, at most [`MAX_DATA`]) | — (charged as a host write through a TLB window) | the owner |
//! | 3 READ | NOC address u64, length u32 (at most [`MAX_DATA`]) | data (charged as a host read) | the owner |
//! | 4 POLL | cycles u64 | — (the time is in every reply) | the owner |
//! | 5 CORE_DEBUG | tile (packed translated coordinates) u32, core u8 (`Processor::index`) | present u8, pc u32, halt (present u8, len u32, UTF-8), n u32, n x pc u32, in reset u8 (since version 4) | anyone (read-only) |
//! | 6 DETACH | — | — | the owner (ends its ownership) |
//! | 7 RESET | — | — (power-on state) | the owner |
//! | 8 STOP | force u8 | — (the daemon exits after replying) | the owner, anyone while none owns the device, anyone with force = 1 |
//! | 9 DIGEST | — | device-state digest u64 | anyone (read-only) |
//! | 10 DRAM_TRAFFIC | reset u8 | read bytes u64, written bytes u64 (before a reset) | the owner |
//! | 11 STATUS | — | [`Status`] | anyone (read-only) |
//! | 12 PEEK | NOC address u64, length u32 (at most [`MAX_DATA`]) | data, read without advancing or changing the device | anyone (read-only) |
//! | 13 BAR_WRITE | BAR u8, offset u64, data (rest, at most [`MAX_DATA`]) | — (`Chip::bar_write`: TLB windows and registers as the chip lays BAR0/BAR4 out) | the owner |
//! | 14 BAR_READ | BAR u8, offset u64, length u32 (at most [`MAX_DATA`]) | data (`Chip::bar_read`) | the owner |
//! | 15 L0_CACHE | — | [`L0View`] (since the last power-on reset) | anyone (read-only) |
//!
//! "Anyone" means any connection of the daemon's own uid: the daemon
//! refuses every other peer (`SO_PEERCRED`) before it reads a frame.

use std::io::{self, Read, Write};

/// Version 6: [`TimingModel`] says whether reads of host memory pass
/// unsent writes. Version 5: L0_CACHE's first stale hit carries its cycle. Version 4:
/// [`ChipInfo`] names the timing model, CORE_DEBUG says whether
/// the core is held in reset, L0_CACHE. Version 3: the real chips (board and harvesting in [`ChipInfo`], cores
/// named by tile and processor, BAR_WRITE and BAR_READ). Version 2 added
/// server-enforced ownership, STOP's force flag, STATUS, PEEK.
pub const VERSION: u32 = 6;
/// Largest data part of a WRITE, or length of a READ or PEEK: bigger
/// transfers are split by the client.
pub const MAX_DATA: usize = 1 << 20;

/// The words of the refusal a daemon at its connection cap sends, which a
/// client waiting (`?wait`) takes as "retry" (the refusal is the reply's
/// message: the protocol has no error codes).
pub const CONNECTION_CAP_REFUSAL: &str = "connections already open";
/// Largest payload either side accepts (a WRITE of [`MAX_DATA`] bytes plus
/// its header, or a reply carrying that much).
pub const MAX_FRAME: usize = MAX_DATA + 64;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Request {
    Hello {
        version: u32,
        pid: u32,
    },
    Write {
        addr: u64,
        data: Vec<u8>,
    },
    Read {
        addr: u64,
        len: u32,
    },
    Poll {
        cycles: u64,
    },
    /// The core `processor` (`Processor::index`) of the tile at packed
    /// translated coordinates `tile`.
    CoreDebug {
        tile: u32,
        processor: u8,
    },
    Detach,
    Reset,
    Stop {
        force: bool,
    },
    Digest,
    DramTraffic {
        reset: bool,
    },
    Status,
    Peek {
        addr: u64,
        len: u32,
    },
    BarWrite {
        bar: u8,
        offset: u64,
        data: Vec<u8>,
    },
    BarRead {
        bar: u8,
        offset: u64,
        len: u32,
    },
    L0Cache,
}

impl Request {
    /// Name for error messages.
    pub fn name(&self) -> &'static str {
        match self {
            Request::Hello { .. } => "HELLO",
            Request::Write { .. } => "WRITE",
            Request::Read { .. } => "READ",
            Request::Poll { .. } => "POLL",
            Request::CoreDebug { .. } => "CORE_DEBUG",
            Request::Detach => "DETACH",
            Request::Reset => "RESET",
            Request::Stop { .. } => "STOP",
            Request::Digest => "DIGEST",
            Request::DramTraffic { .. } => "DRAM_TRAFFIC",
            Request::Status => "STATUS",
            Request::Peek { .. } => "PEEK",
            Request::BarWrite { .. } => "BAR_WRITE",
            Request::BarRead { .. } => "BAR_READ",
            Request::L0Cache => "L0_CACHE",
        }
    }

    /// Requests that only read, which any same-uid connection may send
    /// without owning the device.
    pub fn is_read_only(&self) -> bool {
        matches!(
            self,
            Request::CoreDebug { .. } | Request::Digest | Request::Status | Request::Peek { .. } | Request::L0Cache
        )
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(16);
        match self {
            Request::Hello { version, pid } => {
                b.push(1);
                b.extend(version.to_le_bytes());
                b.extend(pid.to_le_bytes());
            }
            Request::Write { addr, data } => {
                b.reserve(data.len());
                b.push(2);
                b.extend(addr.to_le_bytes());
                b.extend_from_slice(data);
            }
            Request::Read { addr, len } => {
                b.push(3);
                b.extend(addr.to_le_bytes());
                b.extend(len.to_le_bytes());
            }
            Request::Poll { cycles } => {
                b.push(4);
                b.extend(cycles.to_le_bytes());
            }
            Request::CoreDebug { tile, processor } => {
                b.push(5);
                b.extend(tile.to_le_bytes());
                b.push(*processor);
            }
            Request::Detach => b.push(6),
            Request::Reset => b.push(7),
            Request::Stop { force } => {
                b.push(8);
                b.push(*force as u8);
            }
            Request::Digest => b.push(9),
            Request::DramTraffic { reset } => {
                b.push(10);
                b.push(*reset as u8);
            }
            Request::Status => b.push(11),
            Request::Peek { addr, len } => {
                b.push(12);
                b.extend(addr.to_le_bytes());
                b.extend(len.to_le_bytes());
            }
            Request::BarWrite { bar, offset, data } => {
                b.reserve(data.len());
                b.push(13);
                b.push(*bar);
                b.extend(offset.to_le_bytes());
                b.extend_from_slice(data);
            }
            Request::BarRead { bar, offset, len } => {
                b.push(14);
                b.push(*bar);
                b.extend(offset.to_le_bytes());
                b.extend(len.to_le_bytes());
            }
            Request::L0Cache => b.push(15),
        }
        b
    }

    pub fn decode(p: &[u8]) -> Result<Self, ProtoError> {
        let mut r = Reader::new(p);
        let op = r.u8("opcode")?;
        let data_len = |len: u32, what: &'static str| {
            if len as usize > MAX_DATA {
                Err(ProtoError::TooLarge { what, len })
            } else {
                Ok(len)
            }
        };
        let req = match op {
            1 => Request::Hello { version: r.u32("version")?, pid: r.u32("pid")? },
            2 => {
                let addr = r.u64("address")?;
                let data = r.rest();
                data_len(u32::try_from(data.len()).unwrap_or(u32::MAX), "WRITE")?;
                Request::Write { addr, data: data.to_vec() }
            }
            3 => Request::Read { addr: r.u64("address")?, len: data_len(r.u32("length")?, "READ")? },
            4 => Request::Poll { cycles: r.u64("cycles")? },
            5 => Request::CoreDebug { tile: r.u32("tile")?, processor: r.u8("core")? },
            6 => Request::Detach,
            7 => Request::Reset,
            8 => Request::Stop {
                force: match r.u8("force")? {
                    0 => false,
                    1 => true,
                    f => return Err(ProtoError::BadFlag { what: "STOP force flag", value: f }),
                },
            },
            9 => Request::Digest,
            10 => Request::DramTraffic {
                reset: match r.u8("reset")? {
                    0 => false,
                    1 => true,
                    f => return Err(ProtoError::BadFlag { what: "DRAM_TRAFFIC reset flag", value: f }),
                },
            },
            11 => Request::Status,
            12 => Request::Peek { addr: r.u64("address")?, len: data_len(r.u32("length")?, "PEEK")? },
            13 => {
                let (bar, offset) = (r.u8("BAR")?, r.u64("offset")?);
                let data = r.rest();
                data_len(u32::try_from(data.len()).unwrap_or(u32::MAX), "BAR_WRITE")?;
                Request::BarWrite { bar, offset, data: data.to_vec() }
            }
            14 => Request::BarRead {
                bar: r.u8("BAR")?,
                offset: r.u64("offset")?,
                len: data_len(r.u32("length")?, "BAR_READ")?,
            },
            15 => Request::L0Cache,
            _ => return Err(ProtoError::UnknownOpcode(op)),
        };
        r.end()?;
        Ok(req)
    }
}

/// What the daemon simulates (HELLO's answer).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChipInfo {
    pub version: u32,
    pub daemon_pid: u32,
    pub seed: u64,
    /// The board (`soc::Board::name`, as `--chip` takes it).
    pub board: String,
    /// Its harvesting (`soc::Harvesting`'s text form, as `--harvest` takes it).
    pub harvesting: String,
    pub sysmem_size: u64,
    /// Pid of the previous client if it ended without DETACH (killed),
    /// else 0.
    pub recovered_from: u32,
    /// The timing model it runs.
    pub model: TimingModel,
}

/// The timing-model switches of a daemon's `SimConfig`, one bit each on the
/// wire, so a client reports the model it ran on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TimingModel {
    pub exact_time: bool,
    pub pipelined_loads: bool,
    pub link_contention: bool,
    pub icache: bool,
    pub l0_data_cache: bool,
    pub reads_pass_unsent: bool,
}

impl TimingModel {
    pub fn of(cfg: &crate::config::SimConfig) -> TimingModel {
        TimingModel {
            exact_time: cfg.exact_time,
            pipelined_loads: cfg.pipelined_loads,
            link_contention: cfg.noc.link_contention,
            icache: cfg.icache,
            l0_data_cache: cfg.l0_data_cache,
            reads_pass_unsent: cfg.noc.reads_pass_unsent,
        }
    }

    fn bits(self) -> u8 {
        [
            self.exact_time,
            self.pipelined_loads,
            self.link_contention,
            self.icache,
            self.l0_data_cache,
            self.reads_pass_unsent,
        ]
        .iter()
        .enumerate()
        .fold(0, |b, (i, &on)| b | (on as u8) << i)
    }

    fn from_bits(b: u8) -> Result<TimingModel, ProtoError> {
        if b >> 6 != 0 {
            return Err(ProtoError::BadFlag { what: "timing model bits", value: b });
        }
        let on = |i: u8| b & (1 << i) != 0;
        Ok(TimingModel {
            exact_time: on(0),
            pipelined_loads: on(1),
            link_contention: on(2),
            icache: on(3),
            l0_data_cache: on(4),
            reads_pass_unsent: on(5),
        })
    }
}

fn put_str(b: &mut Vec<u8>, s: &str) {
    b.extend((s.len() as u32).to_le_bytes());
    b.extend(s.as_bytes());
}

impl ChipInfo {
    pub fn encode(&self) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend(self.version.to_le_bytes());
        b.extend(self.daemon_pid.to_le_bytes());
        b.extend(self.seed.to_le_bytes());
        put_str(&mut b, &self.board);
        put_str(&mut b, &self.harvesting);
        b.extend(self.sysmem_size.to_le_bytes());
        b.extend(self.recovered_from.to_le_bytes());
        // Version 3 had no model byte (`decode` reads it from version 4 on).
        if self.version > 3 {
            b.push(self.model.bits());
        }
        b
    }

    pub fn decode(p: &[u8]) -> Result<Self, ProtoError> {
        let mut r = Reader::new(p);
        let version = r.u32("version")?;
        let info = ChipInfo {
            version,
            daemon_pid: r.u32("daemon pid")?,
            seed: r.u64("seed")?,
            board: r.string("board")?,
            harvesting: r.string("harvesting")?,
            sysmem_size: r.u64("sysmem size")?,
            recovered_from: r.u32("recovered pid")?,
            // Read to its end so that a client tells an older daemon by its
            // version, not by a short reply (version 3 had no model byte).
            model: match version {
                ..=3 => TimingModel::default(),
                _ => TimingModel::from_bits(r.u8("timing model")?)?,
            },
        };
        r.end()?;
        Ok(info)
    }
}

/// A core's debug view on the wire.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CoreView {
    pub pc: u32,
    pub halt: Option<String>,
    pub last_pcs: Vec<u32>,
    /// Held in soft reset (a halt it shows is from before it was held).
    pub in_reset: bool,
}

impl CoreView {
    pub fn encode(view: Option<&CoreView>) -> Vec<u8> {
        let mut b = Vec::new();
        let Some(v) = view else {
            b.push(0);
            return b;
        };
        b.push(1);
        b.extend(v.pc.to_le_bytes());
        match &v.halt {
            Some(h) => {
                b.push(1);
                b.extend((h.len() as u32).to_le_bytes());
                b.extend(h.as_bytes());
            }
            None => b.push(0),
        }
        b.extend((v.last_pcs.len() as u32).to_le_bytes());
        for pc in &v.last_pcs {
            b.extend(pc.to_le_bytes());
        }
        b.push(v.in_reset as u8);
        b
    }

    pub fn decode(p: &[u8]) -> Result<Option<CoreView>, ProtoError> {
        let mut r = Reader::new(p);
        if r.u8("present")? == 0 {
            r.end()?;
            return Ok(None);
        }
        let pc = r.u32("pc")?;
        let halt = match r.u8("halt present")? {
            0 => None,
            _ => {
                let n = r.u32("halt length")? as usize;
                Some(String::from_utf8_lossy(r.bytes(n, "halt reason")?).into_owned())
            }
        };
        let n = r.u32("pc count")? as usize;
        let last_pcs = (0..n).map(|_| r.u32("pc")).collect::<Result<_, _>>()?;
        let in_reset = match r.u8("in reset")? {
            0 => false,
            1 => true,
            f => return Err(ProtoError::BadFlag { what: "CORE_DEBUG in-reset flag", value: f }),
        };
        r.end()?;
        Ok(Some(CoreView { pc, halt, last_pcs, in_reset }))
    }
}

/// L0_CACHE's answer: what the cores' L0 data caches did (`Chip::l0_cache`).
/// On the wire: present u8 (0: the model has no L0 caches), hits u64, stale
/// hits u64, first stale present u8, then its tile u32 (packed translated
/// coordinates), core u8 (`Processor::index`), pc u32, address u32, device
/// cycle u64 (since version 5).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct L0View {
    pub hits: u64,
    pub stale_hits: u64,
    /// The first stale hit in device time: tile, core, PC, address, cycle.
    pub first_stale: Option<(u32, u8, u32, u32, u64)>,
}

impl L0View {
    pub fn encode(view: Option<&L0View>) -> Vec<u8> {
        let Some(v) = view else { return vec![0] };
        let mut b = vec![1];
        b.extend(v.hits.to_le_bytes());
        b.extend(v.stale_hits.to_le_bytes());
        match v.first_stale {
            Some((tile, processor, pc, addr, cycle)) => {
                b.push(1);
                b.extend(tile.to_le_bytes());
                b.push(processor);
                b.extend(pc.to_le_bytes());
                b.extend(addr.to_le_bytes());
                b.extend(cycle.to_le_bytes());
            }
            None => b.push(0),
        }
        b
    }

    pub fn decode(p: &[u8]) -> Result<Option<L0View>, ProtoError> {
        let mut r = Reader::new(p);
        if r.u8("present")? == 0 {
            r.end()?;
            return Ok(None);
        }
        let (hits, stale_hits) = (r.u64("hits")?, r.u64("stale hits")?);
        let first_stale = match r.u8("first stale present")? {
            0 => None,
            _ => Some((r.u32("tile")?, r.u8("core")?, r.u32("pc")?, r.u32("address")?, r.u64("cycle")?)),
        };
        r.end()?;
        Ok(Some(L0View { hits, stale_hits, first_stale }))
    }
}

/// A reply: `Ok(body)` or `Err(message)`, with the device time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reply {
    pub now: u64,
    pub result: Result<Vec<u8>, String>,
}

impl Reply {
    pub fn encode(&self) -> Vec<u8> {
        let (status, body) = match &self.result {
            Ok(b) => (0u8, b.as_slice()),
            Err(m) => (1u8, m.as_bytes()),
        };
        let mut b = Vec::with_capacity(9 + body.len());
        b.push(status);
        b.extend(self.now.to_le_bytes());
        b.extend_from_slice(body);
        b
    }

    pub fn decode(p: &[u8]) -> Result<Self, ProtoError> {
        let mut r = Reader::new(p);
        let status = r.u8("status")?;
        let now = r.u64("device time")?;
        let body = r.rest();
        let result = match status {
            0 => Ok(body.to_vec()),
            1 => Err(String::from_utf8_lossy(body).into_owned()),
            s => return Err(ProtoError::BadFlag { what: "reply status", value: s }),
        };
        Ok(Reply { now, result })
    }
}

/// STATUS's answer: the chip, who owns it, and how many connections are open.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Status {
    pub chip: ChipInfo,
    /// Pid of the owning client (from its socket credentials), 0 if none.
    pub owner_pid: u32,
    /// Open connections, the asking one included.
    pub connections: u32,
}

impl Status {
    pub fn encode(&self) -> Vec<u8> {
        let mut b = self.chip.encode();
        b.extend(self.owner_pid.to_le_bytes());
        b.extend(self.connections.to_le_bytes());
        b
    }

    pub fn decode(p: &[u8]) -> Result<Self, ProtoError> {
        let n = p.len().checked_sub(8).ok_or(ProtoError::Truncated {
            what: "STATUS reply",
            need: 8,
            at: 0,
            left: p.len(),
        })?;
        let chip = ChipInfo::decode(&p[..n])?;
        let mut r = Reader::new(&p[n..]);
        let status = Status { chip, owner_pid: r.u32("owner pid")?, connections: r.u32("connections")? };
        r.end()?;
        Ok(status)
    }
}

/// Writes one frame.
pub fn write_frame(w: &mut impl Write, payload: &[u8]) -> io::Result<()> {
    let len = u32::try_from(payload.len()).ok().filter(|&n| n as usize <= MAX_FRAME).ok_or_else(|| {
        io::Error::new(io::ErrorKind::InvalidInput, format!("frame of {} bytes > {MAX_FRAME}", payload.len()))
    })?;
    w.write_all(&len.to_le_bytes())?;
    w.write_all(payload)?;
    w.flush()
}

/// Reads one frame; `Ok(None)` on a clean end of stream before a frame.
///
/// The payload buffer grows only as bytes arrive, so a peer that announces
/// a large frame and sends a few bytes costs only those bytes.
pub fn read_frame(r: &mut impl Read) -> io::Result<Option<Vec<u8>>> {
    let mut len = [0u8; 4];
    let mut got = 0;
    while got < 4 {
        // A socket with a receive timeout returns EINTR when its process is
        // stopped and continued (Ctrl-Z, `scontrol suspend`): read again
        // (helper-33: the run failed "Interrupted system call").
        match r.read(&mut len[got..]) {
            Ok(0) if got == 0 => return Ok(None),
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    let len = u32::from_le_bytes(len) as usize;
    if len > MAX_FRAME {
        return Err(io::Error::new(io::ErrorKind::InvalidData, format!("frame of {len} bytes > {MAX_FRAME}")));
    }
    let payload = read_payload(r, len)?;
    if payload.len() != len {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            format!("frame announced {len} bytes, the stream ended after {}", payload.len()),
        ));
    }
    Ok(Some(payload))
}

/// Up to `len` bytes, the buffer growing only as they arrive: a peer that
/// announces a large frame and sends little costs little.
fn read_payload(r: &mut impl Read, len: usize) -> io::Result<Vec<u8>> {
    let mut payload = Vec::with_capacity(len.min(64 * 1024));
    r.take(len as u64).read_to_end(&mut payload)?;
    Ok(payload)
}

/// Why a message cannot be decoded.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ProtoError {
    #[error("message truncated: {what} needs {need} bytes at offset {at}, {left} left")]
    Truncated { what: &'static str, need: usize, at: usize, left: usize },
    #[error("{bytes} unexpected bytes at the end of the message (offset {at})")]
    Trailing { bytes: usize, at: usize },
    #[error("{what} of {len} bytes exceeds the limit of {MAX_DATA} per request")]
    TooLarge { what: &'static str, len: u32 },
    #[error("{what} {value} (expected 0 or 1)")]
    BadFlag { what: &'static str, value: u8 },
    #[error("unknown opcode {0} (expected 1..=15)")]
    UnknownOpcode(u8),
    #[error("{what} is not UTF-8")]
    NotUtf8 { what: &'static str },
}

struct Reader<'a> {
    p: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn new(p: &'a [u8]) -> Self {
        Reader { p, at: 0 }
    }
    fn bytes(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], ProtoError> {
        let left = self.p.len() - self.at;
        let s = self.p.get(self.at..self.at + n).ok_or(ProtoError::Truncated { what, need: n, at: self.at, left })?;
        self.at += n;
        Ok(s)
    }
    fn u8(&mut self, what: &'static str) -> Result<u8, ProtoError> {
        Ok(self.bytes(1, what)?[0])
    }
    fn u32(&mut self, what: &'static str) -> Result<u32, ProtoError> {
        Ok(u32::from_le_bytes(self.bytes(4, what)?.try_into().expect("4 bytes")))
    }
    fn u64(&mut self, what: &'static str) -> Result<u64, ProtoError> {
        Ok(u64::from_le_bytes(self.bytes(8, what)?.try_into().expect("8 bytes")))
    }
    fn string(&mut self, what: &'static str) -> Result<String, ProtoError> {
        let n = self.u32(what)? as usize;
        let b = self.bytes(n, what)?;
        String::from_utf8(b.to_vec()).map_err(|_| ProtoError::NotUtf8 { what })
    }
    fn rest(&mut self) -> &'a [u8] {
        let s = &self.p[self.at..];
        self.at = self.p.len();
        s
    }
    fn end(&self) -> Result<(), ProtoError> {
        match self.p.len() - self.at {
            0 => Ok(()),
            n => Err(ProtoError::Trailing { bytes: n, at: self.at }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_and_replies_round_trip() {
        let reqs = [
            Request::Hello { version: VERSION, pid: 42 },
            Request::Write { addr: 0x1234_5678_9abc, data: vec![1, 2, 3] },
            Request::Read { addr: 7, len: 64 },
            Request::Poll { cycles: 500 },
            Request::CoreDebug { tile: 0x1312, processor: 1 },
            Request::Detach,
            Request::Reset,
            Request::Stop { force: false },
            Request::Stop { force: true },
            Request::Digest,
            Request::DramTraffic { reset: true },
            Request::Status,
            Request::Peek { addr: 9, len: 4 },
            Request::BarWrite { bar: 0, offset: 0x1FC0_0000, data: vec![1, 0, 0, 0] },
            Request::BarRead { bar: 4, offset: 1 << 32, len: 64 },
            Request::L0Cache,
        ];
        for r in reqs {
            assert_eq!(Request::decode(&r.encode()), Ok(r));
        }
        assert_eq!(Request::decode(&[16]), Err(ProtoError::UnknownOpcode(16)));
        assert!(matches!(Request::decode(&[3, 1, 2]), Err(ProtoError::Truncated { what: "address", .. })));
        assert_eq!(Request::decode(&[6, 0]), Err(ProtoError::Trailing { bytes: 1, at: 1 }));
        assert_eq!(Request::decode(&[8, 2]), Err(ProtoError::BadFlag { what: "STOP force flag", value: 2 }));
        let big = Request::Read { addr: 0, len: MAX_DATA as u32 + 1 }.encode();
        assert!(matches!(Request::decode(&big), Err(ProtoError::TooLarge { what: "READ", .. })), "READ over MAX_DATA");
        let info = ChipInfo {
            version: VERSION,
            daemon_pid: 9,
            seed: 3,
            board: "blackhole-p100a".into(),
            harvesting: "cols=7,10,dram=3,eth=all".into(),
            sysmem_size: 1 << 20,
            recovered_from: 0,
            model: TimingModel {
                exact_time: true,
                l0_data_cache: true,
                reads_pass_unsent: true,
                ..TimingModel::default()
            },
        };
        assert_eq!(ChipInfo::decode(&info.encode()), Ok(info.clone()));
        let mut bad_model = info.encode();
        *bad_model.last_mut().unwrap() = 0x40;
        assert_eq!(ChipInfo::decode(&bad_model), Err(ProtoError::BadFlag { what: "timing model bits", value: 0x40 }));
        let mut older = info.encode();
        older[..4].copy_from_slice(&3u32.to_le_bytes());
        older.pop();
        assert_eq!(
            ChipInfo::decode(&older).map(|i| i.version),
            Ok(3),
            "a version-3 HELLO reply decodes to its version"
        );
        assert_eq!(ChipInfo::decode(&older).unwrap().encode(), older, "and encodes back as version 3 did");
        let status = Status { chip: info, owner_pid: 77, connections: 3 };
        assert_eq!(Status::decode(&status.encode()), Ok(status));
        assert!(Status::decode(&[1, 2]).is_err());
        let view = CoreView { pc: 0x100, halt: Some("ecall".into()), last_pcs: vec![1, 2], in_reset: true };
        assert_eq!(CoreView::decode(&CoreView::encode(Some(&view))), Ok(Some(view)));
        assert_eq!(CoreView::decode(&CoreView::encode(None)), Ok(None));
        for l0 in [
            L0View { hits: 5, stale_hits: 1, first_stale: Some((0x1312, 2, 0x40, 0x9000, 123_456)) },
            L0View { hits: 7, stale_hits: 0, first_stale: None },
        ] {
            assert_eq!(L0View::decode(&L0View::encode(Some(&l0))), Ok(Some(l0)));
        }
        assert_eq!(L0View::decode(&L0View::encode(None)), Ok(None));
        assert!(L0View::decode(&[1, 2]).is_err());
        for rep in [Reply { now: 5, result: Ok(vec![1]) }, Reply { now: 6, result: Err("no".into()) }] {
            assert_eq!(Reply::decode(&rep.encode()), Ok(rep));
        }
        let mut wire = Vec::new();
        write_frame(&mut wire, b"abc").unwrap();
        let mut r = &wire[..];
        assert_eq!(read_frame(&mut r).unwrap(), Some(b"abc".to_vec()));
        assert_eq!(read_frame(&mut r).unwrap(), None);
        let mut cut = &wire[..5];
        assert!(read_frame(&mut cut).is_err());
    }

    /// Reads one byte a call, with an EINTR before every byte: a stopped
    /// and continued process's socket with a receive timeout.
    struct Interrupting<'a> {
        bytes: &'a [u8],
        interrupt: bool,
    }

    impl Read for Interrupting<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            self.interrupt = !self.interrupt;
            if self.interrupt {
                return Err(io::ErrorKind::Interrupted.into());
            }
            let n = self.bytes.len().min(buf.len()).min(1);
            buf[..n].copy_from_slice(&self.bytes[..n]);
            self.bytes = &self.bytes[n..];
            Ok(n)
        }
    }

    #[test]
    fn an_interrupted_read_is_read_again() {
        let mut wire = Vec::new();
        write_frame(&mut wire, b"abc").unwrap();
        let mut r = Interrupting { bytes: &wire, interrupt: false };
        assert_eq!(read_frame(&mut r).unwrap(), Some(b"abc".to_vec()));
        assert_eq!(read_frame(&mut r).unwrap(), None);
    }

    #[test]
    fn an_announced_frame_costs_only_the_bytes_that_arrive() {
        // A peer announces the largest frame and sends 3 bytes: the reader
        // fails on the short stream without having reserved the whole frame.
        let mut wire = (MAX_FRAME as u32).to_le_bytes().to_vec();
        wire.extend([1, 2, 3]);
        let err = read_frame(&mut &wire[..]).unwrap_err();
        assert!(err.to_string().contains("ended after 3"), "{err}");
        let got = read_payload(&mut &wire[4..], MAX_FRAME).unwrap();
        assert!(got.len() == 3 && got.capacity() <= 64 * 1024, "reserved {} bytes for 3", got.capacity());
        let over = (MAX_FRAME as u32 + 1).to_le_bytes();
        let err = read_frame(&mut &over[..]).unwrap_err();
        assert!(err.to_string().contains(&format!("> {MAX_FRAME}")), "{err}");
        assert!(write_frame(&mut Vec::new(), &vec![0; MAX_FRAME + 1]).is_err());
    }
}
