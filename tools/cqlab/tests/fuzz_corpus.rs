//! The fuzz targets' checks (`fuzz/checks.rs`) on the stable toolchain:
//! every checked-in corpus input, every firmware ELF the build made and
//! each of its truncations, and random edits of those inputs. The
//! coverage-guided search for new inputs is `cargo xtask fuzz`; this keeps
//! what it found, and the checks themselves, tested on every change.

#[path = "../../../fuzz/checks.rs"]
mod checks;
mod support;

use cqlab_abi::elf::Elf32Header;
use cqlab_sim::elf::ElfImage;
use proptest::prelude::*;
use proptest::sample::Index;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Where a target's inputs come from.
#[derive(Clone, Copy)]
enum Inputs {
    /// `fuzz/corpus/TARGET`.
    Corpus,
    /// The firmware images the build made (the `elf` target has no
    /// checked-in corpus: no binaries in git).
    FirmwareElfs,
}

/// A target's check: arbitrary bytes in, a panic on a finding.
type Check = fn(&[u8]);

/// An input: where it came from, and its bytes.
type Input = (String, Vec<u8>);

/// Each fuzz target: its name, its check, its inputs.
const TARGETS: [(&str, Check, Inputs); 6] = [
    ("decode", checks::decode, Inputs::Corpus),
    ("elf", checks::elf, Inputs::FirmwareElfs),
    ("daemon_proto", checks::daemon_proto, Inputs::Corpus),
    ("device_spec", checks::device_spec, Inputs::Corpus),
    ("trace_ring", checks::trace_ring, Inputs::Corpus),
    ("cli_args", checks::cli_args, Inputs::Corpus),
];

fn files_in(dir: &Path) -> Vec<PathBuf> {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let mut files: Vec<PathBuf> = entries.map(|e| e.unwrap().path()).filter(|p| p.is_file()).collect();
    files.sort();
    files
}

/// The checked-in corpus of `target`, by file name.
fn corpus(target: &str) -> Vec<Input> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus").join(target);
    let inputs: Vec<_> = files_in(&dir)
        .into_iter()
        .map(|p| (p.file_name().unwrap().to_string_lossy().into_owned(), std::fs::read(&p).unwrap()))
        .collect();
    assert!(!inputs.is_empty(), "{} holds no inputs", dir.display());
    inputs
}

/// Every firmware and kernel ELF the build made, for both chips.
fn firmware_elfs() -> Vec<Input> {
    let root = support::firmware_dir();
    let mut elfs = Vec::new();
    for dir in [root.clone(), root.join("wormhole"), root.join("blackhole")] {
        for p in files_in(&dir) {
            elfs.push((p.display().to_string(), std::fs::read(&p).unwrap()));
        }
    }
    assert!(elfs.len() > 20, "the firmware build made only {} ELFs under {}", elfs.len(), root.display());
    elfs
}

/// The inputs of `target` the replay starts from.
fn inputs(target: &str, from: Inputs) -> Vec<Input> {
    match from {
        Inputs::Corpus => corpus(target),
        Inputs::FirmwareElfs => firmware_elfs(),
    }
}

/// Every target's inputs, in `TARGETS` order, read once for all the
/// proptest's cases.
fn all_inputs() -> &'static [Vec<Input>] {
    static ALL: OnceLock<Vec<Vec<Input>>> = OnceLock::new();
    ALL.get_or_init(|| TARGETS.iter().map(|&(name, _, from)| inputs(name, from)).collect())
}

#[test]
fn every_checked_in_input_passes_its_target() {
    for (target, check, from) in TARGETS {
        for (name, data) in inputs(target, from) {
            eprintln!("{target}: {name} ({} bytes)", data.len());
            check(&data);
        }
    }
}

/// A truncated image, wherever the cut, is accepted or refused by every
/// loader, never panics one; cut inside its file header, it is refused.
#[test]
fn every_truncation_of_every_firmware_elf_passes_the_elf_target() {
    for (name, data) in firmware_elfs() {
        // Every cut in the headers, then one every 61 bytes (a prime, so
        // cuts fall at every alignment).
        let cuts = (0..data.len().min(256)).chain((256..data.len()).step_by(61));
        for cut in cuts {
            eprintln!("elf: {name} cut at {cut}");
            checks::elf(&data[..cut]);
            if cut < size_of::<Elf32Header>() {
                assert!(ElfImage::parse(&data[..cut]).is_err(), "{name} cut at {cut} was accepted");
            }
        }
    }
}

/// One edit of an input: overwrite a byte, insert one, or cut the input
/// there.
#[derive(Debug, Clone)]
enum Edit {
    Set(Index, u8),
    Insert(Index, u8),
    Cut(Index),
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        4 => (any::<Index>(), any::<u8>()).prop_map(|(i, b)| Edit::Set(i, b)),
        2 => (any::<Index>(), any::<u8>()).prop_map(|(i, b)| Edit::Insert(i, b)),
        1 => any::<Index>().prop_map(Edit::Cut),
    ]
}

fn apply(data: &mut Vec<u8>, edits: &[Edit]) {
    for e in edits {
        match *e {
            Edit::Set(ref i, b) if !data.is_empty() => {
                let at = i.index(data.len());
                data[at] = b;
            }
            Edit::Insert(ref i, b) => data.insert(i.index(data.len() + 1), b),
            Edit::Cut(ref i) => data.truncate(i.index(data.len() + 1)),
            Edit::Set(..) => {}
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// An input of each target with a few bytes changed: the checks hold.
    #[test]
    fn edited_inputs_pass_their_target(
        input in any::<Index>(),
        edits in prop::collection::vec(edit(), 1..8),
    ) {
        for ((_, check, _), all) in TARGETS.iter().zip(all_inputs()) {
            let mut data = all[input.index(all.len())].1.clone();
            apply(&mut data, &edits);
            check(&data);
        }
    }
}
