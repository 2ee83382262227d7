//! What the driver tells its user that is no error: a choice it had to make
//! that costs something, said once, when it is made (the CLI prints each as
//! a `note:` line on stderr). A leaf module: it imports nothing of the
//! driver.

use std::fmt;
use std::sync::Arc;

/// One thing the user should know.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Note {
    /// The queues in `queues` stage nothing: each one's arena would end past
    /// `limit` bytes into the chip's host-memory range (the first by `end`),
    /// because the pinned buffer starts `pinned_at` bytes into it.
    StagingUnreachable {
        /// The backend, as `Backend::name` says it.
        device: String,
        queues: Vec<u8>,
        end: u64,
        limit: u64,
        pinned_at: u64,
        /// Whether `limit` is the end of what the chip's PCIe tile forwards
        /// to host memory (else it is what a source word can name).
        forwarded: bool,
    },
}

impl fmt::Display for Note {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Note::StagingUnreachable { device, queues, end, limit, pinned_at, forwarded } => {
                let list: Vec<String> = queues.iter().map(u8::to_string).collect();
                let (which, its) = match queues.len() {
                    1 => (format!("queue {}", list[0]), "its arena"),
                    _ => (format!("queues {}", list.join(", ")), "the first one's arena"),
                };
                let why = if *forwarded {
                    "the end of the host memory the chip's PCIe tile forwards"
                } else {
                    "the last byte a fetch slot's source word (16-byte units in 32 bits) names"
                };
                write!(
                    f,
                    "{device}: staging is off for {which}: the pinned buffer starts {pinned_at:#x} bytes into the \
                     chip's host-memory range, so {its} would end at {end:#x}, past {limit:#x} ({why}); kernel \
                     images and runtime args are copied into the issue queue at every enqueue instead (host time \
                     that grows with their size)"
                )
            }
        }
    }
}

/// Where a device's notes go ([`crate::DeviceConfig::notes`]).
#[derive(Clone)]
pub struct NoteSink(Arc<dyn Fn(&Note) + Send + Sync>);

impl NoteSink {
    pub fn new(f: impl Fn(&Note) + Send + Sync + 'static) -> Self {
        Self(Arc::new(f))
    }

    pub fn report(&self, note: &Note) {
        (self.0)(note)
    }
}

impl fmt::Debug for NoteSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("NoteSink")
    }
}
