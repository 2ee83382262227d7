//! Tests of one chip's library through its exported functions, shared by
//! `libttsim-wh` and `libttsim-bh` (each names its crate `lib` and its
//! chip `ARCH` at its root): the same seed gives the same device time and
//! digest through the library as on an embedded `Chip` fed the same host
//! accesses; bad input is refused with a clear error; the real `.so`
//! survives init, exit, dlclose, reload, init.
//!
//! The library's state is process-wide, so the tests take turns (`serial`).
#![allow(unsafe_code)] // the C ABI: docs/design.md, "Where `unsafe` lives"

use crate::{lib, ARCH};
use cqlab_abi::arch::niu::counter;
use cqlab_abi::arch::tensix::{self, SOFT_RESET_BRISC_ONLY_RUN};
use cqlab_abi::arch::tlb;
use cqlab_abi::arch::{ArchParams, Noc};
use cqlab_abi::boot::reset_jal;
use cqlab_abi::memory_map::{ENTRY_POINT, RESET_JAL, USER};
use cqlab_abi::noc::{Coord, NocAddr};
use cqlab_abi::soc::ChipLayout;
use cqlab_sim::asm::{jal, to_bytes};
use cqlab_sim::chip::Chip;
use cqlab_sim::memory::{HostMemory, Sysmem};
use cqlab_sim::niu_asm::NiuAsm;
use cqlab_ttsim::settings::Settings;
use std::ffi::{c_char, c_void};
use std::sync::{Mutex, MutexGuard};

fn serial() -> MutexGuard<'static, ()> {
    static TURN: Mutex<()> = Mutex::new(());
    TURN.lock().unwrap_or_else(|p| p.into_inner())
}

/// Host memory for the DMA callbacks: 64 KiB at host address 0.
static HOST: Mutex<Vec<u8>> = Mutex::new(Vec::new());
const HOST_SIZE: usize = 64 << 10;

unsafe extern "C-unwind" fn host_rd(addr: u64, p: *mut c_void, size: u32) {
    let mem = HOST.lock().unwrap();
    let at = addr as usize;
    // SAFETY: the library passes a buffer of `size` writable bytes.
    let out = unsafe { std::slice::from_raw_parts_mut(p.cast::<u8>(), size as usize) };
    out.copy_from_slice(&mem[at..at + size as usize]);
}

unsafe extern "C-unwind" fn host_wr(addr: u64, p: *const c_void, size: u32) {
    let mut mem = HOST.lock().unwrap();
    let at = addr as usize;
    // SAFETY: the library passes `size` readable bytes.
    let data = unsafe { std::slice::from_raw_parts(p.cast::<u8>(), size as usize) };
    mem[at..at + size as usize].copy_from_slice(data);
}

fn last_error() -> String {
    let mut buf = vec![0u8; 1024];
    // SAFETY: `buf` holds 1024 writable bytes.
    let n = unsafe { lib::cqlab_ttsim_last_error(buf.as_mut_ptr().cast::<c_char>(), 1024) } as usize;
    String::from_utf8_lossy(&buf[..n.min(1023)]).into_owned()
}

/// What the determinism script does to a chip, through the library or embedded.
trait Host {
    fn bar_write(&mut self, bar: u8, offset: u64, data: &[u8]);
    fn bar_read(&mut self, bar: u8, offset: u64, n: usize) -> Vec<u8>;
    fn clock(&mut self, n: u32);
}

/// The library, through its exported functions.
struct Library {
    bars: [u64; 3],
}

impl Library {
    fn base(&self, bar: u8) -> u64 {
        self.bars[bar as usize / 2]
    }
}

impl Host for Library {
    fn bar_write(&mut self, bar: u8, offset: u64, data: &[u8]) {
        // SAFETY: `data` holds `data.len()` readable bytes.
        unsafe { lib::libttsim_pci_mem_wr_bytes(self.base(bar) + offset, data.as_ptr().cast(), data.len() as u32) }
    }
    fn bar_read(&mut self, bar: u8, offset: u64, n: usize) -> Vec<u8> {
        let mut buf = vec![0; n];
        // SAFETY: `buf` holds `n` writable bytes.
        unsafe { lib::libttsim_pci_mem_rd_bytes(self.base(bar) + offset, buf.as_mut_ptr().cast(), n as u32) };
        buf
    }
    fn clock(&mut self, n: u32) {
        lib::libttsim_clock(n)
    }
}

/// Host memory of an embedded chip: 64 KiB at host address 0, as the
/// library's callbacks have (the window is the chip's whole range).
struct Memory {
    window: usize,
    bytes: Mutex<Vec<u8>>,
}

impl HostMemory for Memory {
    fn len(&self) -> usize {
        self.window
    }
    fn read(&self, at: u64, buf: &mut [u8]) {
        buf.copy_from_slice(&self.bytes.lock().unwrap()[at as usize..at as usize + buf.len()])
    }
    fn write(&self, at: u64, data: &[u8]) {
        self.bytes.lock().unwrap()[at as usize..at as usize + data.len()].copy_from_slice(data)
    }
}

impl Host for Chip {
    fn bar_write(&mut self, bar: u8, offset: u64, data: &[u8]) {
        Chip::bar_write(self, bar, offset, data).unwrap()
    }
    fn bar_read(&mut self, bar: u8, offset: u64, n: usize) -> Vec<u8> {
        let mut buf = vec![0; n];
        Chip::bar_read(self, bar, offset, &mut buf).unwrap();
        buf
    }
    fn clock(&mut self, n: u32) {
        self.host_poll(n as u64);
    }
}

/// Points the first 2 MiB TLB window at `addr` of tile `c`; returns the
/// BAR0 offset that reaches it.
fn point_window(h: &mut dyn Host, chip: &ArchParams, c: Coord, addr: u64) -> u64 {
    let kind = *chip.bar.windows.iter().find(|k| k.size_log2 == 21).unwrap();
    let (cfg, off) = kind.target(c.x, c.y, addr, Noc::Noc0);
    let words = tlb::to_words(kind.fields.encode(&cfg).unwrap());
    let regs: Vec<u8> = words[..chip.bar.tlb_config_words()].iter().flat_map(|w| w.to_le_bytes()).collect();
    h.bar_write(0, chip.bar.tlb_config_addr(kind.first_index) as u64, &regs);
    let (_, at) = chip.bar.window(kind.first_index).unwrap();
    at + off
}

/// Writes `data` at `addr` of tile `c` through the first 2 MiB TLB window.
fn window_write(h: &mut dyn Host, chip: &ArchParams, c: Coord, addr: u64, data: &[u8]) {
    let at = point_window(h, chip, c, addr);
    h.bar_write(0, at, data);
}

fn window_read(h: &mut dyn Host, chip: &ArchParams, c: Coord, addr: u64, n: usize) -> Vec<u8> {
    let at = point_window(h, chip, c, addr);
    h.bar_read(0, at, n)
}

/// Four tiles each write 64 bytes to host memory and read them back
/// (jittered NOC, jittered slices), loaded and started through a TLB
/// window; the host polls the last one's counter, as a driver would.
fn script(h: &mut dyn Host, layout: &ChipLayout) {
    let chip = layout.params();
    let tiles: Vec<Coord> = layout.workers().iter().take(4).map(|&c| layout.tile(c).unwrap().translated).collect();
    for (i, &me) in tiles.iter().enumerate() {
        let niu = NiuAsm { chip, noc: Noc::Noc0, base: 28, tmp: 29 };
        let host = NocAddr(layout.host_mem_noc_base() | (0x1000 * (i as u64 + 1)));
        let mut p = niu.write(me, USER.base, host, 64);
        p.extend(niu.wait_counter(counter::NIU_MST_WR_ACK_RECEIVED, 1));
        p.extend(niu.read(me, host, USER.base + 0x100, 64, 0));
        p.extend(niu.wait_counter(counter::NIU_MST_RD_RESP_RECEIVED, 1));
        p.push(jal(0, 0));
        window_write(h, chip, me, ENTRY_POINT as u64, &to_bytes(&p));
        window_write(h, chip, me, RESET_JAL as u64, &reset_jal(ENTRY_POINT).to_le_bytes());
        window_write(h, chip, me, USER.base as u64, &[i as u8 + 1; 64]);
    }
    for &me in &tiles {
        window_write(h, chip, me, tensix::SOFT_RESET_0 as u64, &SOFT_RESET_BRISC_ONLY_RUN.to_le_bytes());
    }
    let last = *tiles.last().unwrap();
    let resp = chip.niu.status_reg(Noc::Noc0, counter::NIU_MST_RD_RESP_RECEIVED) as u64;
    for _ in 0..200 {
        h.clock(50);
        if window_read(h, chip, last, resp, 4) == 1u32.to_le_bytes() {
            break;
        }
    }
    h.clock(1000);
}

fn settings_env(seed: u64) {
    std::env::set_var("CQLAB_TTSIM_SEED", seed.to_string());
    std::env::set_var("CQLAB_TTSIM_QUANTUM_JITTER", "40");
    std::env::set_var("CQLAB_TTSIM_NOC_JITTER", "30");
    std::env::set_var("CQLAB_TTSIM_LOG", "off");
}

/// The script through the library: (device time, digest).
fn through_library(seed: u64) -> (u64, u64) {
    settings_env(seed);
    *HOST.lock().unwrap() = vec![0; HOST_SIZE];
    lib::libttsim_set_pci_dma_mem_callbacks(Some(host_rd), Some(host_wr));
    lib::libttsim_init();
    let bar = |lo: u32| {
        (lib::libttsim_pci_config_rd32(0, lo + 4) as u64) << 32 | (lib::libttsim_pci_config_rd32(0, lo) & !0xF) as u64
    };
    let mut l = Library { bars: [bar(0x10), bar(0x18), bar(0x20)] };
    let layout = ChipLayout::new(Settings::from_env(ARCH).unwrap().board, Default::default()).unwrap();
    script(&mut l, &layout);
    let r = (lib::cqlab_ttsim_device_time(), lib::cqlab_ttsim_digest());
    // The probes' bytes went through the callbacks, to where the
    // (unprogrammed, pass-through) iATU sent them.
    let host = HOST.lock().unwrap();
    for i in 0..4 {
        let at = 0x1000 * (i + 1);
        assert!(host[at..at + 64].iter().all(|&b| b == i as u8 + 1), "{ARCH:?}: probe {i}");
    }
    drop(host);
    lib::libttsim_exit();
    assert_eq!(lib::cqlab_ttsim_error_count(), 0, "{}", last_error());
    r
}

/// The same on an embedded chip configured as the library configures chip 0.
fn embedded(seed: u64) -> (u64, u64) {
    settings_env(seed);
    let cfg = Settings::from_env(ARCH).unwrap().chip_config(0);
    let host = Memory { window: cfg.sysmem_size, bytes: Mutex::new(vec![0; HOST_SIZE]) };
    let mut chip = Chip::with_sysmem(cfg, Sysmem::Host(Box::new(host))).unwrap();
    let layout = chip.layout().clone();
    script(&mut chip, &layout);
    (chip.now(), chip.digest())
}

#[test]
fn same_seed_same_time_and_digest_through_the_library_as_embedded() {
    let _turn = serial();
    lib::cqlab_ttsim_clear_error();
    let a = through_library(7);
    assert_eq!(a, through_library(7), "{ARCH:?}: the library replays");
    assert_eq!(a, embedded(7), "{ARCH:?}: the library is the embedded chip");
    let c = through_library(8);
    assert_ne!(a.1, c.1, "{ARCH:?}: the seed drives the jitter");
    assert_eq!(c, embedded(8), "{ARCH:?}");
}

/// Initialises the library with its log off and no error pending; the
/// first worker's translated coordinates.
fn init_quiet() -> (u32, u32) {
    std::env::set_var("CQLAB_TTSIM_LOG", "off");
    lib::libttsim_init();
    lib::cqlab_ttsim_clear_error();
    let layout = ChipLayout::new(Settings::from_env(ARCH).unwrap().board, Default::default()).unwrap();
    let t = layout.tile(layout.workers()[0]).unwrap().translated;
    let (x, y) = (t.x as u32, t.y as u32);
    (x, y)
}

#[test]
fn bad_input_is_refused_and_changes_nothing() {
    let _turn = serial();
    let (x, y) = init_quiet();
    let digest = lib::cqlab_ttsim_digest();
    let mut buf = [0u8; 8];
    let mut expect = |what: &str, f: &mut dyn FnMut(&mut [u8; 8])| {
        buf = [0; 8];
        let n = lib::cqlab_ttsim_error_count();
        f(&mut buf);
        assert_eq!(lib::cqlab_ttsim_error_count(), n + 1, "{ARCH:?}: {what}");
        let e = last_error();
        assert!(e.contains(what), "{ARCH:?}: {e}");
        buf
    };
    // SAFETY (each call below): `b` holds 8 writable bytes.
    let off_grid =
        expect("off the NOC grid", &mut |b| unsafe { lib::libttsim_tile_rd_bytes(64, 0, 0, b.as_mut_ptr().cast(), 4) });
    assert_eq!(off_grid[..4], [0xFF; 4], "a failed read reads all ones");
    let l1 = ARCH.params().l1_size as u64;
    // SAFETY: as above.
    expect("beyond L1", &mut |b| unsafe { lib::libttsim_tile_rd_bytes(x, y, l1 - 4, b.as_mut_ptr().cast(), 8) });
    // SAFETY: a null pointer is what is tested; the library checks it.
    expect("null pointer", &mut |_| unsafe { lib::libttsim_tile_wr_bytes(x, y, 0, std::ptr::null(), 4) });
    let bar0 =
        (lib::libttsim_pci_config_rd32(0, 0x14) as u64) << 32 | (lib::libttsim_pci_config_rd32(0, 0x10) & !0xF) as u64;
    // SAFETY: as above.
    let outside = expect("in no TLB window", &mut |b| unsafe {
        lib::libttsim_pci_mem_rd_bytes(bar0 + 0x1F10_0000, b.as_mut_ptr().cast(), 4)
    });
    assert_eq!(outside[..4], [0xFF; 4]);
    expect("has no Ethernet", &mut |_| lib::libttsim_switch_drain());
    // SAFETY: as above.
    let peeked = expect("off the NOC grid", &mut |b| unsafe {
        assert_eq!(lib::cqlab_ttsim_peek(64, 0, 0, b.as_mut_ptr().cast(), 4), -1, "{ARCH:?}: a refused peek");
    });
    assert_eq!(peeked[..4], [0xFF; 4], "a failed peek reads all ones");
    assert_eq!(lib::cqlab_ttsim_digest(), digest, "{ARCH:?}: nothing changed");
    lib::libttsim_exit();
}

/// `cqlab_ttsim_peek` reads what is there and changes nothing: not the
/// state, not the time (the driver's trace reader relies on it).
#[test]
fn a_peek_reads_l1_and_changes_nothing() {
    let _turn = serial();
    let (x, y) = init_quiet();
    let word = 0x1234_5678u32.to_le_bytes();
    // SAFETY: `word` holds 4 readable bytes.
    unsafe { lib::libttsim_tile_wr_bytes(x, y, 0x100, word.as_ptr().cast(), 4) };
    let (time, digest) = (lib::cqlab_ttsim_device_time(), lib::cqlab_ttsim_digest());
    let mut got = [0u8; 4];
    // SAFETY: `got` holds 4 writable bytes.
    let r = unsafe { lib::cqlab_ttsim_peek(x, y, 0x100, got.as_mut_ptr().cast(), 4) };
    assert_eq!((r, got), (0, word), "{ARCH:?}: {}", last_error());
    assert_eq!((lib::cqlab_ttsim_device_time(), lib::cqlab_ttsim_digest()), (time, digest), "{ARCH:?}");
    assert_eq!(lib::cqlab_ttsim_error_count(), 0, "{}", last_error());
    lib::libttsim_exit();
}

/// The library file cargo built beside this test's executable.
fn built_library() -> std::path::PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().unwrap().parent().unwrap();
    dir.join(cqlab_ttsim::library_file(ARCH))
}

#[test]
fn the_shared_object_survives_init_exit_dlclose_reload() {
    let _turn = serial();
    let path = std::ffi::CString::new(built_library().to_str().unwrap()).unwrap();
    std::env::set_var("CQLAB_TTSIM_LOG", "off");
    let t = {
        let layout = ChipLayout::new(Settings::from_env(ARCH).unwrap().board, Default::default()).unwrap();
        layout.tile(layout.workers()[0]).unwrap().translated
    };
    for round in 0..3 {
        // SAFETY: a path to a shared object with no load-time side effects.
        let h = unsafe { libc::dlopen(path.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
        assert!(!h.is_null(), "{path:?} does not load");
        let sym = |name: &str| {
            let n = std::ffi::CString::new(name).unwrap();
            // SAFETY: `h` is a live handle, `n` NUL-terminated.
            let p = unsafe { libc::dlsym(h, n.as_ptr()) };
            assert!(!p.is_null(), "{name} is exported");
            p
        };
        // SAFETY: each symbol has the signature of the libttsim call it names.
        unsafe {
            let init: extern "C" fn() = std::mem::transmute(sym("libttsim_init"));
            let exit: extern "C" fn() = std::mem::transmute(sym("libttsim_exit"));
            let wr: unsafe extern "C-unwind" fn(u32, u32, u64, *const c_void, u32) =
                std::mem::transmute(sym("libttsim_tile_wr_bytes"));
            let rd: unsafe extern "C-unwind" fn(u32, u32, u64, *mut c_void, u32) =
                std::mem::transmute(sym("libttsim_tile_rd_bytes"));
            let errors: extern "C" fn() -> u64 = std::mem::transmute(sym("cqlab_ttsim_error_count"));
            for _ in 0..2 {
                init();
                let mut b = [0xAAu8; 4];
                rd(t.x as u32, t.y as u32, 0x100, b.as_mut_ptr().cast(), 4);
                assert_eq!(b, [0; 4], "round {round}: a fresh chip after init");
                wr(t.x as u32, t.y as u32, 0x100, [1u8, 2, 3, 4].as_ptr().cast(), 4);
                rd(t.x as u32, t.y as u32, 0x100, b.as_mut_ptr().cast(), 4);
                assert_eq!(b, [1, 2, 3, 4]);
                exit();
            }
            assert_eq!(errors(), 0);
            assert_eq!(libc::dlclose(h), 0);
        }
    }
}

/// Both callbacks null takes them back; one null is refused and keeps the
/// pair registered (a host that meant to clear them learns it did not).
#[test]
fn null_callbacks_clear_both_or_are_refused_keeping_the_pair() {
    let _turn = serial();
    settings_env(3);
    *HOST.lock().unwrap() = vec![0; HOST_SIZE];
    // A test that failed before (plain `cargo test`) may have left it running.
    lib::libttsim_exit();
    lib::cqlab_ttsim_clear_error();
    lib::libttsim_set_pci_dma_mem_callbacks(Some(host_rd), Some(host_wr));
    lib::libttsim_set_pci_dma_mem_callbacks(Some(host_rd), None);
    assert_eq!(lib::cqlab_ttsim_error_count(), 1, "{ARCH:?}: half a pair is refused");
    assert!(last_error().contains("are kept"), "{ARCH:?}: {}", last_error());
    let dropped = |run: &dyn Fn()| {
        lib::libttsim_init();
        run();
        let n = lib::cqlab_ttsim_error_count();
        let d = {
            let name = c"dma_dropped";
            // SAFETY: a NUL-terminated string.
            unsafe { lib::cqlab_ttsim_stat(name.as_ptr()) }
        };
        lib::libttsim_exit();
        (d, n)
    };
    let bar = |lo: u32| {
        (lib::libttsim_pci_config_rd32(0, lo + 4) as u64) << 32 | (lib::libttsim_pci_config_rd32(0, lo) & !0xF) as u64
    };
    let layout = ChipLayout::new(Settings::from_env(ARCH).unwrap().board, Default::default()).unwrap();
    let run = || script(&mut Library { bars: [bar(0x10), bar(0x18), bar(0x20)] }, &layout);
    lib::cqlab_ttsim_clear_error();
    assert_eq!(dropped(&run), (0, 0), "{ARCH:?}: the kept pair served the DMA: {}", last_error());
    assert!(HOST.lock().unwrap()[0x1000..0x1040].iter().all(|&b| b == 1), "{ARCH:?}: through the callbacks");

    lib::libttsim_set_pci_dma_mem_callbacks(Some(host_rd), Some(host_wr));
    lib::libttsim_set_pci_dma_mem_callbacks(None, None);
    assert_eq!(lib::cqlab_ttsim_error_count(), 0, "{ARCH:?}: {}", last_error());
    let (d, errors) = dropped(&run);
    assert!(d > 0 && errors >= d, "{ARCH:?}: with none, DMA is dropped and reported ({d} dropped, {errors} errors)");
    lib::cqlab_ttsim_clear_error();
}

/// Set in the child process of the abort test below.
const PANIC_CHILD: &str = "CQLAB_TTSIM_TEST_PANIC_CHILD";

unsafe extern "C-unwind" fn panicking_host_wr(_: u64, _: *const c_void, _: u32) {
    panic!("a host callback panicked on purpose");
}

/// A Rust panic inside `libttsim_clock` (here from a Rust host's DMA
/// callback linked with the library's own std, which a test can arrange)
/// would unwind into a C++ host's frames.
fn panic_inside_clock() {
    settings_env(1);
    *HOST.lock().unwrap() = vec![0; HOST_SIZE];
    lib::libttsim_set_pci_dma_mem_callbacks(Some(host_rd), Some(panicking_host_wr));
    lib::libttsim_init();
    let bar = |lo: u32| {
        (lib::libttsim_pci_config_rd32(0, lo + 4) as u64) << 32 | (lib::libttsim_pci_config_rd32(0, lo) & !0xF) as u64
    };
    let layout = ChipLayout::new(Settings::from_env(ARCH).unwrap().board, Default::default()).unwrap();
    script(&mut Library { bars: [bar(0x10), bar(0x18), bar(0x20)] }, &layout);
    unreachable!("the callback was never called");
}

/// A panic in a `C-unwind` call aborts the process, naming the call, after
/// the panic's message; it never unwinds out to the caller (where the test
/// harness would catch it as an ordinary failure, exit 101). This test runs
/// itself again as the child that panics.
#[test]
fn a_panic_in_a_call_that_runs_the_device_aborts_the_process() {
    use std::os::unix::process::{CommandExt, ExitStatusExt};
    if std::env::var_os(PANIC_CHILD).is_some() {
        return panic_inside_clock();
    }
    let module = module_path!().split_once("::").map_or(module_path!(), |(_, m)| m);
    let name = format!("{module}::a_panic_in_a_call_that_runs_the_device_aborts_the_process");
    let mut child = std::process::Command::new(std::env::current_exe().unwrap());
    child.args([name.as_str(), "--exact", "--nocapture", "--test-threads=1"]).env(PANIC_CHILD, "1");
    // SAFETY: setrlimit is async-signal-safe; no core file for the abort.
    unsafe {
        child.pre_exec(|| {
            let none = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
            libc::setrlimit(libc::RLIMIT_CORE, &none);
            Ok(())
        })
    };
    let out = child.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.signal(), Some(libc::SIGABRT), "{ARCH:?}: {:?}\n{stderr}", out.status);
    assert!(stderr.contains("panicked on purpose"), "{ARCH:?}: the panic's message first\n{stderr}");
    assert!(
        stderr.contains("cqlab libttsim: libttsim_clock(") && stderr.contains("a Rust panic (above)"),
        "{ARCH:?}: the library's own abort, naming the call\n{stderr}"
    );
}

/// The last error and the count are the calling thread's, as `errno` is:
/// two threads driving two chips (by id, no selection to race on) each
/// read the error of their own call, whatever the other did in between,
/// and one thread's `clear_error` leaves the other's.
#[test]
fn each_thread_reads_its_own_errors() {
    use std::sync::Barrier;
    let _turn = serial();
    init_quiet();
    assert!(!lib::libttsim_create_device_by_id(1, 1, 0).is_null(), "{ARCH:?}: {}", last_error());
    let layout = ChipLayout::new(Settings::from_env(ARCH).unwrap().board, Default::default()).unwrap();
    let worker = layout.tile(layout.workers()[0]).unwrap().translated;
    let (a_fails, b_fails) = (Barrier::new(2), Barrier::new(2));
    let (b_cleared, done) = (Barrier::new(2), Barrier::new(2));
    std::thread::scope(|s| {
        let a = s.spawn(|| {
            let mut buf = [0u8; 4];
            // SAFETY: `buf` holds 4 writable bytes.
            unsafe {
                lib::libttsim_dram_core_rd_bytes_by_id(
                    0,
                    worker.x as u32,
                    worker.y as u32,
                    0,
                    buf.as_mut_ptr().cast(),
                    4,
                )
            };
            a_fails.wait();
            b_fails.wait();
            let mine = (lib::cqlab_ttsim_error_count(), last_error());
            b_cleared.wait();
            let still = (lib::cqlab_ttsim_error_count(), last_error());
            done.wait();
            (mine, still)
        });
        let b = s.spawn(|| {
            a_fails.wait();
            let mut buf = [0u8; 4];
            // SAFETY: `buf` holds 4 writable bytes.
            unsafe { lib::libttsim_dram_rd_bytes_by_id(1, 99, 0, buf.as_mut_ptr().cast(), 4) };
            b_fails.wait();
            let mine = (lib::cqlab_ttsim_error_count(), last_error());
            lib::cqlab_ttsim_clear_error();
            b_cleared.wait();
            done.wait();
            (mine, (lib::cqlab_ttsim_error_count(), last_error()))
        });
        let (a_saw, a_after) = a.join().unwrap();
        let (b_saw, b_after) = b.join().unwrap();
        assert_eq!(a_saw.0, 1, "{ARCH:?}: thread A made one failed call: {a_saw:?}");
        assert!(a_saw.1.contains("chip_id=0") && a_saw.1.contains("not a DRAM tile"), "{ARCH:?}: {a_saw:?}");
        assert_eq!(b_saw.0, 1, "{ARCH:?}: thread B made one failed call: {b_saw:?}");
        assert!(b_saw.1.contains("chip_id=1") && b_saw.1.contains("DRAM channel 99"), "{ARCH:?}: {b_saw:?}");
        assert_eq!(a_after, a_saw, "{ARCH:?}: B's clear_error left A's error");
        assert_eq!(b_after, (0, String::new()), "{ARCH:?}: B's clear_error cleared its own");
    });
    // The test's own thread made no failed call.
    assert_eq!((lib::cqlab_ttsim_error_count(), last_error()), (0, String::new()), "{ARCH:?}");
    lib::libttsim_exit();
}
