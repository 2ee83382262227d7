//! The CQ configuration both CQ cores start from, checked once.

use crate::platform::Platform;
use crate::report::fail;
use crate::ring::RingGeometry;
use cqlab_abi::fetch_queue;
use cqlab_abi::mailbox::{CqConfig, DeviceError, CQ_CONFIG};
use cqlab_abi::memory_map::DISPATCH_RING;
use cqlab_abi::sysmem::CqSysmemLayout;

/// What a prefetcher or dispatcher derives from its `CqConfig`.
pub struct CqSetup {
    pub ring: RingGeometry,
    pub sysmem: CqSysmemLayout,
}

/// Checks the host's configuration; `None` if it is unusable. (The
/// queue count and the DRAM banks are the `NocMap`'s, checked at boot.)
pub fn check(cfg: &CqConfig) -> Option<CqSetup> {
    let ring = RingGeometry::new(DISPATCH_RING.base, cfg.ring_page_size, cfg.ring_pages)?;
    let sysmem =
        CqSysmemLayout { base: cfg.sysmem_base, issue_size: cfg.issue_size, completion_size: cfg.completion_size };
    let ok = ring.size() <= DISPATCH_RING.size
        && sysmem.is_valid()
        && (1..=fetch_queue::MAX_ENTRIES).contains(&cfg.fetch_entries)
        && cfg.cq_id < cqlab_abi::noc::MAX_CQS as u32;
    ok.then_some(CqSetup { ring, sysmem })
}

/// As `check`, but an unusable configuration halts the core with `BadConfig`.
pub fn setup(p: &mut impl Platform, cfg: &CqConfig) -> CqSetup {
    match check(cfg) {
        Some(s) => s,
        None => fail(p, DeviceError::BadConfig, CQ_CONFIG, cfg.ring_pages, 0, 0),
    }
}
