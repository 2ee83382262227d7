//! The data of a hang dump (what [`crate::hang_dump`] collects when a wait
//! gives up) and what the host waited for. A leaf module: it imports nothing
//! of the driver, so [`crate::error`] can carry a dump without an import
//! cycle. Everything is kept typed (coordinates, waypoints, error records,
//! trace kinds, chain links) and rendered to text only at the edge:
//! `Display` for people, `Serialize` for JSON.

use cqlab_abi::arch::tensix::Processor;
use cqlab_abi::firmware::FirmwareId;
use cqlab_abi::mailbox::DeviceError;
use cqlab_abi::noc::Coord;
use cqlab_abi::ring::RingPtr;
use cqlab_abi::trace::TraceKind;
use cqlab_abi::waypoint::{self, Waypoint};
use serde::ser::{SerializeStruct, Serializer};
use serde::Serialize;
use std::fmt;

/// What the host waited for when a wait gave up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Wait {
    /// A core's alive record after boot.
    Alive { core: Coord, firmware: FirmwareId },
    /// A free fetch-queue slot and `bytes` of issue queue.
    IssueSpace { cq: u8, bytes: u32 },
    /// The completion record of a read-back.
    ReadBack { cq: u8, tag: u32 },
    /// An event's completion record.
    Event { cq: u8, id: u32 },
    /// The workers launched by slow dispatch.
    SlowWorkers { cq: u8 },
    /// The completion queue's records (a corrupt one was found).
    CompletionQueue { cq: u8 },
    /// Nothing: a dump of a live device, taken without waiting, followed from a queue.
    Live { cq: u8 },
}

impl Wait {
    /// The queue whose wait this is, where the wait-for chain starts.
    pub fn cq(&self) -> Option<u8> {
        match *self {
            Wait::Alive { .. } => None,
            Wait::IssueSpace { cq, .. }
            | Wait::ReadBack { cq, .. }
            | Wait::Event { cq, .. }
            | Wait::SlowWorkers { cq }
            | Wait::CompletionQueue { cq }
            | Wait::Live { cq } => Some(cq),
        }
    }

    /// The wait without what differs between occurrences (tags, ids, sizes):
    /// equal for waits on the same thing.
    pub fn class(&self) -> String {
        match self {
            Wait::Alive { firmware, .. } => format!("alive record of {}", firmware.name()),
            Wait::IssueSpace { cq, .. } => format!("prefetch queue slot and issue queue space on CQ{cq}"),
            Wait::ReadBack { cq, .. } => format!("CQ{cq} read-back completion"),
            Wait::Event { cq, .. } => format!("completion event on CQ{cq}"),
            Wait::SlowWorkers { cq } => format!("workers launched on CQ{cq} (slow dispatch)"),
            Wait::CompletionQueue { cq } => format!("completion queue of CQ{cq}"),
            Wait::Live { cq } => format!("work on CQ{cq}"),
        }
    }
}

impl fmt::Display for Wait {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Wait::Alive { core, firmware } => write!(f, "alive record of {} on core {core}", firmware.name()),
            Wait::IssueSpace { cq, bytes } => {
                write!(f, "prefetch queue slot and {bytes} bytes of issue queue on CQ{cq}")
            }
            Wait::ReadBack { cq, tag } => write!(f, "CQ{cq} read-back completion (tag {tag})"),
            Wait::Event { cq, id } => write!(f, "CQ host completion event {id} on CQ{cq}"),
            Wait::SlowWorkers { cq } => write!(f, "workers launched on CQ{cq} (slow dispatch)"),
            Wait::CompletionQueue { cq } => write!(f, "completion queue of CQ{cq}"),
            Wait::Live { cq } => write!(f, "work on CQ{cq} (live dump, taken without waiting)"),
        }
    }
}

pub use crate::geometry::Role;

/// One subordinate core of a worker tile (NCRISC, a TRISC): its waypoint
/// from its mailbox, and what a simulator sees of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SubCore {
    pub processor: Processor,
    pub waypoint: Waypoint,
    /// Its alive record is in its mailbox: it booted.
    pub alive: bool,
    pub pc: Option<u32>,
    pub halt: Option<String>,
}

impl SubCore {
    /// Booted and waiting for BRISC to start it: not shown. One that never
    /// announced itself is shown whatever its waypoint (boot zeroes the
    /// mailboxes, so a core hung at its entry reads waypoint 0 too: it hid
    /// behind a BRISC waiting at SUBA, helper-86's audit).
    fn idle(&self) -> bool {
        self.alive && self.halt.is_none() && (self.waypoint == waypoint::GOW || self.waypoint == Waypoint(0))
    }
}

impl fmt::Display for SubCore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.processor.name())?;
        // Waypoint 0: it never set one (boot zeroes the mailboxes).
        if self.waypoint != Waypoint(0) {
            write!(f, " {}", self.waypoint)?;
        }
        if !self.alive {
            write!(f, " (not booted: no alive record)")?;
        }
        if let Some(pc) = self.pc {
            write!(f, " pc={pc:#010x}")?;
        }
        if let Some(h) = &self.halt {
            write!(f, " halted: {h}")?;
        }
        Ok(())
    }
}

/// A firmware error record (`mailbox::ErrorRecord`), as read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ErrorReport {
    /// `DeviceError` code (unknown codes are kept as read).
    pub code: u32,
    /// The offending value (command id, size, ...).
    pub value: u32,
    /// L1 address of the offending bytes.
    pub addr: u32,
    /// The offending bytes, from `addr`.
    pub bytes: Vec<u8>,
    /// The core's read and write pointers when it stopped (what they mean
    /// depends on the core and the error: [`ErrorContext`] reads them).
    pub rd_ptr: u32,
    pub wr_ptr: u32,
    /// Where the error is and which limit it broke, where the core's role
    /// and configuration tell (a prefetcher's fetch slot, a dispatcher's
    /// ring): a report without it left the reader to work out that L1
    /// 0x15c0 is fetch slot 92 and which of two buffers was too small.
    /// Boxed: every driver error carries an `ErrorReport`'s room.
    pub context: Option<Box<ErrorContext>>,
}

impl ErrorReport {
    pub fn error(&self) -> Option<DeviceError> {
        DeviceError::from_u32(self.code)
    }
}

impl fmt::Display for ErrorReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = self.error().map_or("unknown error", DeviceError::describe);
        write!(f, "{what}")?;
        if let Some(c) = &self.context {
            write!(f, " ({c})")?;
        }
        write!(f, ": value {:#x} at L1 {:#x}; bytes", self.value, self.addr)?;
        for b in &self.bytes {
            write!(f, " {b:02x}")?;
        }
        Ok(())
    }
}

/// Where a CQ core's error record points, read with the core's role and
/// configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ErrorContext {
    /// A prefetcher refused the entry in fetch slot `slot` of queue `cq`,
    /// after fetching `fetched` entries since boot.
    FetchSlot { cq: u8, slot: u32, fetched: u32, over: Option<Limit> },
    /// A dispatcher refused command `command` (its name) of queue `cq`.
    Command { cq: u8, command: &'static str, over: Option<Limit> },
}

impl ErrorContext {
    /// The limit broken, if the error is one of size.
    pub fn over(&self) -> Option<&Limit> {
        match self {
            ErrorContext::FetchSlot { over, .. } | ErrorContext::Command { over, .. } => over.as_ref(),
        }
    }
}

impl fmt::Display for ErrorContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ErrorContext::FetchSlot { cq, slot, fetched, .. } => {
                write!(f, "CQ{cq} fetch slot {slot}, after {fetched} entries fetched")?
            }
            ErrorContext::Command { cq, command, .. } => write!(f, "CQ{cq} {command} command")?,
        }
        if let Some(l) = self.over() {
            write!(f, "; {l}")?;
        }
        Ok(())
    }
}

/// A size asked for past the buffer that must hold it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Limit {
    /// What was asked for ("chunk", "completion record").
    pub asked_for: &'static str,
    pub asked: u64,
    /// The buffer it must pass through ("chunk buffer", "issue queue").
    pub limit_of: &'static str,
    pub limit: u64,
}

impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a {}-byte {} exceeds the {}-byte {}", self.asked, self.asked_for, self.limit, self.limit_of)
    }
}

impl Serialize for ErrorContext {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("ErrorContext", 5)?;
        match self {
            ErrorContext::FetchSlot { cq, slot, fetched, over } => {
                st.serialize_field("cq", cq)?;
                st.serialize_field("fetch_slot", slot)?;
                st.serialize_field("fetched", fetched)?;
                st.serialize_field("over", over)?;
            }
            ErrorContext::Command { cq, command, over } => {
                st.serialize_field("cq", cq)?;
                st.serialize_field("command", command)?;
                st.serialize_field("over", over)?;
            }
        }
        st.end()
    }
}

impl Serialize for ErrorReport {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("ErrorReport", 8)?;
        st.serialize_field("text", &self.to_string())?;
        st.serialize_field("code", &self.error().map(DeviceError::name))?;
        st.serialize_field("value", &self.value)?;
        st.serialize_field("addr", &self.addr)?;
        st.serialize_field("rd_ptr", &self.rd_ptr)?;
        st.serialize_field("wr_ptr", &self.wr_ptr)?;
        st.serialize_field("context", &self.context)?;
        st.end()
    }
}

/// Serializes ring pointer `$p` as three fields: `$name`, the raw word as
/// the queues hold it (16-byte units, the wrap toggle in bit 31), kept for
/// readers of earlier builds; `${name}_bytes`, its byte offset in the ring
/// (what `decode` and the text print); `${name}_toggle`, 0 or 1.
macro_rules! ring_ptr_fields {
    ($st:expr, $name:literal, $p:expr) => {{
        let p: RingPtr = $p;
        $st.serialize_field($name, &p.0)?;
        $st.serialize_field(concat!($name, "_bytes"), &p.offset_bytes())?;
        $st.serialize_field(concat!($name, "_toggle"), &u8::from(p.toggle()))?;
    }};
}

/// Pointers of one queue at a moment (ring pointers with their toggles).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueuePointers {
    pub cq: u8,
    pub issue_wr: RingPtr,
    pub issue_rd: RingPtr,
    pub fetch_issued: u32,
    pub fetch_consumed: u32,
    pub completion_rd: RingPtr,
    pub completion_wr: RingPtr,
    /// Worker completions launched on this queue that no WAIT in its stream
    /// covers yet: the host's count of what its next WAIT will wait for,
    /// not of kernels running (helper-86's audit: "workers outstanding 0"
    /// read as no worker busy while every worker ran). `None` for an
    /// observer of another process's device, which cannot know it.
    pub launches_unwaited: Option<u32>,
    /// Workers at `RUN` on the whole chip, as an observer reads their
    /// waypoints (`None` in the host's own dump, whose cores show them).
    pub workers_running: Option<u32>,
    pub last_event_done: u32,
}

impl Serialize for QueuePointers {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("QueuePointers", 18)?;
        st.serialize_field("cq", &self.cq)?;
        ring_ptr_fields!(st, "issue_wr", self.issue_wr);
        ring_ptr_fields!(st, "issue_rd", self.issue_rd);
        st.serialize_field("fetch_issued", &self.fetch_issued)?;
        st.serialize_field("fetch_consumed", &self.fetch_consumed)?;
        ring_ptr_fields!(st, "completion_rd", self.completion_rd);
        ring_ptr_fields!(st, "completion_wr", self.completion_wr);
        st.serialize_field("launches_unwaited", &self.launches_unwaited)?;
        st.serialize_field("workers_running", &self.workers_running)?;
        st.serialize_field("last_event_done", &self.last_event_done)?;
        st.end()
    }
}

/// A fetch-queue entry the host rang.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RungEntry {
    /// Its number among the queue's entries since boot, and its slot.
    pub number: u32,
    pub slot: u32,
    /// The entry as written (`cqlab_abi::fetch_queue::FetchEntry`).
    pub raw: u32,
    /// Issue-queue write pointer where its chunk's ring bytes start.
    pub issue_at: RingPtr,
}

impl Serialize for RungEntry {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("RungEntry", 6)?;
        st.serialize_field("number", &self.number)?;
        st.serialize_field("slot", &self.slot)?;
        st.serialize_field("raw", &self.raw)?;
        ring_ptr_fields!(st, "issue_at", self.issue_at);
        st.end()
    }
}

/// Fetch entries rung that a dump lists per queue, newest last.
pub const RUNG_KEPT: usize = 4;

/// What the host had last published to one queue's device side: what a
/// host-side root cause shows in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostPublished {
    pub cq: u8,
    /// Issue-queue write pointer after the last chunk rung.
    pub issue_wr: RingPtr,
    /// Fetch entries rung since boot, and the last few ([`RUNG_KEPT`]).
    pub fetch_rung: u32,
    pub last_rung: Vec<RungEntry>,
    /// The prefetcher's issue read pointer and fetch count as the host last
    /// read them (what it believes is free).
    pub issue_rd_seen: RingPtr,
    pub fetched_seen: u32,
    /// Completion read pointer the host last wrote to the dispatcher, and
    /// how far it has consumed records (equal, in a correct host, once a
    /// drain ends).
    pub completion_rd_published: RingPtr,
    pub completion_rd_consumed: RingPtr,
    /// Program launches sent on this queue (launch numbers count them from
    /// 1), and the latest launch a WAIT in its stream waits for.
    pub launches: u64,
    pub launch_waited: u64,
}

impl Serialize for HostPublished {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("HostPublished", 17)?;
        st.serialize_field("cq", &self.cq)?;
        ring_ptr_fields!(st, "issue_wr", self.issue_wr);
        st.serialize_field("fetch_rung", &self.fetch_rung)?;
        st.serialize_field("last_rung", &self.last_rung)?;
        ring_ptr_fields!(st, "issue_rd_seen", self.issue_rd_seen);
        st.serialize_field("fetched_seen", &self.fetched_seen)?;
        ring_ptr_fields!(st, "completion_rd_published", self.completion_rd_published);
        ring_ptr_fields!(st, "completion_rd_consumed", self.completion_rd_consumed);
        st.serialize_field("launches", &self.launches)?;
        st.serialize_field("launch_waited", &self.launch_waited)?;
        st.end()
    }
}

impl fmt::Display for HostPublished {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "host CQ{}: issue wr {}; {} fetch entries rung", self.cq, self.issue_wr, self.fetch_rung)?;
        if !self.last_rung.is_empty() {
            let last: Vec<String> = self
                .last_rung
                .iter()
                .map(|e| format!("#{} slot {} = {:#x} at {}", e.number, e.slot, e.raw, e.issue_at))
                .collect();
            write!(f, " (last: {})", last.join(", "))?;
        }
        write!(f, "; read issue rd {}, fetched {}", self.issue_rd_seen, self.fetched_seen)?;
        write!(f, "; completion rd published {}", self.completion_rd_published)?;
        if self.completion_rd_consumed != self.completion_rd_published {
            write!(f, " (consumed to {})", self.completion_rd_consumed)?;
        }
        write!(f, "; {} launches, WAITs up to launch {}", self.launches, self.launch_waited)
    }
}

/// What a device core waiting on the host waits for, beside what the host
/// had published there (a link of the wait-for chain).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HostSide {
    /// A prefetcher waits for fetch entry `consumed` (its fetch count);
    /// the host had rung `rung` entries (`None`: another process's host).
    FetchEntry { cq: u8, consumed: u32, rung: Option<u32> },
    /// A dispatcher waits for completion-queue room: its write pointer,
    /// and the read pointer the host had published and consumed to.
    CompletionRoom { cq: u8, wr: RingPtr, published: RingPtr, consumed: Option<RingPtr> },
}

impl HostSide {
    /// Whether the host's own state explains the wait: it published all it
    /// had (the host waits on the device while the device waits on it), or
    /// it published less than it had consumed.
    pub fn verdict(&self) -> &'static str {
        match *self {
            HostSide::FetchEntry { consumed, rung: Some(rung), .. } if rung != consumed => {
                "entries are published the prefetcher does not see"
            }
            HostSide::CompletionRoom { published, consumed: Some(consumed), .. } if published != consumed => {
                "the host consumed records it did not publish"
            }
            HostSide::FetchEntry { .. } => "the host has published no further entry",
            HostSide::CompletionRoom { .. } => "the host has not freed the records",
        }
    }
}

impl fmt::Display for HostSide {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HostSide::FetchEntry { cq, consumed, rung } => {
                write!(f, "host (CQ{cq} prefetcher waits for fetch entry #{consumed}")?;
                if let Some(rung) = rung {
                    write!(f, "; the host rang {rung}")?;
                }
                write!(f, ": {})", self.verdict())
            }
            HostSide::CompletionRoom { cq, wr, published, consumed } => {
                write!(
                    f,
                    "host (CQ{cq} dispatcher waits for completion room at wr {wr}; the host published rd {published}"
                )?;
                if let Some(c) = consumed.filter(|c| c != published) {
                    write!(f, ", consumed to {c}")?;
                }
                write!(f, ": {})", self.verdict())
            }
        }
    }
}

/// One trace record of a core's ring.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceLine {
    pub seq: u32,
    pub cycle: u64,
    /// `TraceKind` as recorded (an unknown kind is kept as read).
    pub kind: u16,
    pub arg0: u32,
    pub arg1: u32,
}

impl TraceLine {
    /// The kind's label, or `kindN` for a kind this driver does not know.
    pub fn kind_label(&self) -> String {
        TraceKind::from_u16(self.kind).map_or_else(|| format!("kind{}", self.kind), |k| k.label().to_owned())
    }
}

impl Serialize for TraceLine {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("TraceLine", 5)?;
        st.serialize_field("seq", &self.seq)?;
        st.serialize_field("cycle", &self.cycle)?;
        st.serialize_field("kind", &self.kind_label())?;
        st.serialize_field("arg0", &self.arg0)?;
        st.serialize_field("arg1", &self.arg1)?;
        st.end()
    }
}

/// What one tile is doing: its BRISC (which runs the CQ or worker loop,
/// and whose trace ring and error record these are) and, on a worker tile,
/// its four subordinate cores.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CoreState {
    /// The tile (translated coordinates).
    pub core: Coord,
    pub role: Role,
    pub waypoint: Waypoint,
    /// BRISC's PC, where the backend can see it (a simulator).
    pub pc: Option<u32>,
    /// Why BRISC stopped, where the backend can see it.
    pub halt: Option<String>,
    /// A worker tile's NCRISC and TRISCs (empty on CQ tiles).
    pub subordinates: Vec<SubCore>,
    pub semaphores: [u32; 4],
    /// Its error record, if it wrote one.
    pub error: Option<ErrorReport>,
    pub last_trace: Vec<TraceLine>,
    /// Last wait target (flags, address) from the trace, for the chain.
    pub wait_target: Option<(u32, u32)>,
    /// Cycle of the last `KernelStart` record in the tail, for the chain.
    pub kernel_start: Option<u64>,
}

impl CoreState {
    /// What its waypoint means.
    pub fn meaning(&self) -> &'static str {
        self.waypoint.describe().unwrap_or("unknown waypoint")
    }
    /// It stopped: an error record or a halt of any of its cores.
    pub fn halted(&self) -> bool {
        self.error.is_some() || self.halt.is_some() || self.subordinates.iter().any(|s| s.halt.is_some())
    }
    /// A subordinate core that halted, if one did.
    pub fn halted_subordinate(&self) -> Option<&SubCore> {
        self.subordinates.iter().find(|s| s.halt.is_some())
    }
    /// Whether one of its cores runs a kernel: BRISC at RUN, or a
    /// subordinate at RUN while BRISC waits for it.
    pub fn running(&self) -> bool {
        self.waypoint == waypoint::RUN
            || (self.waypoint == waypoint::SUBW && self.subordinates.iter().any(|s| s.waypoint == waypoint::RUN))
    }
    /// Idle workers waiting for GO: left out of the text dump.
    fn idle(&self) -> bool {
        self.waypoint == waypoint::GOW && self.error.is_none() && self.subordinates.iter().all(SubCore::idle)
    }
}

impl Serialize for CoreState {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("CoreState", 10)?;
        // `{"x": .., "y": ..}`, as every JSON output names a core.
        st.serialize_field("core", &self.core)?;
        st.serialize_field("role", &self.role.to_string())?;
        st.serialize_field("waypoint", &self.waypoint.to_string())?;
        st.serialize_field("meaning", self.meaning())?;
        st.serialize_field("pc", &self.pc)?;
        st.serialize_field("halt", &self.halt)?;
        st.serialize_field("semaphores", &self.semaphores)?;
        let subs: Vec<String> = self.subordinates.iter().filter(|s| !s.idle()).map(ToString::to_string).collect();
        st.serialize_field("subordinates", &subs)?;
        st.serialize_field("error", &self.error)?;
        st.serialize_field("last_trace", &self.last_trace)?;
        st.end()
    }
}

/// One link of a wait-for chain.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Link {
    /// The host, waiting.
    Host(Wait),
    /// A core (its state is in the dump's `cores`); `on_event_of`: it waits
    /// on an event of that queue.
    Core { core: Coord, on_event_of: Option<u8> },
    /// The device waits on the host while the host waits on the device:
    /// what the device waits for, and what the host had published (when
    /// the dump has the queue's pointers).
    HostLoop(Option<HostSide>),
    /// A dispatcher waits for worker completions while no worker runs.
    ShortCount { semaphore: u32, value: u32 },
    /// A subordinate core of worker tile `core` (its BRISC waits for it).
    Subordinate { core: Coord, processor: Processor },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HangDump {
    pub waited_for: Wait,
    pub device_cycle: u64,
    pub queues: Vec<QueuePointers>,
    /// What the host had last published per queue (empty for an observer
    /// of another process's device).
    pub host: Vec<HostPublished>,
    pub cores: Vec<CoreState>,
    /// Host first, then each core waited on.
    pub chain: Vec<Link>,
    pub deadlock: bool,
}

impl HangDump {
    pub fn core(&self, core: Coord) -> Option<&CoreState> {
        self.cores.iter().find(|c| c.core == core)
    }

    /// A core as an error names it: its role and coordinates (`CQ0
    /// prefetcher (18,26)`), or its coordinates alone when the dump does
    /// not hold it.
    pub fn who(&self, core: Coord) -> String {
        match self.core(core) {
            Some(c) => format!("{} {}", c.role, c.core),
            None => format!("core {core}"),
        }
    }

    /// The core everything waits on, if the chain ends at one.
    pub fn root(&self) -> Option<&CoreState> {
        match self.chain.last()? {
            Link::Core { core, .. } => self.core(*core),
            _ => None,
        }
    }

    /// Ends the chain at `core`, a worker running its kernel, where it ends
    /// at another running worker: the kernel a kernel timeout names and the
    /// chain's root are one (helper-86's audit: "kernel on (18,22) still
    /// running" above a chain ending at (18,18)).
    pub fn end_at_running(&mut self, core: Coord) {
        let running = |c: Coord| self.core(c).is_some_and(CoreState::running);
        let other = match self.chain.last() {
            Some(&Link::Core { core: last, on_event_of: None }) => last != core && running(last) && running(core),
            _ => false,
        };
        if other {
            self.chain.pop();
            self.chain.push(Link::Core { core, on_event_of: None });
        }
    }

    /// A link as a person reads it: a halted core shows its error record or
    /// halt reason, a running kernel its cycles, a waiting core its waypoint.
    pub fn link_text(&self, link: &Link) -> String {
        match link {
            Link::Host(wait) => format!("host waiting for {wait}"),
            Link::HostLoop(Some(side)) => side.to_string(),
            Link::HostLoop(None) => "host (waits on the device while the device waits on the host)".into(),
            Link::ShortCount { semaphore, value } => {
                format!("no worker running: completion count short (semaphore {semaphore} = {value})")
            }
            Link::Subordinate { core, processor } => {
                let sub = self.core(*core).and_then(|c| c.subordinates.iter().find(|s| s.processor == *processor));
                match sub {
                    Some(s) => format!("{s} on {}", self.who(*core)),
                    None => format!("{} on {}", processor.name(), self.who(*core)),
                }
            }
            Link::Core { core, on_event_of } => {
                let Some(s) = self.core(*core) else { return core.to_string() };
                let mut l = format!("{} {} {}", s.role, s.core, s.waypoint);
                if s.halted() {
                    l.push_str(" HALTED");
                    if let Some(e) = &s.error {
                        l.push_str(&format!(": {e}"));
                    }
                    if let Some(h) = &s.halt {
                        l.push_str(&format!(" ({h})"));
                    }
                    if let Some(sub) = s.halted_subordinate() {
                        l.push_str(&format!(" ({sub})"));
                    }
                } else if s.running() {
                    match s.kernel_start {
                        Some(start) => l.push_str(&format!(
                            " (running its kernel for {} cycles, since cycle {start})",
                            self.device_cycle.saturating_sub(start)
                        )),
                        None => l.push_str(" (running its kernel)"),
                    }
                } else {
                    l.push_str(&format!(" ({})", s.meaning()));
                }
                if let Some(pc) = s.pc {
                    l.push_str(&format!(" pc={pc:#x}"));
                }
                if let Some(other) = on_event_of {
                    l.push_str(&format!(" on an event of CQ{other}"));
                }
                l
            }
        }
    }

    /// The chain, one text per link.
    pub fn chain_text(&self) -> Vec<String> {
        self.chain.iter().map(|l| self.link_text(l)).collect()
    }
}

impl Serialize for HangDump {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("HangDump", 7)?;
        st.serialize_field("waited_for", &self.waited_for.to_string())?;
        st.serialize_field("device_cycle", &self.device_cycle)?;
        st.serialize_field("queues", &self.queues)?;
        st.serialize_field("host", &self.host)?;
        st.serialize_field("cores", &self.cores)?;
        st.serialize_field("chain", &self.chain_text())?;
        st.serialize_field("deadlock", &self.deadlock)?;
        st.end()
    }
}

impl fmt::Display for HangDump {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "hang dump at device cycle {} ({})", self.device_cycle, self.waited_for)?;
        writeln!(f, "wait-for chain{}:", if self.deadlock { " (DEADLOCK: cycle)" } else { "" })?;
        for (i, link) in self.chain_text().iter().enumerate() {
            writeln!(f, "  {}{link}", if i == 0 { "" } else { "-> " })?;
        }
        for q in &self.queues {
            write!(
                f,
                "CQ{}: issue wr {} rd {}; fetch issued {} consumed {}; completion rd {} wr {}",
                q.cq, q.issue_wr, q.issue_rd, q.fetch_issued, q.fetch_consumed, q.completion_rd, q.completion_wr,
            )?;
            if let Some(n) = q.launches_unwaited {
                write!(f, "; worker completions not yet waited for {n}")?;
            }
            if let Some(n) = q.workers_running {
                write!(f, "; workers running (chip) {n}")?;
            }
            writeln!(f, "; last event {}", q.last_event_done)?;
        }
        for h in &self.host {
            writeln!(f, "{h}")?;
        }
        for c in self.cores.iter().filter(|c| !c.idle()) {
            write!(f, "{:<16} {:<8} {:<5}", c.role.to_string(), c.core.to_string(), c.waypoint.to_string())?;
            if let Some(pc) = c.pc {
                write!(f, " pc={pc:#010x}")?;
            }
            write!(f, " sem={:?}", c.semaphores)?;
            if let Some(h) = &c.halt {
                write!(f, " halted: {h}")?;
            }
            writeln!(f)?;
            for sub in c.subordinates.iter().filter(|s| !s.idle()) {
                writeln!(f, "    {sub}")?;
            }
            if let Some(e) = &c.error {
                writeln!(f, "    error: {e}")?;
            }
            for t in &c.last_trace {
                writeln!(f, "    #{:<6} @{:<10} {:<12} {:#x} {:#x}", t.seq, t.cycle, t.kind_label(), t.arg0, t.arg1)?;
            }
        }
        let idle = self.cores.iter().filter(|c| c.idle()).count();
        writeln!(f, "({idle} workers idle in GOW not shown)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geometry::Topology;
    use cqlab_abi::soc::Board;

    /// A dump's JSON names each core as every cqlab JSON output does:
    /// `{"x": .., "y": ..}` (it was the string "(18,26)"), beside its role.
    #[test]
    fn a_dumps_json_names_each_core_by_x_and_y() {
        let chip = Topology::for_board(Board::WormholeN150, None, 2).unwrap();
        let core = chip.worker(1, 0).unwrap();
        let state = CoreState {
            core,
            role: chip.role(core).unwrap(),
            waypoint: waypoint::GOW,
            pc: Some(0x13dc),
            halt: None,
            subordinates: vec![],
            semaphores: [0; 4],
            error: None,
            last_trace: vec![],
            wait_target: None,
            kernel_start: None,
        };
        let dump = HangDump {
            waited_for: Wait::Live { cq: 0 },
            device_cycle: 5,
            queues: vec![],
            host: vec![],
            cores: vec![state],
            chain: vec![],
            deadlock: false,
        };
        let v = serde_json::to_value(&dump).unwrap();
        let c = &v["cores"][0];
        assert_eq!(c["core"], serde_json::json!({"x": core.x, "y": core.y}), "{c}");
        assert_eq!(c["role"], "worker (1,0)", "{c}");
        assert_eq!(serde_json::from_value::<Coord>(c["core"].clone()).unwrap(), core);
    }

    /// Ring pointers read as bytes into their ring, the toggle apart, in
    /// every part of a dump: the queue line, the host's line and a chain's
    /// host link (helper-97's audit: they printed the raw word, 16-byte
    /// units with the toggle in bit 31, `completion wr 0x80000014` where
    /// `decode` said 0x140). The JSON has bytes and toggle beside the raw word.
    #[test]
    fn a_dump_prints_ring_pointers_as_bytes_with_the_toggle_apart() {
        let wrapped = RingPtr::new(0x140, true);
        let queue = QueuePointers {
            cq: 1,
            issue_wr: RingPtr::new(0x40740, false),
            issue_rd: RingPtr::new(0x40700, false),
            fetch_issued: 14,
            fetch_consumed: 14,
            completion_rd: RingPtr::new(0x140, false),
            completion_wr: wrapped,
            launches_unwaited: Some(0),
            workers_running: None,
            last_event_done: 3,
        };
        let host = HostPublished {
            cq: 1,
            issue_wr: RingPtr::new(0x40740, false),
            fetch_rung: 14,
            last_rung: vec![RungEntry { number: 13, slot: 5, raw: 0x10, issue_at: RingPtr::new(0x40700, true) }],
            issue_rd_seen: RingPtr::new(0x40700, false),
            fetched_seen: 14,
            completion_rd_published: RingPtr::new(0x140, false),
            completion_rd_consumed: wrapped,
            launches: 3,
            launch_waited: 3,
        };
        let dump = HangDump {
            waited_for: Wait::Live { cq: 1 },
            device_cycle: 5,
            queues: vec![queue],
            host: vec![host],
            cores: vec![],
            chain: vec![],
            deadlock: false,
        };
        let text = dump.to_string();
        assert!(
            text.contains("CQ1: issue wr 0x40740 rd 0x40700; fetch issued 14 consumed 14; completion rd 0x140 wr 0x140 (toggle 1);"),
            "{text}"
        );
        assert!(
            text.contains(
                "host CQ1: issue wr 0x40740; 14 fetch entries rung (last: #13 slot 5 = 0x10 at 0x40700 (toggle 1)); \
                 read issue rd 0x40700, fetched 14; completion rd published 0x140 (consumed to 0x140 (toggle 1));"
            ),
            "{text}"
        );
        let link = HostSide::CompletionRoom {
            cq: 1,
            wr: wrapped,
            published: RingPtr::new(0x140, false),
            consumed: Some(wrapped),
        };
        assert!(
            link.to_string().starts_with(
                "host (CQ1 dispatcher waits for completion room at wr 0x140 (toggle 1); the host published rd 0x140, \
                 consumed to 0x140 (toggle 1):"
            ),
            "{link}"
        );
        let v = serde_json::to_value(&dump).unwrap();
        let q = &v["queues"][0];
        assert_eq!(
            (&q["completion_wr"], &q["completion_wr_bytes"], &q["completion_wr_toggle"]),
            (&(0x14 | 1u32 << 31).into(), &0x140.into(), &1.into()),
            "{q}"
        );
        assert_eq!((&q["completion_rd_bytes"], &q["completion_rd_toggle"]), (&0x140.into(), &0.into()), "{q}");
        let h = &v["host"][0];
        assert_eq!(
            (&h["completion_rd_consumed_bytes"], &h["completion_rd_consumed_toggle"]),
            (&0x140.into(), &1.into()),
            "{h}"
        );
        assert_eq!(
            (&h["last_rung"][0]["issue_at_bytes"], &h["last_rung"][0]["issue_at_toggle"]),
            (&0x40700.into(), &1.into()),
            "{h}"
        );
    }
}
