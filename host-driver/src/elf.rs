//! Firmware ELF images: checked by the ABI's validator (shared with the
//! simulator) and against the memory map, loaded segment by segment through
//! the BAR.

use crate::error::{DriverError, Result};
pub use crate::error::{ImageError, RelocationProblem};
use cqlab_abi::arch::tensix::Processor;
use cqlab_abi::arch::Arch;
use cqlab_abi::boot;
use cqlab_abi::elf::Rv32Executable;
use cqlab_abi::firmware::FirmwareId;
use cqlab_abi::memory_map::{code, data, firmware_entry};
use cqlab_abi::ABI_VERSION;
use std::path::Path;

/// One loadable piece of an image.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Segment {
    pub addr: u32,
    /// File bytes followed by `zeroes` zero bytes (bss tail).
    pub data: Vec<u8>,
    pub zeroes: u32,
}

/// A checked firmware image of one core of a tile.
#[derive(Clone, Debug)]
pub struct FirmwareImage {
    pub name: String,
    /// The core it runs on.
    pub processor: Processor,
    pub entry: u32,
    pub segments: Vec<Segment>,
}

impl FirmwareImage {
    /// Loads image `id` (of its core, `FirmwareId::processor`) of an `arch`
    /// chip at `path`.
    pub fn load(path: &Path, id: FirmwareId, arch: Arch) -> Result<Self> {
        load_with(path, |name, bytes| Self::parse(name, bytes, id, arch))
    }

    /// Parses and checks image `id` of an `arch` chip: an RV32 executable
    /// whose entry is its core's `memory_map::firmware_entry`, whose
    /// segments lie in that core's code and data regions (so images of a
    /// tile's five cores never overlap), and whose id
    /// (`cqlab_abi::boot::IMAGE_ID_OFFSET`) names this ABI, `arch` and `id`.
    pub fn parse(name: &str, bytes: &[u8], id: FirmwareId, arch: Arch) -> std::result::Result<Self, ImageError> {
        let p = id.processor();
        let elf = Rv32Executable::parse(bytes)?;
        if elf.entry() != firmware_entry(p) {
            return Err(ImageError::Entry {
                found: elf.entry(),
                expected: firmware_entry(p),
                rule: "the memory map (the core's code region)",
            });
        }
        let mut segments = Vec::new();
        for seg in elf.segments().filter(|s| s.mem_size > 0) {
            let (start, end) = (seg.addr as u64, seg.end());
            if ![code(p), data(p)].iter().any(|r| start >= r.base as u64 && end <= r.end() as u64) {
                return Err(ImageError::Placement { start, end, allowed: "the core's code and data regions" });
            }
            segments.push(Segment {
                addr: seg.addr,
                data: seg.data.to_vec(),
                zeroes: seg.mem_size - seg.data.len() as u32,
            });
        }
        let image = Self { name: name.to_owned(), processor: p, entry: elf.entry(), segments };
        image.check_id(arch, id)?;
        Ok(image)
    }

    /// The id words after the entry's jump: this ABI, `arch` and `id`.
    fn check_id(&self, arch: Arch, id: FirmwareId) -> std::result::Result<(), ImageError> {
        let at = self.entry + boot::IMAGE_ID_OFFSET;
        let len = 4 * boot::IMAGE_ID_WORDS as u32;
        let words = self
            .segments
            .iter()
            .find(|s| at >= s.addr && (at - s.addr + len) as usize <= s.data.len())
            .map(|s| {
                let off = (at - s.addr) as usize;
                &s.data[off..off + len as usize]
            })
            .ok_or(ImageError::NoImageId)?;
        let (shared, role) = words.split_at(4 * boot::KERNEL_ID_WORDS);
        check_id_words(shared, arch, ImageError::NoImageId)?;
        let role = u32::from_le_bytes(role.try_into().expect("one word"));
        if role != id as u32 {
            let found = FirmwareId::from_u32(role).map_or_else(|| format!("unknown ({role})"), |f| f.name().to_owned());
            return Err(ImageError::ImageRole { found, expected: id.name() });
        }
        Ok(())
    }
}

/// Checks the words a firmware image's id and a kernel's share
/// (`cqlab_abi::boot::KERNEL_ID_WORDS` little-endian words: `IMAGE_MAGIC`,
/// ABI version, chip code) against this ABI and `arch`. Bytes of another
/// length, or without the magic, are no id: `missing`.
pub(crate) fn check_id_words(bytes: &[u8], arch: Arch, missing: ImageError) -> std::result::Result<(), ImageError> {
    if bytes.len() != 4 * boot::KERNEL_ID_WORDS {
        return Err(missing);
    }
    let word = |i: usize| u32::from_le_bytes(bytes[4 * i..4 * i + 4].try_into().expect("4 bytes"));
    if word(0) != boot::IMAGE_MAGIC {
        return Err(missing);
    }
    if word(1) != ABI_VERSION {
        return Err(ImageError::ImageAbi { found: word(1), expected: ABI_VERSION });
    }
    match boot::image_arch(word(2)) {
        Some(a) if a == arch => Ok(()),
        found => Err(ImageError::ImageArch {
            found: found.map_or_else(|| format!("an unknown chip (code {})", word(2)), |a| a.short_name().to_owned()),
            expected: arch.short_name(),
        }),
    }
}

/// The firmware images a boot loads (`DeviceConfig::boot_images`).
#[derive(Clone, Debug)]
pub struct BootImages {
    pub prefetch: FirmwareImage,
    pub dispatch: FirmwareImage,
    /// One per core of a worker tile, in `Processor::ALL` order.
    pub workers: Vec<FirmwareImage>,
}

/// Most bytes an image file may hold: several times the largest L1 (a
/// Blackhole's 1.5 MiB), so a path to something else (`/dev/zero`, a
/// disk image) is refused rather than read whole.
pub const MAX_IMAGE_FILE_BYTES: u64 = 16 << 20;

/// Reads `path` and parses it with `parse`; every failure names the file.
pub(crate) fn load_with<T>(
    path: &Path,
    parse: impl FnOnce(&str, &[u8]) -> std::result::Result<T, ImageError>,
) -> Result<T> {
    use std::io::Read;
    let bad = |reason| DriverError::BadElf { path: path.display().to_string(), reason };
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_IMAGE_FILE_BYTES + 1).read_to_end(&mut bytes))
        .map_err(|e| bad(ImageError::Read(e)))?;
    if bytes.len() as u64 > MAX_IMAGE_FILE_BYTES {
        return Err(bad(ImageError::TooLarge { limit: MAX_IMAGE_FILE_BYTES }));
    }
    let name = path.file_name().unwrap_or_default().to_string_lossy().into_owned();
    parse(&name, &bytes).map_err(bad)
}

#[cfg(test)]
mod tests {
    use super::*;
    use cqlab_abi::elf::ElfError;

    #[test]
    fn garbage_and_truncated_elfs_are_rejected_with_a_reason() {
        let err = FirmwareImage::parse("x", b"not an elf", FirmwareId::Worker, Arch::Wormhole).unwrap_err();
        assert!(matches!(err, ImageError::Elf(ElfError::NotElf { .. })), "{err}");
        let mut elf = vec![0x7f, b'E', b'L', b'F', 1, 1, 1, 0];
        elf.resize(20, 0);
        let err = FirmwareImage::parse("x", &elf, FirmwareId::Worker, Arch::Wormhole).unwrap_err();
        assert!(matches!(err, ImageError::Elf(ElfError::Truncated { .. })), "{err}");
    }

    /// A path to something that is no image file is refused at the limit,
    /// not read whole.
    #[test]
    fn an_endless_file_is_refused_at_the_limit() {
        let err = FirmwareImage::load(Path::new("/dev/zero"), FirmwareId::Worker, Arch::Wormhole).unwrap_err();
        assert!(matches!(err, DriverError::BadElf { reason: ImageError::TooLarge { .. }, .. }), "{err}");
        assert!(err.to_string().contains("/dev/zero: holds more than 16777216 bytes"), "{err}");
    }

    /// The words after an image's first instruction name its ABI, chip and
    /// role: an image of another chip (it would fault on that chip's
    /// registers at boot), ABI or role, or with no id, is refused before
    /// anything is loaded.
    #[test]
    fn an_image_of_another_abi_chip_or_role_is_refused_by_its_id() {
        let entry = cqlab_abi::memory_map::firmware_entry(Processor::Brisc);
        let image = |words: &[u32]| {
            let mut data = 0x0100_006Fu32.to_le_bytes().to_vec();
            data.extend(words.iter().flat_map(|w| w.to_le_bytes()));
            FirmwareImage {
                name: "x".into(),
                processor: Processor::Brisc,
                entry,
                segments: vec![Segment { addr: entry, data, zeroes: 0 }],
            }
        };
        let (magic, wh) = (boot::IMAGE_MAGIC, boot::image_arch_code(Arch::Wormhole));
        let (w, pf) = (FirmwareId::Worker, FirmwareId::Prefetch);
        assert!(image(&[magic, ABI_VERSION, wh, w as u32]).check_id(Arch::Wormhole, w).is_ok());
        let err = image(&[magic, ABI_VERSION, wh, w as u32]).check_id(Arch::Blackhole, w).unwrap_err();
        assert!(err.to_string().contains("built for wormhole, the device is a blackhole"), "{err}");
        let err = image(&[magic, ABI_VERSION - 1, wh, w as u32]).check_id(Arch::Wormhole, w).unwrap_err();
        assert!(matches!(err, ImageError::ImageAbi { found, .. } if found == ABI_VERSION - 1), "{err}");
        let err = image(&[magic, ABI_VERSION, 9, w as u32]).check_id(Arch::Wormhole, w).unwrap_err();
        assert!(err.to_string().contains("unknown chip (code 9)"), "{err}");
        // The worker loop where the prefetcher belongs (helper-57: it booted
        // and halted at its first command, exit 4, naming no file).
        let err = image(&[magic, ABI_VERSION, wh, w as u32]).check_id(Arch::Wormhole, pf).unwrap_err();
        assert!(err.to_string().contains("built as the worker firmware, loaded as the prefetch"), "{err}");
        let err = image(&[magic, ABI_VERSION, wh, 99]).check_id(Arch::Wormhole, pf).unwrap_err();
        assert!(err.to_string().contains("unknown (99)"), "{err}");
        let no_id = |words: &[u32]| matches!(image(words).check_id(Arch::Wormhole, w), Err(ImageError::NoImageId));
        assert!(no_id(&[0, ABI_VERSION, wh, w as u32]));
        assert!(no_id(&[magic, ABI_VERSION]));
    }

    #[test]
    fn host_executables_are_rejected() {
        let me = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        let err = FirmwareImage::parse("self", &me, FirmwareId::Worker, Arch::Wormhole).unwrap_err();
        assert!(matches!(err, ImageError::Elf(ElfError::WrongClass { found: 2 })), "{err}");
    }
}
