//! The library's process-wide state.
//!
//! One lock holds it: the registered DMA callbacks and, between
//! `libttsim_init` and `libttsim_exit`, the running simulator (its chips
//! and which one is selected). Every call enters it through
//! [`crate::entry::call`], which takes the lock, does its work and reports
//! its error (`crate::error`); nothing runs at load or unload, and `init`
//! builds everything afresh, so the library survives init, exit,
//! `dlclose`, reload, init (tt-umd's discovery does exactly that), whether
//! or not the loader really unloaded it.
//!
//! A Rust panic (a bug) in a call breaks the simulator: [`Lib::broken`]
//! keeps which call panicked and why, every later call that needs the chip
//! state is refused with that reason, and `libttsim_exit` clears it
//! (`crate::entry` says how each kind of call gets there).

use crate::device::Device;
use crate::dma::Callbacks;
use crate::error::{self, note, ApiError, Log};
use crate::settings::Settings;
use cqlab_abi::arch::Arch;
use std::collections::{BTreeMap, VecDeque};
use std::sync::{Mutex, MutexGuard, PoisonError};

/// The running simulator.
pub struct Sim {
    pub arch: Arch,
    pub settings: Settings,
    pub devices: BTreeMap<u32, Device>,
    /// The chip the single-chip calls address (`select_device_by_id`).
    pub selected: u32,
    /// Cycles `clock_all_devices` still owes chips, in the order it pays
    /// them: those a DMA callback's exception kept from their turn
    /// ([`Sim::clock_all`]).
    pub owed: VecDeque<(u32, u64)>,
}

/// Everything the library holds.
pub struct Lib {
    pub callbacks: Option<Callbacks>,
    pub sim: Option<Sim>,
    /// Why the simulator is broken (which call panicked, and its message),
    /// until `exit`. Kept here, not read back from the last error: every
    /// later call, on any thread, reports it, whatever was cleared.
    pub broken: Option<String>,
    /// Settings the host set (`cqlab_ttsim_set`), over the environment's, until `exit`.
    pub overrides: Vec<(String, String)>,
    /// An `init` was called (and maybe failed) since the last `exit`: the
    /// host's `exit` after a failed `init` cleans up, and is no error.
    pub init_called: bool,
}

static LIB: Mutex<Lib> = Mutex::new(Lib::new());

/// The library's state, locked.
pub fn lock() -> MutexGuard<'static, Lib> {
    // Never poisoned: `entry::call` catches a panic inside the lock (C
    // calls) or aborts on one (C-unwind calls), and a host's exception
    // unwinding through it does not poison it. Were it poisoned, the state
    // is still the state.
    LIB.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Which calls may run on a broken simulator.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Broken {
    Refuse,
    Allow,
}

impl Default for Lib {
    fn default() -> Lib {
        Lib::new()
    }
}

impl Lib {
    /// Nothing registered, nothing running.
    pub const fn new() -> Lib {
        Lib { callbacks: None, sim: None, broken: None, overrides: Vec::new(), init_called: false }
    }

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
        self.sim =
            Some(Sim { arch, settings, devices: BTreeMap::from([(0, chip0)]), selected: 0, owed: VecDeque::new() });
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

    /// `clock_all_devices(n)`: every chip `n` cycles, one chip after the
    /// other, in chip id order after those still owed.
    ///
    /// Not atomic across chips. A chip's DMA callback may throw (tt-umd's
    /// do, for an address outside its channels): the exception unwinds out
    /// of that chip's clock, which ends there as `libttsim_clock`'s would
    /// (the access is lost, the rest of its cycles are not run, the chip is
    /// consistent), and out of this call, before the later chips' turn.
    /// Those chips keep their cycles here, owed, and the next `clock_all`
    /// runs them first, each once with all it is owed. So a host that goes
    /// on clocking (tt-umd clocks after every read) gives every chip the
    /// cycles it gave the others, except the rest of a clock an exception
    /// cut; and a chip whose callbacks throw at every turn does not starve
    /// the chips after it.
    pub fn clock_all(&mut self, n: u32) {
        for &id in self.devices.keys() {
            match self.owed.iter_mut().find(|(chip, _)| *chip == id) {
                Some((_, cycles)) => *cycles += n as u64,
                None => self.owed.push_back((id, n as u64)),
            }
        }
        // Taken off before it runs: what is still here when a callback
        // throws is exactly what the chips after it are owed.
        while let Some((id, cycles)) = self.owed.pop_front() {
            if let Some(device) = self.devices.get_mut(&id) {
                device.clock(cycles);
            }
        }
    }
}
