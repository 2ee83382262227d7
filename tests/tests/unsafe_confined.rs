//! `unsafe` stays in the layers docs/design.md names ("Where `unsafe`
//! lives"), and every unsafe block or impl says why it holds. The workspace
//! denies the `unsafe_code` lint and the listed files allow it for
//! themselves; this scan of the sources checks that nothing else allows it,
//! and what the compiler does not: a SAFETY note on every block. It also
//! looks for `unsafe` (or inline assembly, or an unmangled or placed symbol)
//! itself outside the list, for crates built without the workspace's lints.

use std::path::{Path, PathBuf};

/// The files (or, ending in `/`, folders) that may hold `unsafe`, each with
/// the layer it belongs to.
const ALLOWED: &[(&str, &str)] = &[
    ("device-kernels/src/hal.rs", "firmware HAL: volatile MMIO and L1 access"),
    ("device-kernels/src/rt.rs", "firmware HAL: entry symbols and sections"),
    ("device-sim/isa-tests/src/bin/", "firmware HAL: the ISA tests' guest programs, in assembly"),
    ("host-driver/src/ttkmd/device.rs", "BAR/mmap layer: pinned host memory"),
    ("host-driver/src/ttkmd/kernel.rs", "BAR/mmap layer: tt-kmd ioctls"),
    ("host-driver/src/ttkmd/window.rs", "BAR/mmap layer: TLB windows"),
    ("host-driver/src/ttkmd/io_barrier.rs", "BAR/mmap layer: the I/O write barrier, in assembly"),
    ("host-driver/src/ttkmd/sim_kernel.rs", "BAR/mmap layer: the simulated tt-kmd's mappings"),
    ("host-driver/src/ttsim/host_memory.rs", "BAR/mmap layer: host memory lent to libttsim"),
    ("host-driver/src/ttsim/mod.rs", "BAR/mmap layer: host memory lent to libttsim"),
    ("host-driver/src/ttsim/library.rs", "C ABI: calls into a loaded libttsim"),
    ("device-sim/libttsim/src/ffi.rs", "C ABI: libttsim's exports"),
    ("device-sim/libttsim/src/lib.rs", "C ABI: libttsim's exports"),
    ("device-sim/libttsim/src/dma.rs", "C ABI: the host's DMA callbacks"),
    ("device-sim/libttsim/shared-tests/exports.rs", "C ABI: tests calling the exports"),
    ("device-sim/libttsim/wormhole/src/lib.rs", "C ABI: the exports, made by `export_libttsim!`"),
    ("device-sim/libttsim/blackhole/src/lib.rs", "C ABI: the exports, made by `export_libttsim!`"),
    ("device-sim/src/zeroed.rs", "simulator memory: zeroed pages"),
    ("device-sim/src/storage.rs", "simulator memory: storage behind L1"),
    ("device-sim/src/shared.rs", "simulator memory: the shared device's mappings"),
    ("device-sim/src/daemon/files.rs", "simulator memory: the daemon's mapped files"),
];

fn allowed(rel: &str) -> bool {
    ALLOWED.iter().any(|(f, _)| if f.ends_with('/') { rel.starts_with(f) } else { *f == rel })
}

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

/// What the scan found: `unsafe` before a block or an item, or code that is
/// unsafe without the keyword (inline assembly, symbols placed by hand).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Use {
    Block,
    Fn,
    Impl,
    Extern,
    Trait,
    Attribute,
    Asm,
    Symbol,
    /// `unsafe` followed by something the scan does not know: reported, so
    /// nothing slips past it.
    Unknown,
}

/// `line` with its comment and the contents of its string and character
/// literals blanked out (a string is taken to end on its line, as every
/// string near an `unsafe` in this codebase does).
fn code_of(line: &str) -> String {
    let chars: Vec<char> = line.chars().collect();
    let mut out = String::with_capacity(line.len());
    let mut k = 0;
    let mut in_string = false;
    while k < chars.len() {
        let c = chars[k];
        if in_string {
            if c == '\\' {
                k += 2;
                continue;
            }
            if c == '"' {
                in_string = false;
                out.push('"');
            }
            k += 1;
            continue;
        }
        match c {
            '/' if chars.get(k + 1) == Some(&'/') => break,
            '"' => {
                in_string = true;
                out.push('"');
            }
            // A character literal ('x', '\n', '"'), not a lifetime ('a).
            '\'' if chars.get(k + 2) == Some(&'\'') => {
                out.push_str("' '");
                k += 3;
                continue;
            }
            '\'' if chars.get(k + 1) == Some(&'\\') => {
                let end = (k + 2..chars.len()).find(|&j| chars[j] == '\'').unwrap_or(chars.len() - 1);
                out.push_str("' '");
                k = end + 1;
                continue;
            }
            _ => out.push(c),
        }
        k += 1;
    }
    out
}

/// The unsafe uses in `code` (from [`code_of`]); `next` is the next
/// non-empty line of code, for an `unsafe` that ends its line.
fn uses(code: &str, next: &str) -> Vec<Use> {
    let word = |c: char| c.is_alphanumeric() || c == '_';
    let mut found = Vec::new();
    for (token, kind) in [("global_asm!", Use::Asm), ("asm!", Use::Asm)] {
        let mut from = 0;
        while let Some(at) = code[from..].find(token).map(|i| from + i) {
            from = at + token.len();
            if !code[..at].chars().next_back().is_some_and(word) {
                found.push(kind);
            }
        }
    }
    for attr in ["no_mangle", "link_section", "export_name"] {
        if code.contains(&format!("#[{attr}")) {
            found.push(Use::Symbol);
        }
    }
    // libttsim's macro that writes a chip library's unmangled exports.
    if code.contains("export_libttsim!(") && !code.contains("macro_rules!") {
        found.push(Use::Symbol);
    }
    let mut from = 0;
    while let Some(at) = code[from..].find("unsafe").map(|i| from + i) {
        from = at + "unsafe".len();
        if code[..at].chars().next_back().is_some_and(word) || code[from..].starts_with(word) {
            continue;
        }
        let rest = code[from..].trim_start();
        let rest = if rest.is_empty() { next.trim_start() } else { rest };
        let kind = [
            ("{", Use::Block),
            ("fn", Use::Fn),
            ("impl", Use::Impl),
            ("extern", Use::Extern),
            ("trait", Use::Trait),
            ("(", Use::Attribute),
        ]
        .into_iter()
        .find(|(start, _)| rest.starts_with(start))
        .map_or(Use::Unknown, |(_, kind)| kind);
        found.push(kind);
    }
    found
}

/// Whether the statement holding line `i` carries a `SAFETY` note: on the
/// line itself, or in the comments above it up to the line that ends the
/// statement before (a `;`, `{` or `}` at its end), so another block's note
/// does not count.
fn noted(lines: &[&str], i: usize, needles: &[&str]) -> bool {
    let has = |l: &str| needles.iter().any(|n| l.contains(n));
    if has(lines[i]) {
        return true;
    }
    for l in lines[..i].iter().rev() {
        let t = l.trim();
        if t.starts_with("//") {
            if has(t) {
                return true;
            }
            continue;
        }
        if t.ends_with(';') || t.ends_with('{') || t.ends_with('}') {
            return false;
        }
    }
    false
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
    let mut seen = Vec::new();
    for file in &files {
        let rel = file.strip_prefix(&root).expect("under the workspace").to_string_lossy().replace('\\', "/");
        // This file's own examples are strings and comments; its code names the tokens too.
        if rel == "tests/tests/unsafe_confined.rs" {
            continue;
        }
        let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{rel}: {e}"));
        let lines: Vec<&str> = text.lines().collect();
        let code: Vec<String> = lines.iter().map(|l| code_of(l)).collect();
        for (i, c) in code.iter().enumerate() {
            // The workspace denies `unsafe_code` (Cargo.toml); only the listed files lift it, each
            // for itself, so the compiler holds every other file to the list.
            if c.contains("allow(unsafe_code)") && !allowed(&rel) {
                problems.push(format!("{rel}:{}: allows `unsafe_code` outside the named layers", i + 1));
            }
            let next = code[i + 1..].iter().find(|l| !l.trim().is_empty()).map_or("", |l| l.as_str());
            for kind in uses(c, next) {
                if !seen.contains(&rel) {
                    seen.push(rel.clone());
                }
                let at = format!("{rel}:{}", i + 1);
                if !allowed(&rel) {
                    problems.push(format!("{at}: {kind:?} outside the named layers"));
                    continue;
                }
                let missing = match kind {
                    Use::Block | Use::Impl => !noted(&lines, i, &["SAFETY"]),
                    // The contract a caller must keep, in the item's docs.
                    Use::Fn | Use::Trait => !noted(&lines, i, &["# Safety", "SAFETY"]),
                    Use::Unknown => {
                        problems.push(format!("{at}: `unsafe` the scan cannot classify; write it on one line"));
                        false
                    }
                    Use::Extern | Use::Attribute | Use::Asm | Use::Symbol => false,
                };
                if missing {
                    problems.push(format!("{at}: {kind:?} without a SAFETY note above it"));
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    // The list stays exact: a file that no longer needs `unsafe` leaves it.
    let stale: Vec<_> = ALLOWED.iter().filter(|(f, _)| !seen.iter().any(|s| s.starts_with(f))).collect();
    assert!(stale.is_empty(), "listed but holding no `unsafe` any more: {stale:?}");
}

#[test]
fn the_scan_finds_each_form_of_unsafe_and_nothing_else() {
    let scan = |line: &str| uses(&code_of(line), "");
    assert_eq!(scan("    let p = unsafe { f() };"), [Use::Block]);
    assert_eq!(uses(&code_of("    let p = unsafe"), "{ f() };"), [Use::Block]);
    assert_eq!(scan("pub unsafe fn lend(&self) {"), [Use::Fn]);
    assert_eq!(scan("unsafe impl Send for Slot {}"), [Use::Impl]);
    assert_eq!(scan("pub unsafe extern \"C\" fn f() {}"), [Use::Extern]);
    assert_eq!(scan("#[unsafe(no_mangle)]"), [Use::Attribute]);
    assert_eq!(scan("#[no_mangle]"), [Use::Symbol]);
    assert_eq!(scan("cqlab_ttsim::export_libttsim!(cqlab_ttsim::Arch::Wormhole);"), [Use::Symbol]);
    assert_eq!(scan("core::arch::global_asm!(\"nop\");"), [Use::Asm]);
    assert_eq!(scan("let x = unsafe /* why */ { 1 };"), [Use::Unknown]);
    assert_eq!(scan("#![forbid(unsafe_code)]"), []);
    assert_eq!(scan("// SAFETY: an unsafe { block } in a comment"), []);
    assert_eq!(scan("let s = \"unsafe { not code }\";"), []);
    assert_eq!(scan("let s = \"a \\\" quote\"; let t = unsafe { 1 };"), [Use::Block]);
    assert_eq!(scan("let url = \"http://x\"; let t = unsafe { 1 };"), [Use::Block]);
    assert_eq!(scan("let q = '\"'; let t = unsafe { 1 };"), [Use::Block]);
    assert_eq!(scan("fn f<'a>(x: &'a u8) { unsafe { g(x) } }"), [Use::Block]);
    assert_eq!(scan("let not_unsafe = 1; deny(unsafe_op_in_unsafe_fn)"), []);
}

#[test]
fn a_note_counts_for_its_own_statement_only() {
    let lines = ["    // SAFETY: why a holds.", "    let a = unsafe { f() };", "    let b = unsafe { g() };"];
    assert!(noted(&lines, 1, &["SAFETY"]));
    assert!(!noted(&lines, 2, &["SAFETY"]), "b's block borrows a's note");
    let split = ["    // SAFETY: the call below.", "    let long =", "        expect(|b| unsafe { h(b) });"];
    assert!(noted(&split, 2, &["SAFETY"]), "a statement over lines keeps its note");
}
