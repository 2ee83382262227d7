//! Firmware identities reported in alive records.

id_table! {
    /// Which firmware image a core runs; its label is the name of the
    /// firmware binary (and of the ELF file).
    pub enum FirmwareId: u32 { from_u32, name } {
        Prefetch = 1, "prefetch";
        Dispatch = 2, "dispatch";
        /// The resident worker loop on BRISC; kernels are separate images it
        /// calls (see `program`). It releases and gathers the four below.
        Worker = 3, "worker";
        /// The worker loop of a worker tile's NCRISC.
        WorkerNcrisc = 4, "worker-ncrisc";
        /// The worker loops of a worker tile's TRISCs.
        WorkerTrisc0 = 5, "worker-trisc0";
        WorkerTrisc1 = 6, "worker-trisc1";
        WorkerTrisc2 = 7, "worker-trisc2";
    }
}

impl FirmwareId {
    /// The core an image runs on.
    pub const fn processor(self) -> crate::arch::tensix::Processor {
        use crate::arch::tensix::Processor;
        match self {
            FirmwareId::Prefetch | FirmwareId::Dispatch | FirmwareId::Worker => Processor::Brisc,
            FirmwareId::WorkerNcrisc => Processor::Ncrisc,
            FirmwareId::WorkerTrisc0 => Processor::Trisc0,
            FirmwareId::WorkerTrisc1 => Processor::Trisc1,
            FirmwareId::WorkerTrisc2 => Processor::Trisc2,
        }
    }

    /// The worker image of core `p` of a worker tile.
    pub const fn worker(p: crate::arch::tensix::Processor) -> Self {
        use crate::arch::tensix::Processor;
        match p {
            Processor::Brisc => FirmwareId::Worker,
            Processor::Ncrisc => FirmwareId::WorkerNcrisc,
            Processor::Trisc0 => FirmwareId::WorkerTrisc0,
            Processor::Trisc1 => FirmwareId::WorkerTrisc1,
            Processor::Trisc2 => FirmwareId::WorkerTrisc2,
        }
    }
}

/// The known-bug variants of the CQ firmware: cqlab-kernels features
/// `bug-NAME`, each built by `cargo xtask firmware` into
/// `<chip>/variants/NAME/` (prefetch and dispatch only). The race finder is
/// measured on them (`cqlab race --firmware NAME`).
pub const KNOWN_BUG_VARIANTS: [&str; 6] = [
    "stall-release-early",
    "release-before-ack",
    "early-fetch-release",
    "completion-no-toggle",
    "event-zero-signalled",
    "relay-reuse-before-sent",
];

/// Whether names `a` and `b` are equal, in a `const` context: the firmware
/// and the driver choose their mutants at build time by name
/// (`$CQLAB_MUTANT`, `$CQLAB_HOST_MUTANT`) and check the name at compile time.
pub const fn same_name(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}
