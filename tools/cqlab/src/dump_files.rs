//! The files a failing run leaves for debugging, under `--dump-dir`: the
//! whole error with its hang dump as text, the same as JSON, and every
//! core's trace ring as a Chrome/Perfetto trace. `race`, `replay` and
//! `sweep` write them alike; a leaf module, so none imports another for it.

use crate::race::failure::Failure;
use anyhow::Result;
use cqlab_driver::Device;
use std::path::{Path, PathBuf};

/// Writes `DIR/STEM.txt` (the whole error with its hang dump),
/// `STEM.json` (`identity`'s fields, then the failure, its text and the
/// dump as JSON) and, given the device, `STEM.trace.json` (every core's
/// trace ring). Returns the files written. `identity` names the run: a
/// seed, a sweep point.
pub fn write(
    dir: &Path,
    stem: &str,
    identity: serde_json::Map<String, serde_json::Value>,
    f: &Failure,
    dev: Option<&mut Device>,
) -> Result<Vec<PathBuf>> {
    crate::output::create_dir("--dump-dir", dir)?;
    let base = dir.join(stem);
    let text = base.with_extension("txt");
    crate::output::write("dump", &text, (f.full_text() + "\n").as_bytes())?;
    let mut json = identity;
    json.insert("failure".into(), serde_json::to_value(f.classify())?);
    json.insert("detail".into(), f.full_text().into());
    json.insert("dump".into(), serde_json::to_value(f.dump())?);
    let json_path = base.with_extension("json");
    crate::output::write("dump", &json_path, (serde_json::to_string_pretty(&json)? + "\n").as_bytes())?;
    let mut written = vec![text, json_path];
    if let Some(dev) = dev {
        let trace = crate::race::trace_export::chrome_trace(dev)?;
        let trace_path = base.with_extension("trace.json");
        crate::output::write("trace", &trace_path, (serde_json::to_string(&trace)? + "\n").as_bytes())?;
        written.push(trace_path);
    }
    Ok(written)
}

/// [`write`] for a run that is reported whatever becomes of its dump: a
/// dump that cannot be written is warned of on stderr, naming `run`, and
/// its reason kept (`None`: written, or nothing to write).
pub fn write_or_warn(
    dir: &Path,
    stem: &str,
    run: &str,
    identity: serde_json::Map<String, serde_json::Value>,
    f: &Failure,
    dev: Option<&mut Device>,
) -> (Vec<PathBuf>, Option<String>) {
    match write(dir, stem, identity, f, dev) {
        Ok(files) => (files, None),
        Err(e) => {
            let why = crate::out::chain(&e);
            crate::out::diagln!("warning: {run}: its dump was not written: {why}");
            (Vec::new(), Some(why))
        }
    }
}

/// Fails the command, after its report, when `lost` failing runs (`runs`,
/// e.g. "seed(s)") have no dump in `dir`: a campaign asked for dumps must
/// not end as if it had them.
pub fn fail_if_lost(lost: usize, runs: &str, dir: &Path, kept: &str) -> Result<()> {
    if lost > 0 {
        anyhow::bail!("{lost} failing {runs} have no dump in {} ({kept}; see the warnings above)", dir.display());
    }
    Ok(())
}
