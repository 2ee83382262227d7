//! What a failing seed did wrong, in a form that groups equal failures:
//! an error kind, the root of the wait-for chain, and a signature made of
//! both with everything seed-specific (cycles, tags, pcs, worker
//! coordinates) taken out.

use cqlab_driver::hang_dump::HangDump;
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
    /// `timeout`, `device-error`, `corrupt-completion`, `mismatch`, `driver`.
    pub kind: String,
    /// The core everything waited on, with its state (from the hang dump),
    /// or what found the failure.
    pub root: String,
    /// Kind + normalized wait + normalized root: equal for equal bugs.
    pub signature: String,
    /// First line of the error.
    pub error: String,
}

impl Failure {
    pub fn dump(&self) -> Option<&HangDump> {
        match self {
            Failure::Driver(DriverError::Timeout { dump, .. } | DriverError::Device { dump, .. }) => Some(dump),
            _ => None,
        }
    }

    /// The whole text (with the hang dump, if any).
    pub fn full_text(&self) -> String {
        match self {
            Failure::Driver(e) => e.to_string(),
            Failure::Check { check, detail } => format!("{check}: {detail}"),
        }
    }

    pub fn classify(&self) -> Classified {
        let error = self.full_text().lines().next().unwrap_or_default().to_owned();
        match self {
            Failure::Check { check, .. } => Classified {
                kind: "mismatch".into(),
                root: "host reference model".into(),
                signature: format!("mismatch: {check}"),
                error,
            },
            Failure::Driver(e) => {
                let (kind, what) = match e {
                    DriverError::Timeout { what, .. } => ("timeout", normalize(what)),
                    DriverError::Device { message, .. } if message.starts_with("corrupt completion record") => {
                        ("corrupt-completion", "completion queue".to_owned())
                    }
                    DriverError::Device { message, .. } => ("device-error", device_error_kind(message)),
                    other => ("driver", normalize(&other.to_string())),
                };
                let root = match (e, self.dump()) {
                    (DriverError::Device { core, .. }, Some(dump)) => dump
                        .cores
                        .iter()
                        .find(|c| c.core == core.to_string())
                        .map(|c| format!("{} {} {}", c.role, c.core, c.waypoint))
                        .unwrap_or_else(|| core.to_string()),
                    (_, Some(dump)) => dump.chain.last().cloned().unwrap_or_default(),
                    (_, None) => "host".into(),
                };
                let signature = match e {
                    // The queue whose records are corrupt is the finding;
                    // where its cores happened to be is not.
                    DriverError::Device { core, .. } if kind == "corrupt-completion" => {
                        format!("{kind}: {}", normalize_root(&format!("{} records", role_of(&root, core))))
                    }
                    _ => {
                        let deadlock = self.dump().is_some_and(|d| d.deadlock);
                        format!(
                            "{kind}: {what} <- {}{}",
                            normalize_root(&root),
                            if deadlock { " (deadlock)" } else { "" }
                        )
                    }
                };
                Classified { kind: kind.into(), root, signature, error }
            }
        }
    }
}

/// "CQ1 dispatcher" from a root "CQ1 dispatcher (18,2) UAPW".
fn role_of(root: &str, core: &cqlab_abi::noc::Coord) -> String {
    root.split(&format!(" {core}")).next().unwrap_or(root).to_owned()
}

/// The class of a device error message: the text before its first value
/// ("bad command id: value 0x7 at L1 0x..." -> "bad command id").
fn device_error_kind(message: &str) -> String {
    normalize(message.split(": value").next().unwrap_or(message))
}

/// Numbers that differ between seeds (hex values, tags, cycle counts)
/// become `#`; coordinates like `(18,1)` and queue names like `CQ1` stay.
pub fn normalize(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let in_word = i > 0 && (chars[i - 1].is_ascii_alphabetic());
        if c.is_ascii_digit() && !in_word {
            let start = i;
            if c == '0' && chars.get(i + 1) == Some(&'x') {
                i += 2;
                while i < chars.len() && chars[i].is_ascii_hexdigit() {
                    i += 1;
                }
            } else {
                while i < chars.len() && chars[i].is_ascii_digit() {
                    i += 1;
                }
            }
            // Inside a coordinate "(a,b)" digits stay.
            let coord =
                (start > 0 && matches!(chars[start - 1], '(' | ',')) && matches!(chars.get(i), Some(',') | Some(')'));
            if coord {
                out.extend(&chars[start..i]);
            } else {
                out.push('#');
            }
            continue;
        }
        out.push(c);
        i += 1;
    }
    out
}

/// A chain link without its pc and, for workers, without which worker:
/// "worker (1,1) (2,2) RUN (still running its kernel) pc=0x13dc" ->
/// "worker RUN (still running its kernel)".
fn normalize_root(link: &str) -> String {
    let is_coord = |w: &str| {
        w.starts_with('(') && w.ends_with(')') && w[1..w.len() - 1].split(',').all(|n| n.parse::<u32>().is_ok())
    };
    let worker = link.starts_with("worker ");
    let words: Vec<&str> =
        link.split_whitespace().filter(|w| !(w.starts_with("pc=") || worker && is_coord(w))).collect();
    normalize(&words.join(" "))
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

    #[test]
    fn normalizing_keeps_coordinates_and_queue_names() {
        assert_eq!(
            normalize("CQ1 read-back completion (tag 17) after 3001440 cycles at 0x1dc4 on (18,1)"),
            "CQ1 read-back completion (tag #) after # cycles at # on (18,1)"
        );
        assert_eq!(
            normalize_root("worker (1,1) (2,2) RUN (still running its kernel) pc=0x13dc"),
            "worker RUN (still running its kernel)"
        );
        assert_eq!(normalize_root("CQ0 dispatcher (18,1) WCW pc=0x2c74"), "CQ0 dispatcher (18,1) WCW");
    }
}
