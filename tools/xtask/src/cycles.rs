//! `cargo xtask cycles`: no module of any crate may depend, through other
//! modules of the same crate, on itself. A module depends on another when
//! its file names it by a `crate::`, `super::` or `self::` path (in a `use`
//! or inline). Cycles make a crate one knot: no module of it can be read,
//! tested or moved alone. `cargo xtask test` runs this check first.

use anyhow::{bail, Context, Result};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Folders holding crates (each with `src/`), relative to the workspace root.
const SKIP: [&str; 3] = ["target", ".git", "node_modules"];

/// Checks every crate under `root`; fails listing each cycle found.
pub fn check(root: &Path) -> Result<()> {
    let mut found = Vec::new();
    for src in crate_sources(root)? {
        let graph = Graph::of_crate(&src)?;
        for cycle in graph.cycles() {
            let name = src.parent().unwrap_or(&src).strip_prefix(root).unwrap_or(&src).display().to_string();
            found.push(format!("{name}: {}", cycle.join(" <-> ")));
        }
    }
    if !found.is_empty() {
        bail!(
            "import cycles between modules (break each by moving what both sides need into a module that imports \
             neither):\n  {}",
            found.join("\n  ")
        );
    }
    eprintln!("xtask: no import cycles");
    Ok(())
}

/// Every `src/` folder of a crate under `root` (a folder with `Cargo.toml` beside it).
fn crate_sources(root: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        if dir.join("Cargo.toml").is_file() && dir.join("src").is_dir() {
            out.push(dir.join("src"));
        }
        for entry in std::fs::read_dir(&dir).with_context(|| format!("reading {}", dir.display()))? {
            let path = entry?.path();
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
            if path.is_dir() && !SKIP.contains(&name) && !name.starts_with('.') && name != "src" {
                stack.push(path);
            }
        }
    }
    out.sort();
    Ok(out)
}

/// Modules of one crate (by path, `a::b`; the root is empty) and what each names.
struct Graph {
    edges: BTreeMap<String, BTreeSet<String>>,
}

impl Graph {
    fn of_crate(src: &Path) -> Result<Self> {
        let files = rust_files(src)?;
        let sources: Vec<(PathBuf, String)> = files
            .into_iter()
            .map(|f| std::fs::read_to_string(&f).map(|s| (f.clone(), s)).with_context(|| f.display().to_string()))
            .collect::<Result<_>>()?;
        // `#[path = "x.rs"] mod name;` places a file under its declaring module.
        let mut placed: BTreeMap<PathBuf, String> = BTreeMap::new();
        for (file, text) in &sources {
            let here = module_of(src, file, &placed);
            for (path, name) in path_attributes(&strip(text)) {
                let target = file.parent().unwrap_or(src).join(path);
                placed.insert(target, join(&here, &name));
            }
        }
        let mut uses: Vec<(String, Vec<String>)> = Vec::new();
        let mut known = BTreeSet::new();
        // Inline modules, with the module of the file they are in.
        let mut inline: BTreeMap<String, String> = BTreeMap::new();
        for (file, text) in &sources {
            let module = module_of(src, file, &placed);
            known.insert(module.clone());
            let found = paths(&strip(text), &module);
            known.extend(found.modules.iter().cloned());
            inline.extend(found.modules.into_iter().map(|m| (m, module.clone())));
            uses.extend(found.uses);
        }
        let mut edges: BTreeMap<String, BTreeSet<String>> =
            known.iter().map(|m| (m.clone(), BTreeSet::new())).collect();
        for (module, path) in uses {
            if let Some(target) = longest_known(&path, &known) {
                // Every module sits in the root: naming it is no dependency.
                // An inline module (`mod tests { .. }`) is text of the file
                // around it: naming that file's items is no dependency either.
                let enclosing = inline.get(&module).is_some_and(|file| {
                    module.starts_with(&format!("{target}::"))
                        && (target == *file || target.starts_with(&format!("{file}::")))
                });
                if !target.is_empty() && target != module && !enclosing {
                    edges.entry(module).or_default().insert(target);
                }
            }
        }
        Ok(Self { edges })
    }

    /// Strongly connected sets of more than one module, each sorted.
    fn cycles(&self) -> Vec<Vec<String>> {
        let names: Vec<&String> = self.edges.keys().collect();
        let index: BTreeMap<&String, usize> = names.iter().enumerate().map(|(i, n)| (*n, i)).collect();
        let adj: Vec<Vec<usize>> =
            names.iter().map(|n| self.edges[*n].iter().filter_map(|t| index.get(t).copied()).collect()).collect();
        tarjan(&adj)
            .into_iter()
            .filter(|c| c.len() > 1)
            .map(|c| {
                let mut c: Vec<String> = c.into_iter().map(|i| names[i].clone()).collect();
                c.sort();
                c
            })
            .collect()
    }
}

fn rust_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let path = entry?.path();
        if path.is_dir() {
            if path.file_name().is_some_and(|n| n == "bin") {
                continue;
            }
            out.extend(rust_files(&path)?);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    Ok(out)
}

/// The module a file holds: `src/a/b.rs` and `src/a/b/mod.rs` are `a::b`.
fn module_of(src: &Path, file: &Path, placed: &BTreeMap<PathBuf, String>) -> String {
    if let Some(m) = placed.get(file) {
        return m.clone();
    }
    let rel = file.strip_prefix(src).unwrap_or(file).with_extension("");
    let mut parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib" | "main")) {
        parts.pop();
    }
    parts.join("::")
}

fn join(a: &str, b: &str) -> String {
    if a.is_empty() {
        b.to_owned()
    } else {
        format!("{a}::{b}")
    }
}

fn longest_known(path: &[String], known: &BTreeSet<String>) -> Option<String> {
    (0..=path.len()).rev().map(|n| path[..n].join("::")).find(|p| known.contains(p))
}

/// `(path, module name)` of every `#[path = "..."] mod name` in stripped code.
fn path_attributes(code: &str) -> Vec<(String, String)> {
    let tokens = tokens(code);
    let mut out = Vec::new();
    for (i, t) in tokens.iter().enumerate() {
        if let Token::Str(p) = t {
            let name = tokens[i + 1..].iter().skip_while(|t| *t != &Token::Ident("mod".into())).nth(1);
            let is_path = i >= 2 && tokens[i - 2] == Token::Ident("path".into());
            if let (true, Some(Token::Ident(name))) = (is_path, name) {
                out.push((p.clone(), name.clone()));
            }
        }
    }
    out
}

#[derive(Clone, Debug, PartialEq)]
enum Token {
    Ident(String),
    /// A string literal's contents (kept only for `#[path]`).
    Str(String),
    Sep,
    Open,
    Close,
    Comma,
    Star,
    Other,
}

/// Comments removed; string and char literals kept as one token each.
fn strip(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < b.len() {
        if b[i..].starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if b[i..].starts_with(b"/*") {
            let mut depth = 0;
            while i < b.len() {
                if b[i..].starts_with(b"/*") {
                    depth += 1;
                    i += 2;
                } else if b[i..].starts_with(b"*/") {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(' ');
        } else {
            let c = text[i..].chars().next().expect("in bounds");
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

fn tokens(code: &str) -> Vec<Token> {
    let chars: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == 'r' && matches!(chars.get(i + 1), Some('"' | '#')) && raw_string_end(&chars, i).is_some() {
            let (end, s) = raw_string_end(&chars, i).expect("checked");
            out.push(Token::Str(s));
            i = end;
        } else if c == 'b' && chars.get(i + 1) == Some(&'"') {
            i += 1;
        } else if c.is_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            out.push(Token::Ident(chars[start..i].iter().collect()));
        } else if c == '"' {
            let mut s = String::new();
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    i += 1;
                }
                if let Some(&ch) = chars.get(i) {
                    s.push(ch);
                }
                i += 1;
            }
            i += 1;
            out.push(Token::Str(s));
        } else if c == '\'' {
            // A char literal ('x', '\n', '\u{..}') or a lifetime ('a).
            let close = (i + 2..(i + 12).min(chars.len())).find(|&j| chars[j] == '\'');
            let lifetime =
                chars.get(i + 1).is_some_and(|n| n.is_alphabetic() || *n == '_') && chars.get(i + 2) != Some(&'\'');
            i = match close {
                Some(j) if !lifetime => j + 1,
                _ => i + 1,
            };
            out.push(Token::Other);
        } else if c == ':' && chars.get(i + 1) == Some(&':') {
            out.push(Token::Sep);
            i += 2;
        } else {
            out.push(match c {
                '{' => Token::Open,
                '}' => Token::Close,
                ',' => Token::Comma,
                '*' => Token::Star,
                c if c.is_whitespace() => {
                    i += 1;
                    continue;
                }
                _ => Token::Other,
            });
            i += 1;
        }
    }
    out
}

/// End index and contents of a raw string literal starting at `i` (`r"..."`, `r#"..."#`).
fn raw_string_end(chars: &[char], i: usize) -> Option<(usize, String)> {
    let mut j = i + 1;
    let mut hashes = 0;
    while chars.get(j) == Some(&'#') {
        hashes += 1;
        j += 1;
    }
    if chars.get(j) != Some(&'"') {
        return None;
    }
    let body = j + 1;
    let mut k = body;
    while k < chars.len() {
        if chars[k] == '"' && (1..=hashes).all(|h| chars.get(k + h) == Some(&'#')) {
            return Some((k + 1 + hashes, chars[body..k].iter().collect()));
        }
        k += 1;
    }
    None
}

/// What one file says: the inline modules it holds (`mod x { .. }`, such
/// as its tests) and each path it names, with the module naming it.
struct Found {
    modules: Vec<String>,
    uses: Vec<(String, Vec<String>)>,
}

/// Every module path `code` (the text of module `module`) names through
/// `crate::`, `super::`, `self::` or a child module's name, resolved to a
/// path from the crate root and attributed to the (inline) module it is in.
fn paths(code: &str, module: &str) -> Found {
    let tokens = tokens(code);
    let split = |m: &str| -> Vec<String> {
        if m.is_empty() {
            Vec::new()
        } else {
            m.split("::").map(String::from).collect()
        }
    };
    // Children declared anywhere in the file, by the module declaring them.
    let mut children: BTreeMap<Vec<String>, BTreeSet<String>> = BTreeMap::new();
    let mut found = Found { modules: Vec::new(), uses: Vec::new() };
    // Inline modules open at a brace depth: (module path, depth of its `{`).
    let mut stack: Vec<(Vec<String>, usize)> = vec![(split(module), 0)];
    let mut depth = 0;
    {
        let mut st: Vec<(Vec<String>, usize)> = vec![(split(module), 0)];
        let mut d = 0;
        for (i, t) in tokens.iter().enumerate() {
            match t {
                Token::Open => d += 1,
                Token::Close => {
                    d -= 1;
                    if st.len() > 1 && st.last().is_some_and(|(_, open)| *open == d + 1) {
                        st.pop();
                    }
                }
                Token::Ident(w) if w == "mod" => {
                    if let Some(Token::Ident(name)) = tokens.get(i + 1) {
                        let here = st.last().expect("root").0.clone();
                        children.entry(here.clone()).or_default().insert(name.clone());
                        if tokens.get(i + 2) == Some(&Token::Open) {
                            let mut m = here;
                            m.push(name.clone());
                            st.push((m, d + 1));
                        }
                    }
                }
                _ => {}
            }
        }
    }
    let mut i = 0;
    while i < tokens.len() {
        let here = stack.last().expect("root").0.clone();
        match &tokens[i] {
            Token::Open => depth += 1,
            Token::Close => {
                depth -= 1;
                if stack.len() > 1 && stack.last().is_some_and(|(_, open)| *open == depth + 1) {
                    stack.pop();
                }
            }
            Token::Ident(w) if w == "mod" => {
                if let (Some(Token::Ident(name)), Some(Token::Open)) = (tokens.get(i + 1), tokens.get(i + 2)) {
                    let mut m = here.clone();
                    m.push(name.clone());
                    found.modules.push(m.join("::"));
                    stack.push((m, depth + 1));
                    depth += 1;
                    i += 3;
                    continue;
                }
            }
            _ => {}
        }
        let start = match &tokens[i] {
            Token::Ident(w) if tokens.get(i + 1) == Some(&Token::Sep) => match w.as_str() {
                "crate" => Some((Vec::new(), i + 2)),
                "self" => Some((here.clone(), i + 2)),
                "super" => {
                    let mut base = here.clone();
                    base.pop();
                    let mut j = i + 2;
                    while tokens.get(j) == Some(&Token::Ident("super".into())) && tokens.get(j + 1) == Some(&Token::Sep)
                    {
                        base.pop();
                        j += 2;
                    }
                    Some((base, j))
                }
                // A child module by its name (`use spec::X` beside `mod spec;`).
                name if children.get(&here).is_some_and(|c| c.contains(name)) => Some((here.clone(), i)),
                _ => None,
            },
            _ => None,
        };
        // Only where a path starts: `a::crate::` cannot occur, `x::self::` can (in groups).
        let preceded_by_path = i > 0 && tokens[i - 1] == Token::Sep;
        match start {
            Some((base, j)) if !preceded_by_path => {
                let mut paths = Vec::new();
                i = tree(&tokens, j, base, &mut paths);
                found.uses.extend(paths.into_iter().map(|p| (here.join("::"), p)));
            }
            _ => i += 1,
        }
    }
    found
}

/// Parses a use tree (or an inline path) at `i` under `prefix`; returns the index after it.
fn tree(tokens: &[Token], mut i: usize, mut prefix: Vec<String>, out: &mut Vec<Vec<String>>) -> usize {
    loop {
        match tokens.get(i) {
            Some(Token::Ident(w)) => {
                if w != "self" {
                    prefix.push(w.clone());
                }
                i += 1;
                if tokens.get(i) == Some(&Token::Sep) {
                    i += 1;
                    continue;
                }
                out.push(prefix);
                return i;
            }
            Some(Token::Open) => {
                i += 1;
                loop {
                    match tokens.get(i) {
                        Some(Token::Close) => return i + 1,
                        Some(Token::Comma) => i += 1,
                        None => return i,
                        _ => i = tree(tokens, i, prefix.clone(), out),
                    }
                }
            }
            _ => {
                out.push(prefix);
                return i + 1;
            }
        }
    }
}

/// Tarjan's strongly connected components.
fn tarjan(adj: &[Vec<usize>]) -> Vec<Vec<usize>> {
    struct State<'a> {
        adj: &'a [Vec<usize>],
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        on_stack: Vec<bool>,
        stack: Vec<usize>,
        next: usize,
        out: Vec<Vec<usize>>,
    }
    fn visit(s: &mut State<'_>, v: usize) {
        s.index[v] = Some(s.next);
        s.low[v] = s.next;
        s.next += 1;
        s.stack.push(v);
        s.on_stack[v] = true;
        for &w in &s.adj[v] {
            match s.index[w] {
                None => {
                    visit(s, w);
                    s.low[v] = s.low[v].min(s.low[w]);
                }
                Some(iw) if s.on_stack[w] => s.low[v] = s.low[v].min(iw),
                _ => {}
            }
        }
        if Some(s.low[v]) == s.index[v] {
            let mut c = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack[w] = false;
                c.push(w);
                if w == v {
                    break;
                }
            }
            s.out.push(c);
        }
    }
    let n = adj.len();
    let mut s = State {
        adj,
        index: vec![None; n],
        low: vec![0; n],
        on_stack: vec![false; n],
        stack: Vec::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in 0..n {
        if s.index[v].is_none() {
            visit(&mut s, v);
        }
    }
    s.out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(code: &str, module: &str) -> Vec<String> {
        paths(&strip(code), module).uses.into_iter().map(|(_, p)| p.join("::")).collect()
    }

    #[test]
    fn use_trees_inline_paths_and_relative_paths_resolve_from_the_root() {
        let code = "use crate::{a::B, b::{self, c::D}};\nuse super::x::Y; // crate::in_comment\n\
                    fn f() { crate::e::f(); let s = \"crate::in_string\"; self::g::h(); }";
        assert_eq!(names(code, "m::n"), ["a::B", "b", "b::c::D", "m::x::Y", "e::f", "m::n::g::h"]);
        assert_eq!(names("use super::super::z;", "a::b"), ["z"]);
        assert_eq!(names("mod spec;\nuse spec::Open;", "backend"), ["backend::spec::Open"]);
    }

    #[test]
    fn an_inline_module_is_a_module_of_its_own() {
        let found = paths(&strip("use crate::a::X;\n#[cfg(test)]\nmod tests {\n use super::*; use crate::b::Y;\n}\nfn f() { crate::c::g(); }"), "m");
        assert_eq!(found.modules, ["m::tests"]);
        let uses: Vec<(String, String)> = found.uses.into_iter().map(|(m, p)| (m, p.join("::"))).collect();
        let want = [("m", "a::X"), ("m::tests", "m"), ("m::tests", "b::Y"), ("m", "c::g")];
        assert_eq!(uses, want.map(|(m, p)| (m.to_string(), p.to_string())));
    }

    #[test]
    fn a_cycle_through_three_modules_is_found_and_a_chain_is_not() {
        let graph = |e: &[(&str, &[&str])]| Graph {
            edges: e.iter().map(|(m, to)| (m.to_string(), to.iter().map(|t| t.to_string()).collect())).collect(),
        };
        let g = graph(&[("a", &["b"]), ("b", &["c"]), ("c", &["a"]), ("d", &["a"])]);
        assert_eq!(g.cycles(), vec![vec!["a".to_string(), "b".into(), "c".into()]]);
        assert!(graph(&[("a", &["b"]), ("b", &["c"]), ("c", &[])]).cycles().is_empty());
    }

    #[test]
    fn the_workspace_has_no_import_cycle() {
        check(&crate::workspace_root()).unwrap();
    }
}
