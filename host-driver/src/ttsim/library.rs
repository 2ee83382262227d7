//! A libttsim shared library, loaded: every symbol the driver calls is
//! resolved once at load (a missing one is named in the error), and each
//! call sits behind a safe method here. The signatures are the libttsim C
//! API's as tt-umd 0.9.14 declares them (docs/libttsim.md, "The symbols");
//! a library that exports one of these names with another signature is
//! beyond what the loader can check, as it is for tt-umd.
//!
//! Every function type is `C-unwind`: a call that makes the device run may
//! call the DMA callbacks, and unwinding through it must not be undefined
//! behaviour (the driver's own callbacks never unwind).
#![allow(unsafe_code)] // the C ABI: docs/design.md, "Where `unsafe` lives"

use crate::error::{DriverError, LibraryProblem, Result};
use std::ffi::{c_char, c_void, CString};
use std::path::{Path, PathBuf};

/// `void rd(uint64_t host_addr, void *dst, uint32_t size)`.
pub type DmaRead = unsafe extern "C-unwind" fn(u64, *mut c_void, u32);
/// `void wr(uint64_t host_addr, const void *src, uint32_t size)`.
pub type DmaWrite = unsafe extern "C-unwind" fn(u64, *const c_void, u32);

type Void = unsafe extern "C-unwind" fn();
type Clock = unsafe extern "C-unwind" fn(u32);
type ConfigRd32 = unsafe extern "C-unwind" fn(u32, u32) -> u32;
type MemRd = unsafe extern "C-unwind" fn(u64, *mut c_void, u32);
type MemWr = unsafe extern "C-unwind" fn(u64, *const c_void, u32);
type TileRd = unsafe extern "C-unwind" fn(u32, u32, u64, *mut c_void, u32);
type TileWr = unsafe extern "C-unwind" fn(u32, u32, u64, *const c_void, u32);
type SetCallbacks = unsafe extern "C-unwind" fn(Option<DmaRead>, Option<DmaWrite>);
type CreateDevice = unsafe extern "C-unwind" fn(u32, i32, i32) -> *mut c_void;
type SelectDevice = unsafe extern "C-unwind" fn(u32);
type LastError = unsafe extern "C-unwind" fn(*mut c_char, u32) -> u32;
type Count = unsafe extern "C-unwind" fn() -> u64;
type Set = unsafe extern "C-unwind" fn(*const c_char, *const c_char) -> i32;
type Peek = unsafe extern "C-unwind" fn(u32, u32, u64, *mut c_void, u32) -> i32;

/// The symbols the driver needs: the nine tt-umd requires of every
/// libttsim library (its "legacy" single-chip set).
pub const REQUIRED: [&str; 9] = [
    "libttsim_init",
    "libttsim_exit",
    "libttsim_clock",
    "libttsim_pci_config_rd32",
    "libttsim_pci_mem_rd_bytes",
    "libttsim_pci_mem_wr_bytes",
    "libttsim_tile_rd_bytes",
    "libttsim_tile_wr_bytes",
    "libttsim_set_pci_dma_mem_callbacks",
];

/// The calls every libttsim library has.
struct Api {
    init: Void,
    exit: Void,
    clock: Clock,
    config_rd32: ConfigRd32,
    mem_rd: MemRd,
    mem_wr: MemWr,
    set_callbacks: SetCallbacks,
    /// `create_device_by_id` and `select_device_by_id`, where the library
    /// has both (tt-umd's multichip mode).
    multichip: Option<(CreateDevice, SelectDevice)>,
    /// cqlab's own calls, where the library is cqlab's.
    cqlab: Option<Cqlab>,
}

/// cqlab's library's own calls (`cqlab_ttsim_*`).
#[derive(Clone, Copy)]
struct Cqlab {
    last_error: LastError,
    error_count: Count,
    digest: Count,
    device_time: Count,
    set: Set,
    /// An observer's read (none in libraries built before it).
    peek: Option<Peek>,
}

/// A loaded library. The function pointers stay valid while `_lib` is
/// loaded, which it is until this is dropped (fields drop in order: the
/// pointers first).
pub struct Loaded {
    api: Api,
    path: PathBuf,
    _lib: libloading::Library,
}

fn problem(path: &Path, problem: LibraryProblem) -> DriverError {
    DriverError::Library { library: path.display().to_string(), problem }
}

/// Symbol `name` of `lib`, as a `T`.
///
/// # Safety
/// `T` is the function pointer type of the libttsim call `name`.
unsafe fn symbol<T: Copy>(lib: &libloading::Library, name: &str) -> Option<T> {
    // SAFETY: the caller's guarantee that `T` is the symbol's type; the
    // copied pointer is used only while `lib` stays loaded (`Loaded`).
    unsafe { lib.get::<T>(name.as_bytes()).ok().map(|s| *s) }
}

/// Most bytes a library file may have: several times libttsim's size, so
/// that a path to something else is refused rather than read whole.
const MAX_LIBRARY_BYTES: u64 = 1 << 30;

/// Refuses what is no regular file of a library's size before anything
/// reads it (helper-33: a FIFO blocked for ever, `/dev/zero` was read
/// until memory ran out).
fn check_regular_file(path: &Path) -> Result<()> {
    let meta = std::fs::metadata(path).map_err(|e| problem(path, LibraryProblem::Load(e.to_string())))?;
    if !meta.is_file() {
        use std::os::unix::fs::FileTypeExt;
        let t = meta.file_type();
        let kind = match () {
            _ if t.is_dir() => "a directory",
            _ if t.is_fifo() => "a FIFO",
            _ if t.is_char_device() || t.is_block_device() => "a device",
            _ if t.is_socket() => "a socket",
            _ => "not a regular file",
        };
        let what = format!("{kind}, not a shared object file");
        return Err(problem(path, LibraryProblem::Load(what)));
    }
    if meta.len() > MAX_LIBRARY_BYTES {
        let what = format!("{} bytes, more than any library ({MAX_LIBRARY_BYTES})", meta.len());
        return Err(problem(path, LibraryProblem::Load(what)));
    }
    Ok(())
}

/// Refuses an ELF file whose loadable segments reach past its end: the
/// loader maps them and faults (SIGBUS) on the missing pages instead of
/// failing, so a truncated library would kill the process with no message.
/// What is not an ELF file is left to the loader, which refuses it cleanly.
fn check_segments_in_file(path: &Path) -> Result<()> {
    use object::read::elf::{FileHeader, ProgramHeader};
    let Ok(bytes) = std::fs::read(path) else { return Ok(()) };
    if !bytes.starts_with(b"\x7fELF") {
        return Ok(());
    }
    let bad = |why: String| problem(path, LibraryProblem::Load(why));
    let malformed = |e: object::read::Error| bad(format!("malformed ELF: {e}"));
    // The program headers only: what the loader maps (a 64-bit host's
    // library; another class the loader refuses itself).
    let Ok(header) = object::elf::FileHeader64::<object::Endianness>::parse(&*bytes) else { return Ok(()) };
    let endian = header.endian().map_err(malformed)?;
    let len = bytes.len() as u64;
    for ph in header.program_headers(endian, &*bytes).map_err(malformed)? {
        if ph.p_type(endian) != object::elf::PT_LOAD {
            continue;
        }
        let (offset, size) = (ph.p_offset(endian), ph.p_filesz(endian));
        if offset.checked_add(size).is_none_or(|end| end > len) {
            return Err(bad(format!(
                "truncated: a loadable segment needs file bytes {offset:#x}..{:#x}, the file has {len:#x}",
                offset.saturating_add(size)
            )));
        }
    }
    Ok(())
}

impl Loaded {
    /// Loads the library at `path` and resolves its symbols.
    pub fn load(path: &Path) -> Result<Loaded> {
        check_regular_file(path)?;
        check_segments_in_file(path)?;
        // SAFETY: loading runs the library's initialisers: the user names
        // the library to run, as with tt-umd's TT_METAL_SIMULATOR.
        let lib = unsafe { libloading::Library::new(path) }
            .map_err(|e| problem(path, LibraryProblem::Load(e.to_string())))?;
        let missing =
            |symbol: &'static str| problem(path, LibraryProblem::MissingSymbol { symbol, needed: REQUIRED.join(", ") });
        macro_rules! required {
            ($name:literal) => {
                // SAFETY: the type is the call's in the libttsim C API (module doc).
                unsafe { symbol(&lib, $name) }.ok_or_else(|| missing($name))?
            };
        }
        macro_rules! optional {
            ($name:literal) => {
                // SAFETY: the type is the call's in the libttsim C API or cqlab's (module doc).
                unsafe { symbol(&lib, $name) }
            };
        }
        // Required of every libttsim library; the driver reaches tiles through the BAR instead.
        let _: TileRd = required!("libttsim_tile_rd_bytes");
        let _: TileWr = required!("libttsim_tile_wr_bytes");
        let api = Api {
            init: required!("libttsim_init"),
            exit: required!("libttsim_exit"),
            clock: required!("libttsim_clock"),
            config_rd32: required!("libttsim_pci_config_rd32"),
            mem_rd: required!("libttsim_pci_mem_rd_bytes"),
            mem_wr: required!("libttsim_pci_mem_wr_bytes"),
            set_callbacks: required!("libttsim_set_pci_dma_mem_callbacks"),
            multichip: optional!("libttsim_create_device_by_id").zip(optional!("libttsim_select_device_by_id")),
            cqlab: (|| {
                Some(Cqlab {
                    last_error: optional!("cqlab_ttsim_last_error")?,
                    error_count: optional!("cqlab_ttsim_error_count")?,
                    digest: optional!("cqlab_ttsim_digest")?,
                    device_time: optional!("cqlab_ttsim_device_time")?,
                    set: optional!("cqlab_ttsim_set")?,
                    peek: optional!("cqlab_ttsim_peek"),
                })
            })(),
        };
        Ok(Loaded { api, path: path.to_path_buf(), _lib: lib })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the library is cqlab's (it has cqlab's own calls).
    pub fn is_cqlab(&self) -> bool {
        self.api.cqlab.is_some()
    }

    /// An error of call `call` of this library.
    pub fn failed(&self, call: String, reason: String) -> DriverError {
        problem(&self.path, LibraryProblem::Call { call, reason })
    }

    /// Registers the DMA callbacks (before `init`).
    pub fn set_callbacks(&self, read: DmaRead, write: DmaWrite) {
        // SAFETY: both are functions of the callback type that live as
        // long as the process (`super::host_memory`).
        unsafe { (self.api.set_callbacks)(Some(read), Some(write)) }
    }

    pub fn init(&self) {
        // SAFETY: a libttsim call without arguments.
        unsafe { (self.api.init)() }
    }

    pub fn exit(&self) {
        // SAFETY: a libttsim call without arguments.
        unsafe { (self.api.exit)() }
    }

    /// Creates and selects chip 0 where the library has the multichip
    /// calls, as tt-umd does after `init`.
    pub fn select_chip0(&self) {
        if let Some((create, select)) = self.api.multichip {
            // SAFETY: libttsim calls with plain integer arguments; the
            // returned handle is not used.
            unsafe {
                create(0, 0, 0);
                select(0);
            }
        }
    }

    pub fn clock(&self, cycles: u32) {
        // SAFETY: a libttsim call with an integer argument.
        unsafe { (self.api.clock)(cycles) }
    }

    pub fn config_read32(&self, offset: u32) -> u32 {
        // SAFETY: a libttsim call with integer arguments (bus 0, device 0, function 0).
        unsafe { (self.api.config_rd32)(0, offset) }
    }

    /// Reads `buf.len()` bytes at physical address `paddr` (a BAR).
    pub fn mem_read(&self, paddr: u64, buf: &mut [u8]) {
        for (i, piece) in buf.chunks_mut(u32::MAX as usize).enumerate() {
            let at = paddr + (i as u64) * u32::MAX as u64;
            // SAFETY: `piece` is valid for writes of its length, which fits a u32.
            unsafe { (self.api.mem_rd)(at, piece.as_mut_ptr().cast(), piece.len() as u32) }
        }
    }

    /// Writes `data` at physical address `paddr` (a BAR).
    pub fn mem_write(&self, paddr: u64, data: &[u8]) {
        for (i, piece) in data.chunks(u32::MAX as usize).enumerate() {
            let at = paddr + (i as u64) * u32::MAX as u64;
            // SAFETY: `piece` is valid for reads of its length, which fits a u32.
            unsafe { (self.api.mem_wr)(at, piece.as_ptr().cast(), piece.len() as u32) }
        }
    }

    /// cqlab's library: errors it reported so far.
    pub fn error_count(&self) -> Option<u64> {
        // SAFETY: a call without arguments.
        self.api.cqlab.map(|c| unsafe { (c.error_count)() })
    }

    /// cqlab's library: the last error it reported.
    pub fn last_error(&self) -> Option<String> {
        let c = self.api.cqlab?;
        let mut buf = vec![0u8; 4096];
        // SAFETY: `buf` is valid for writes of its length.
        let n = unsafe { (c.last_error)(buf.as_mut_ptr().cast(), buf.len() as u32) } as usize;
        (n > 0).then(|| String::from_utf8_lossy(&buf[..n.min(buf.len() - 1)]).into_owned())
    }

    /// cqlab's library: the chip's state digest.
    pub fn digest(&self) -> Option<u64> {
        // SAFETY: a call without arguments.
        self.api.cqlab.map(|c| unsafe { (c.digest)() })
    }

    /// cqlab's library: the chip's device time in cycles.
    pub fn device_time(&self) -> Option<u64> {
        // SAFETY: a call without arguments.
        self.api.cqlab.map(|c| unsafe { (c.device_time)() })
    }

    /// cqlab's library: reads `buf.len()` bytes at `addr` of tile (`x`,
    /// `y`) without changing the chip (no posted write lands, no time
    /// passes). `None`: the library has no such call.
    pub fn peek(&self, x: u8, y: u8, addr: u64, buf: &mut [u8]) -> Option<Result<()>> {
        let peek = self.api.cqlab?.peek?;
        let size = u32::try_from(buf.len()).ok()?;
        // SAFETY: `buf` is valid for writes of `size` bytes.
        let r = unsafe { peek(x as u32, y as u32, addr, buf.as_mut_ptr().cast(), size) };
        Some(if r == 0 {
            Ok(())
        } else {
            Err(self.failed(
                format!("cqlab_ttsim_peek(x={x}, y={y}, addr={addr:#x}, size={size})"),
                self.last_error().unwrap_or_default(),
            ))
        })
    }

    /// cqlab's library: sets `name` (a `CQLAB_TTSIM_*` setting) for the
    /// next `init`. `None`: not cqlab's library.
    pub fn set(&self, name: &str, value: &str) -> Option<Result<()>> {
        let c = self.api.cqlab?;
        let cstr = |s: &str| {
            CString::new(s).map_err(|_| DriverError::Invalid(format!("setting {name}={value:?} holds a NUL byte")))
        };
        let (n, v) = match (cstr(name), cstr(value)) {
            (Ok(n), Ok(v)) => (n, v),
            (Err(e), _) | (_, Err(e)) => return Some(Err(e)),
        };
        // SAFETY: both are NUL-terminated strings that outlive the call.
        let r = unsafe { (c.set)(n.as_ptr(), v.as_ptr()) };
        Some(if r == 0 {
            Ok(())
        } else {
            Err(self.failed(format!("cqlab_ttsim_set({name}, {value:?})"), self.last_error().unwrap_or_default()))
        })
    }
}
