//! `cargo xtask links`: every relative link of the README and `docs/`
//! resolves inside the repository, to a file that exists and, for
//! `file.md#anchor`, a heading that gives that anchor.

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};

/// Checks the README and every page under `docs/`.
pub fn check(root: &Path) -> Result<()> {
    let mut pages = vec![root.join("README.md")];
    let docs = root.join("docs");
    if docs.is_dir() {
        for entry in std::fs::read_dir(&docs).with_context(|| format!("reading {}", docs.display()))? {
            let path = entry?.path();
            if path.extension().is_some_and(|e| e == "md") {
                pages.push(path);
            }
        }
    }
    pages.sort();
    let mut broken = Vec::new();
    for page in &pages {
        let text = std::fs::read_to_string(page).with_context(|| format!("reading {}", page.display()))?;
        for target in links(&text) {
            if let Err(why) = resolve(root, page, &target) {
                broken.push(format!("{}: ({target}) {why}", page.strip_prefix(root).unwrap_or(page).display()));
            }
        }
    }
    if !broken.is_empty() {
        bail!("broken documentation links:\n  {}", broken.join("\n  "));
    }
    eprintln!("xtask: every documentation link resolves");
    Ok(())
}

/// The targets of the `[text](target)` links of a Markdown page outside code blocks.
fn links(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let mut rest = line;
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(end) = after.find(')') else { break };
            out.push(after[..end].to_owned());
            rest = &after[end..];
        }
    }
    out
}

/// Whether `target`, linked from `page`, names a file of the repository
/// (and a heading of it); web links are not followed.
fn resolve(root: &Path, page: &Path, target: &str) -> Result<(), String> {
    if target.starts_with("http://") || target.starts_with("https://") || target.starts_with("mailto:") {
        return Ok(());
    }
    let (file, anchor) = target.split_once('#').unwrap_or((target, ""));
    let path: PathBuf = if file.is_empty() { page.to_owned() } else { page.parent().unwrap_or(root).join(file) };
    let path = path.canonicalize().map_err(|_| "no such file".to_owned())?;
    let root = root.canonicalize().map_err(|e| e.to_string())?;
    if !path.starts_with(&root) {
        return Err("outside the repository".into());
    }
    if !anchor.is_empty() {
        let text = std::fs::read_to_string(&path).map_err(|e| e.to_string())?;
        if !text.lines().filter(|l| l.starts_with('#')).any(|h| slug(h.trim_start_matches('#')) == anchor) {
            return Err(format!("no heading gives #{anchor}"));
        }
    }
    Ok(())
}

/// A heading's anchor as GitHub makes it: lower case, spaces to dashes,
/// punctuation other than `-` and `_` dropped.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_outside_code_blocks_and_github_anchors() {
        let page = "see [a](docs/a.md) and [b](b.md#x-y)\n```\n[c](not/a/link)\n```\n";
        assert_eq!(links(page), ["docs/a.md", "b.md#x-y"]);
        assert_eq!(slug(" Exit codes"), "exit-codes");
        assert_eq!(slug(" The `cqlab` command line"), "the-cqlab-command-line");
    }

    #[test]
    fn every_documentation_link_of_the_repository_resolves() {
        check(&crate::workspace_root()).unwrap();
    }
}
