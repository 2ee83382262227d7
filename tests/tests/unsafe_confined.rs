//! `unsafe` stays in the layers docs/design.md names ("Where `unsafe`
//! lives"), and every unsafe block or impl says why it holds. A scan of the
//! workspace's sources: adding `unsafe` anywhere else fails here, naming the
//! file and line, until the layer list and the design note both say why.

use std::path::{Path, PathBuf};

/// The files that may hold `unsafe`, each with the layer it belongs to.
const ALLOWED: &[(&str, &str)] = &[
    ("device-kernels/src/hal.rs", "firmware HAL: volatile MMIO and L1 access"),
    ("device-kernels/src/rt.rs", "firmware HAL: entry symbols and sections"),
    ("host-driver/src/ttkmd/device.rs", "BAR/mmap layer: pinned host memory"),
    ("host-driver/src/ttkmd/backend.rs", "BAR/mmap layer: pinned host memory claimed by the queues"),
    ("host-driver/src/ttkmd/kernel.rs", "BAR/mmap layer: tt-kmd ioctls"),
    ("host-driver/src/ttkmd/window.rs", "BAR/mmap layer: TLB windows"),
    ("host-driver/src/ttkmd/sim_kernel.rs", "BAR/mmap layer: the simulated tt-kmd's mappings"),
    ("host-driver/src/ttsim/host_memory.rs", "BAR/mmap layer: host memory lent to libttsim"),
    ("host-driver/src/ttsim/mod.rs", "BAR/mmap layer: host memory lent to libttsim"),
    ("host-driver/src/ttsim/library.rs", "C ABI: calls into a loaded libttsim"),
    ("device-sim/libttsim/src/ffi.rs", "C ABI: libttsim's exports"),
    ("device-sim/libttsim/src/lib.rs", "C ABI: libttsim's exports"),
    ("device-sim/libttsim/src/dma.rs", "C ABI: the host's DMA callbacks"),
    ("device-sim/libttsim/shared-tests/exports.rs", "C ABI: tests calling the exports"),
    ("device-sim/src/zeroed.rs", "simulator memory: zeroed pages"),
    ("device-sim/src/storage.rs", "simulator memory: storage behind L1"),
    ("device-sim/src/shared.rs", "simulator memory: the shared device's mappings"),
    ("device-sim/src/daemon/files.rs", "simulator memory: the daemon's mapped files"),
];

/// Lines above an unsafe block within which its `// SAFETY` comment must be.
const SAFETY_REACH: usize = 12;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("tests/ sits in the workspace").to_owned()
}

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.expect("a directory entry").path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if path.is_dir() {
            if !matches!(name, "target" | ".git" | "corpus" | "artifacts") {
                sources(&path, out);
            }
        } else if name.ends_with(".rs") {
            out.push(path);
        }
    }
}

/// What follows the keyword `unsafe` in code: a block, an item, an attribute.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Use {
    Block,
    Fn,
    Impl,
    Extern,
    Trait,
    Attribute,
}

/// The `unsafe` keywords of one line of code (comments and string
/// literals left out, roughly: enough for this codebase's sources).
fn uses(line: &str) -> Vec<Use> {
    let code = line.split("//").next().unwrap_or("");
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(at) = code[from..].find("unsafe").map(|i| from + i) {
        from = at + "unsafe".len();
        let word = |c: char| c.is_alphanumeric() || c == '_';
        let before_ok = !code[..at].chars().next_back().is_some_and(word);
        let rest = &code[from..];
        let quotes = code[..at].char_indices().filter(|&(k, c)| c == '"' && !code[..k].ends_with('\\')).count();
        let in_string = quotes % 2 == 1;
        if !before_ok || rest.starts_with(|c: char| word(c)) || in_string {
            continue;
        }
        let next = rest.trim_start();
        let kind = if next.starts_with('{') {
            Use::Block
        } else if next.starts_with("fn") {
            Use::Fn
        } else if next.starts_with("impl") {
            Use::Impl
        } else if next.starts_with("extern") {
            Use::Extern
        } else if next.starts_with("trait") {
            Use::Trait
        } else if next.starts_with('(') {
            Use::Attribute
        } else {
            continue;
        };
        found.push(kind);
    }
    found
}

#[test]
fn unsafe_lives_only_in_the_named_layers_and_says_why() {
    let root = workspace();
    let mut files = Vec::new();
    for dir in ["device-kernels", "device-sim", "host-driver", "shared-abi", "linker", "tools", "tests", "fuzz"] {
        let dir = root.join(dir);
        if dir.exists() {
            sources(&dir, &mut files);
        }
    }
    assert!(files.len() > 100, "found only {} source files under {}", files.len(), root.display());
    let mut problems = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for file in &files {
        let rel = file.strip_prefix(&root).expect("under the workspace").to_string_lossy().replace('\\', "/");
        let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{rel}: {e}"));
        let lines: Vec<&str> = text.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            for kind in uses(line) {
                seen.insert(rel.clone());
                if !ALLOWED.iter().any(|(f, _)| *f == rel) {
                    problems.push(format!("{rel}:{}: `unsafe` ({kind:?}) outside the named layers", i + 1));
                    continue;
                }
                let reason_above =
                    |needle: &str| lines[i.saturating_sub(SAFETY_REACH)..=i].iter().any(|l| l.contains(needle));
                let missing = match kind {
                    Use::Block | Use::Impl => !reason_above("SAFETY"),
                    // The contract a caller must keep, in the item's docs.
                    Use::Fn | Use::Trait => !reason_above("# Safety") && !reason_above("SAFETY"),
                    Use::Extern | Use::Attribute => false,
                };
                if missing {
                    problems.push(format!("{rel}:{}: `unsafe` ({kind:?}) without a SAFETY note above it", i + 1));
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    // The list stays exact: a file that no longer needs `unsafe` leaves it.
    let stale: Vec<_> = ALLOWED.iter().filter(|(f, _)| !seen.contains(*f)).map(|(f, layer)| (*f, *layer)).collect();
    assert!(stale.is_empty(), "listed but holding no `unsafe` any more: {stale:?}");
}

#[test]
fn the_scan_finds_each_form_of_unsafe_and_nothing_else() {
    assert_eq!(uses("    let p = unsafe { f() };"), [Use::Block]);
    assert_eq!(uses("pub unsafe fn lend(&self) {"), [Use::Fn]);
    assert_eq!(uses("unsafe impl Send for Slot {}"), [Use::Impl]);
    assert_eq!(uses("pub unsafe extern \"C\" fn f() {}"), [Use::Extern]);
    assert_eq!(uses("#[unsafe(no_mangle)]"), [Use::Attribute]);
    assert_eq!(uses("#![forbid(unsafe_code)]"), []);
    assert_eq!(uses("// SAFETY: an unsafe { block } in a comment"), []);
    assert_eq!(uses("let s = \"unsafe { not code }\";"), []);
    assert_eq!(uses("let not_unsafe = 1; deny(unsafe_op_in_unsafe_fn)"), []);
}
