//! The library's process-wide state and how every call enters it.
//!
//! One lock holds it: the registered DMA callbacks and, between
//! `libttsim_init` and `libttsim_exit`, the running simulator (its chips
//! and which one is selected). A call takes the lock, does its work and
//! reports its error (`crate::error`); nothing runs at load or unload, and
//! `init` builds everything afresh, so the library survives init, exit,
//! `dlclose`, reload, init (tt-umd's discovery does exactly that), whether
//! or not the loader really unloaded it.
//!
//! Unwinding: a DMA callback may throw a C++ exception, which unwinds
//! through the call that made the device run (those calls are
//! `extern "C-unwind"`) and back to the host. The lock is released on the
//! way out (a foreign exception does not poison it), the chip is consistent
//! (`cqlab_sim::memory::HostMemory`), and the call is reported as having
//! lost that access. A Rust panic (a bug) poisons the lock: the simulator
//! is then broken, every call says so, and `libttsim_exit` clears it.

use crate::device::Device;
use crate::dma::Callbacks;
use crate::error::{self, note, report, ApiError, Log};
use crate::settings::Settings;
use cqlab_abi::arch::Arch;
use std::cell::Cell;
use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};

/// The running simulator.
pub struct Sim {
    pub arch: Arch,
    pub settings: Settings,
    pub devices: BTreeMap<u32, Device>,
    /// The chip the single-chip calls address (`select_device_by_id`).
    pub selected: u32,
}

/// Everything the library holds.
pub struct Lib {
    pub callbacks: Option<Callbacks>,
    pub sim: Option<Sim>,
    /// Why the simulator is broken (a call panicked), until `exit`.
    pub broken: Option<String>,
    /// Settings the host set (`cqlab_ttsim_set`), over the environment's, until `exit`.
    pub overrides: Vec<(String, String)>,
    /// An `init` was called (and maybe failed) since the last `exit`: the
    /// host's `exit` after a failed `init` cleans up, and is no error.
    pub init_called: bool,
}

static LIB: Mutex<Lib> =
    Mutex::new(Lib { callbacks: None, sim: None, broken: None, overrides: Vec::new(), init_called: false });

thread_local! {
    /// This thread is inside a call (a DMA callback calling back in).
    static IN_CALL: Cell<bool> = const { Cell::new(false) };
}

/// Marks the thread inside a call; tells on drop how the call ended.
struct InCall<'a> {
    describe: &'a dyn Fn() -> String,
    finished: bool,
}

impl<'a> InCall<'a> {
    fn enter(describe: &'a dyn Fn() -> String) -> Self {
        IN_CALL.set(true);
        InCall { describe, finished: false }
    }
}

impl Drop for InCall<'_> {
    fn drop(&mut self) {
        IN_CALL.set(false);
        if self.finished {
            return;
        }
        let call = (self.describe)();
        if std::thread::panicking() {
            report(&call, &ApiError::Internal("it panicked (message above)".into()));
        } else {
            report(&call, &ApiError::DmaUnwound);
        }
    }
}

fn lock() -> MutexGuard<'static, Lib> {
    match LIB.lock() {
        Ok(g) => g,
        Err(poisoned) => {
            LIB.clear_poison();
            let mut g = poisoned.into_inner();
            if g.broken.is_none() {
                g.broken = Some(error::last().unwrap_or_else(|| "a call panicked".into()));
            }
            g
        }
    }
}

/// Which calls may run on a broken simulator.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Broken {
    Refuse,
    Allow,
}

/// Runs `f` on the state as call `describe()` (the call with its
/// arguments, formatted only when logged or failed). Its error is reported
/// and gives `None`.
pub fn call<R>(
    describe: &dyn Fn() -> String,
    broken: Broken,
    f: impl FnOnce(&mut Lib) -> Result<R, ApiError>,
) -> Option<R> {
    if error::log_level() == Log::Calls {
        note(Log::Calls, &describe());
    }
    if IN_CALL.get() {
        report(&describe(), &ApiError::Reentrant);
        return None;
    }
    let mut lib = lock();
    let mut in_call = InCall::enter(describe);
    let r = match (&lib.broken, broken) {
        (Some(why), Broken::Refuse) => Err(ApiError::Broken(why.clone())),
        _ => f(&mut lib),
    };
    in_call.finished = true;
    drop(in_call);
    drop(lib);
    r.map_err(|e| report(&describe(), &e)).ok()
}

impl Lib {
    pub fn sim(&mut self) -> Result<&mut Sim, ApiError> {
        self.sim.as_mut().ok_or(ApiError::NotRunning)
    }

    /// The selected chip.
    pub fn selected(&mut self) -> Result<&mut Device, ApiError> {
        let sim = self.sim()?;
        let id = sim.selected;
        sim.device(id)
    }

    /// Starts the simulator: chip 0, selected, as the environment says.
    pub fn init(&mut self, arch: Arch) -> Result<(), ApiError> {
        if self.sim.is_some() {
            return Err(ApiError::AlreadyRunning);
        }
        self.init_called = true;
        let settings = Settings::with_overrides(arch, &self.overrides)?;
        error::set_log(settings.log);
        let chip0 = Device::new(0, &settings, self.callbacks)?;
        note(Log::Calls, &format!("{} ({:?}), seed {}", settings.board, settings.harvesting, settings.seed));
        self.sim = Some(Sim { arch, settings, devices: BTreeMap::from([(0, chip0)]), selected: 0 });
        Ok(())
    }

    /// Sets setting `name` to `value` for the next `init` (checked now).
    pub fn set(&mut self, arch: Arch, name: &str, value: &str) -> Result<(), ApiError> {
        if self.sim.is_some() {
            return Err(ApiError::SetWhileRunning);
        }
        let Some(&var) = crate::settings::NAMES.iter().find(|&&n| n == name) else {
            return Err(ApiError::NoSuchSetting { name: name.to_string(), names: &crate::settings::NAMES });
        };
        let mut next = self.overrides.clone();
        next.push((var.to_string(), value.to_string()));
        Settings::with_overrides(arch, &next).map_err(|e| match e {
            // Every setting is checked, the environment's too: a bad one
            // there is named as such, not blamed on this call's.
            ApiError::Setting { var: bad, value, reason } if bad != var => ApiError::Setting {
                var: bad,
                value,
                reason: format!("{reason} (in the environment; this call set {var})"),
            },
            e => e,
        })?;
        self.overrides = next;
        Ok(())
    }

    /// Stops it: every chip gone, the callbacks and the host's settings
    /// forgotten, a broken simulator mended. Refused only where no `init`
    /// came before it.
    pub fn exit(&mut self) -> Result<(), ApiError> {
        let was = self.sim.take();
        let called = std::mem::take(&mut self.init_called);
        self.callbacks = None;
        self.broken = None;
        self.overrides.clear();
        match (was, called) {
            (None, false) => Err(ApiError::NotRunning),
            _ => Ok(()),
        }
    }
}

/// Chip ids are PCI device numbers (tt-umd keeps them in 5 bits).
pub const MAX_CHIPS: u32 = 32;

impl Sim {
    pub fn device(&mut self, id: u32) -> Result<&mut Device, ApiError> {
        let existing: Vec<u32> = self.devices.keys().copied().collect();
        self.devices.get_mut(&id).ok_or(ApiError::NoSuchChip { id, existing })
    }

    /// Chip `id`, created (on seed + `id`) if it does not exist yet.
    pub fn create(&mut self, id: u32, callbacks: Option<Callbacks>) -> Result<&mut Device, ApiError> {
        if id >= MAX_CHIPS {
            return Err(ApiError::ChipIdRange { id, max: MAX_CHIPS });
        }
        if !self.devices.contains_key(&id) {
            let d = Device::new(id, &self.settings, callbacks)?;
            self.devices.insert(id, d);
        }
        self.device(id)
    }
}
