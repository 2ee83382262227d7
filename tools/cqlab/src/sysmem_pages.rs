//! Which pages the host's sysmem got, said by the commands that measure
//! host time (`driver-bench`, `perf`, `bench dispatch`): the host's copies
//! into sysmem run slower on normal pages, and nothing else a command on a
//! simulator reports depends on them, so no other command says it.

use cqlab_driver::sysmem::{pages_used, PageKind};

/// `"sysmem_pages"` of a report: `"huge-1g"`, `"huge-2m"`, `"normal"`, or
/// null where this process allocated no sysmem (a daemon's device).
pub fn json() -> serde_json::Value {
    pages_used().map(PageKind::name).into()
}

/// The line a report's human form prints, if this process allocated sysmem.
pub fn line() -> Option<String> {
    pages_used().map(|k| format!("host sysmem: {}", k.describe()))
}
