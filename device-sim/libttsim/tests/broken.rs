//! A panic (a bug) in a call that cannot reach the device breaks the
//! simulator, and every later call, on any thread, reports which call
//! panicked and why, whatever the host cleared, until `libttsim_exit`.
//!
//! No exported call has a known panic to trigger, so the test makes its
//! own call through the one entry every export uses (`Entry::c`), then
//! goes on with the library's own calls (`ffi`, what the exports call).

use cqlab_ttsim::entry::{call, Entry};
use cqlab_ttsim::error::{self, ApiError};
use cqlab_ttsim::state::Broken;
use cqlab_ttsim::{ffi, Arch};

#[test]
fn a_panic_breaks_the_simulator_and_every_later_call_says_which_and_why() {
    std::env::set_var("CQLAB_TTSIM_LOG", "off");
    for arch in Arch::ALL {
        ffi::init(arch);
        let ids = ffi::pci_config_rd32(0, 0);
        assert_eq!((error::count(), ids >> 16), (0, arch.params().bar.pci_device_id as u32), "{:?}", error::last());

        let d = || "cqlab_test_bug(7)".to_string();
        let r = Entry::c(&d, |e| call(e, Broken::Refuse, |_| -> Result<(), ApiError> { panic!("a bug, on purpose") }));
        assert_eq!(r, None, "{arch:?}: the panic is caught and the call fails");
        let e = error::last().unwrap_or_default();
        assert!(e.contains("cqlab_test_bug(7): internal error") && e.contains("a bug, on purpose"), "{arch:?}: {e}");

        // The host clears the error; the reason stays.
        error::clear();
        let why = "cqlab_test_bug(7) panicked: a bug, on purpose";
        assert_eq!(ffi::pci_config_rd32(0, 0), u32::MAX, "{arch:?}: refused, read as all ones");
        let e = error::last().unwrap_or_default();
        assert!(e.starts_with("libttsim_pci_config_rd32(") && e.contains(why), "{arch:?}: {e}");
        error::clear();
        assert!(ffi::create_device_by_id(1, 0, 0).is_null(), "{arch:?}");
        assert!(error::last().unwrap_or_default().contains(why), "{arch:?}: {:?}", error::last());

        // Another thread, with no errors of its own, is told the same.
        let other = std::thread::spawn(|| {
            ffi::select_device_by_id(0);
            (error::count(), error::last().unwrap_or_default())
        });
        let (n, e) = other.join().unwrap();
        assert!(n == 1 && e.starts_with("libttsim_select_device_by_id(0)") && e.contains(why), "{arch:?}: {e}");

        // exit mends it: init starts afresh.
        error::clear();
        ffi::exit();
        ffi::init(arch);
        assert_eq!(ffi::pci_config_rd32(0, 0), ids, "{arch:?}");
        assert_eq!(error::count(), 0, "{arch:?}: {:?}", error::last());
        ffi::exit();
    }
}
