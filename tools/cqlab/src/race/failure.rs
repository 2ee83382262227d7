//! What a failing seed did wrong, in a form that groups equal failures:
//! its class (hang, device error, mismatch), an error kind, the root of the
//! wait-for chain, and a signature made of them. Everything is read from
//! the typed error and its dump, never from their text; the signature leaves
//! out what differs between seeds (cycles, tags, sizes, pcs, which worker).

use crate::exit::FailureClass;
use cqlab_abi::mailbox::DeviceError;
use cqlab_abi::waypoint;
use cqlab_driver::dump::{CoreState, HangDump, HostSide, Link, Role};
use cqlab_driver::error::DeviceFault;
use cqlab_driver::DriverError;

/// One seed's failure.
#[derive(Debug)]
pub enum Failure {
    /// The driver gave up: a timeout, a device error, a corrupt record...
    Driver(DriverError),
    /// The run completed but a result differs from the host's reference.
    Check {
        /// Stable name of the check ("read-back differs", "ran past event").
        check: &'static str,
        /// Everything about this occurrence: offsets, bytes, the command.
        detail: String,
    },
}

impl From<DriverError> for Failure {
    fn from(e: DriverError) -> Self {
        Failure::Driver(e)
    }
}

/// A failure reduced to what a campaign reports.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Classified {
    /// Which exit code it stands for (records written before classes
    /// existed read as `other`).
    #[serde(default)]
    pub class: FailureClass,
    /// `timeout`, `kernel-timeout`, `livelock`, `device-error`, `corrupt-completion`,
    /// `mismatch`, `driver` (or, from `stress`, `hard-timeout`, `crash`).
    pub kind: String,
    /// The core everything waited on, with its state (from the hang dump),
    /// or what found the failure.
    pub root: String,
    /// Kind + the wait's class + the root's role and state: equal for equal bugs.
    pub signature: String,
    /// First line of the error.
    pub error: String,
}

impl Failure {
    pub fn dump(&self) -> Option<&HangDump> {
        match self {
            Failure::Driver(e) => e.dump(),
            Failure::Check { .. } => None,
        }
    }

    /// The whole text (with the hang dump, if any).
    pub fn full_text(&self) -> String {
        match self {
            Failure::Driver(e) => e.to_string(),
            Failure::Check { check, detail } => format!("{check}: {detail}"),
        }
    }

    pub fn class(&self) -> FailureClass {
        match self {
            Failure::Driver(e) => FailureClass::of(e),
            Failure::Check { .. } => FailureClass::Mismatch,
        }
    }

    pub fn classify(&self) -> Classified {
        let error = self.full_text().lines().next().unwrap_or_default().to_owned();
        let class = self.class();
        let e = match self {
            Failure::Check { check, .. } => {
                return Classified {
                    class,
                    kind: "mismatch".into(),
                    root: "host reference model".into(),
                    signature: format!("mismatch: {check}"),
                    error,
                }
            }
            // A workload's validation: the host reference model's finding.
            Failure::Driver(DriverError::Mismatch(_)) => {
                return Classified {
                    class,
                    kind: "mismatch".into(),
                    root: "host reference model".into(),
                    signature: "mismatch: workload validation".into(),
                    error,
                }
            }
            Failure::Driver(e) => e,
        };
        let (kind, what) = match e {
            DriverError::Timeout { wait, .. } => ("timeout", wait.class()),
            DriverError::KernelTimeout { wait, .. } => ("kernel-timeout", wait.class()),
            DriverError::Livelock { wait, .. } => ("livelock", wait.class()),
            DriverError::Device {
                fault: DeviceFault::CorruptCompletion { cq, .. } | DeviceFault::UnexpectedCompletion { cq, .. },
                ..
            } => {
                // The queue whose records are corrupt is the finding; where
                // its cores happened to be is not.
                let root = Role::Dispatcher { cq: *cq }.to_string();
                let signature = format!("corrupt-completion: {root} records");
                return Classified { class, kind: "corrupt-completion".into(), root, signature, error };
            }
            DriverError::Device { fault: DeviceFault::BadCommand(report), .. } => {
                ("device-error", report.error().map_or("unknown error", DeviceError::describe).to_owned())
            }
            DriverError::Device { fault: DeviceFault::Halted { waypoint, .. }, .. } => {
                ("device-error", format!("halted with waypoint {waypoint}"))
            }
            DriverError::Device { fault: DeviceFault::Crashed { processor, .. }, .. } => {
                ("device-error", format!("{processor:?} halted"))
            }
            other => ("driver", other.kind().to_owned()),
        };
        let dump = e.dump();
        let (root, key) = match (e, dump) {
            // The core that reported the error is the root.
            (DriverError::Device { core, .. }, Some(dump)) => match dump.core(*core) {
                Some(c) => (format!("{} {} {}", c.role, c.core, c.waypoint), core_key(c, None)),
                None => (core.to_string(), core.to_string()),
            },
            (_, Some(dump)) => match dump.chain.last() {
                Some(link) => (dump.link_text(link), link_key(dump, link)),
                None => ("host".into(), "host".into()),
            },
            (_, None) => ("host".into(), "host".into()),
        };
        let deadlock = if dump.is_some_and(|d| d.deadlock) { " (deadlock)" } else { "" };
        let signature = format!("{kind}: {what} <- {key}{deadlock}");
        Classified { class, kind: kind.into(), root, signature, error }
    }
}

/// A chain link as a signature names it.
fn link_key(dump: &HangDump, link: &Link) -> String {
    match link {
        Link::Host(wait) => format!("host waiting for {}", wait.class()),
        Link::HostLoop(None) => "host (waits on the device while the device waits on the host)".into(),
        // What the device waits for and the host's verdict, without pointers.
        Link::HostLoop(Some(side)) => match side {
            HostSide::FetchEntry { cq, .. } => {
                format!("host: CQ{cq} prefetcher waits for a fetch entry ({})", side.verdict())
            }
            HostSide::CompletionRoom { cq, .. } => {
                format!("host: CQ{cq} dispatcher waits for completion room ({})", side.verdict())
            }
        },
        Link::ShortCount { semaphore, .. } => {
            format!("no worker running: completion count short (semaphore {semaphore})")
        }
        // Which worker tile differs between seeds; which core of it does not.
        Link::Subordinate { processor, .. } => format!("a worker's {} that has not booted", processor.name()),
        Link::Core { core, on_event_of } => match dump.core(*core) {
            Some(c) => core_key(c, *on_event_of),
            None => core.to_string(),
        },
    }
}

/// A core as a signature names it: a worker by its role alone (which
/// worker differs between seeds), a CQ core by role and coordinates; then
/// its waypoint and state.
fn core_key(c: &CoreState, on_event_of: Option<u8>) -> String {
    let mut key = match c.role {
        Role::Worker { .. } => format!("worker {}", c.waypoint),
        role => format!("{role} {} {}", c.core, c.waypoint),
    };
    if c.halted() {
        key.push_str(" HALTED");
        if let Some(e) = &c.error {
            key.push_str(&format!(": {}", e.error().map_or("unknown error", DeviceError::describe)));
        }
    } else if c.waypoint == waypoint::RUN {
        key.push_str(" (running its kernel)");
    } else {
        key.push_str(&format!(" ({})", c.meaning()));
    }
    if let Some(other) = on_event_of {
        key.push_str(&format!(" on an event of CQ{other}"));
    }
    key
}

/// "first differing byte at offset N: expected .. found .. (written by ...)"
/// for a read-back that differs, or `None` when equal. `writer` names the
/// command that wrote the expected byte at an offset.
pub fn first_difference(expected: &[u8], found: &[u8], writer: impl Fn(usize) -> String) -> Option<String> {
    let at = expected
        .iter()
        .zip(found)
        .position(|(a, b)| a != b)
        .or_else(|| (expected.len() != found.len()).then(|| expected.len().min(found.len())))?;
    let show = |b: &[u8]| {
        let end = (at + 16).min(b.len());
        b.get(at..end).unwrap_or_default().iter().map(|x| format!("{x:02x}")).collect::<Vec<_>>().join(" ")
    };
    Some(format!(
        "first differing byte at offset {at} of {}: expected [{}] found [{}] ({} bytes read back); expected bytes written by {}",
        expected.len(),
        show(expected),
        show(found),
        found.len(),
        writer(at)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use cqlab_driver::dump::{ErrorReport, Wait};
    use cqlab_driver::Topology;

    fn chip() -> Topology {
        Topology::for_board(cqlab_abi::soc::Board::WormholeN150, None, 2).unwrap()
    }

    fn state(core: cqlab_abi::noc::Coord, wp: cqlab_abi::waypoint::Waypoint) -> CoreState {
        CoreState {
            core,
            role: chip().role(core).expect("a firmware core"),
            waypoint: wp,
            pc: Some(0x13dc),
            halt: None,
            subordinates: vec![],
            semaphores: [0; 4],
            error: None,
            last_trace: vec![],
            wait_target: None,
            kernel_start: Some(7),
        }
    }

    fn dump(wait: Wait, cores: Vec<CoreState>, chain: Vec<Link>) -> Box<HangDump> {
        Box::new(HangDump {
            waited_for: wait,
            device_cycle: 99,
            queues: vec![],
            host: vec![],
            cores,
            chain,
            deadlock: false,
        })
    }

    #[test]
    fn hangs_of_the_same_wait_on_different_workers_share_a_signature() {
        let timeout = |col: u8, tag: u32, cycles: u64| {
            let wait = Wait::ReadBack { cq: 1, tag };
            let w = chip().worker(col, 1).unwrap();
            let chain = vec![Link::Host(wait.clone()), Link::Core { core: w, on_event_of: None }];
            let e = DriverError::Timeout {
                wait: wait.clone(),
                cycles,
                dump: dump(wait, vec![state(w, waypoint::RUN)], chain),
            };
            Failure::Driver(e).classify()
        };
        let (a, b) = (timeout(1, 17, 3_000_000), timeout(2, 40, 5_000_000));
        assert_eq!(a.signature, b.signature);
        assert_eq!(a.signature, "timeout: CQ1 read-back completion <- worker RUN (running its kernel)");
        assert_eq!(a.class, FailureClass::Hang);
        assert_ne!(a.root, b.root, "the root names its worker");
    }

    #[test]
    fn device_errors_classify_by_their_record_and_corrupt_records_by_their_queue() {
        let d = chip().dispatcher(1);
        let report = ErrorReport {
            code: DeviceError::UnknownCommand as u32,
            value: 0x7f,
            addr: 0x100,
            bytes: vec![0x7f],
            rd_ptr: 0,
            wr_ptr: 0,
            context: None,
        };
        let mut halted = state(d, waypoint::BAD_CMD);
        halted.error = Some(report.clone());
        let wait = Wait::Event { cq: 1, id: 3 };
        let e = DriverError::Device {
            core: d,
            fault: DeviceFault::BadCommand(report),
            dump: dump(wait.clone(), vec![halted], vec![Link::Host(wait.clone())]),
        };
        let c = Failure::Driver(e).classify();
        assert_eq!(c.class, FailureClass::DeviceError);
        assert_eq!(
            c.signature,
            format!("device-error: unknown command id <- CQ1 dispatcher {d} !CMD HALTED: unknown command id")
        );
        let corrupt = DeviceFault::CorruptCompletion {
            cq: 1,
            offset: 64,
            kind: 9,
            record_cq: 1,
            length: 8,
            seq: 5,
            expected_seq: 4,
        };
        let e = DriverError::Device { core: d, fault: corrupt, dump: dump(wait, vec![], vec![]) };
        let c = Failure::Driver(e).classify();
        assert_eq!(
            (c.kind.as_str(), c.signature.as_str()),
            ("corrupt-completion", "corrupt-completion: CQ1 dispatcher records")
        );
        let m = Failure::Check { check: "read-back differs", detail: "at 3".into() }.classify();
        assert_eq!((m.class, m.signature.as_str()), (FailureClass::Mismatch, "mismatch: read-back differs"));
    }
}
