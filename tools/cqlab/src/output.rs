//! Output files: checked before any work starts, then written through a
//! temporary file in the same directory and renamed into place, so a run
//! that fails (or a full disk) never leaves a half-written file where a
//! good one was. Errors name the file.
//!
//! The checks: the directory it goes in exists; a file output is not a
//! directory and a directory output is not a file; an output is none of the
//! command's inputs and no other output of the same run.

use crate::usage::UsageError;
use anyhow::{Context, Result};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// What an output path names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    File,
    /// A directory the command fills (created when missing).
    Dir,
}

/// The directory `path` goes in (`.` for a bare name).
fn parent(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// Where `path` really is: itself resolved when it exists, else its
/// resolved directory joined with its name.
fn resolved(path: &Path) -> Option<PathBuf> {
    std::fs::canonicalize(path).ok().or_else(|| Some(std::fs::canonicalize(parent(path)).ok()?.join(path.file_name()?)))
}

/// Whether `a` and `b` name the same file.
pub fn same_file(a: &Path, b: &Path) -> bool {
    match (resolved(a), resolved(b)) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

/// Checks that `path` can be written as output `what` (an option name such
/// as `--perfetto`) before any work: see the module docs.
pub fn check(what: &str, path: &Path, kind: Kind, inputs: &[&Path]) -> Result<(), UsageError> {
    let refuse = |why: String| Err(UsageError(format!("{what} {}: {why}", path.display())));
    if path.as_os_str().is_empty() {
        return refuse("an empty path".into());
    }
    if path == Path::new("-") {
        // Only `run --json -` means stdout (it never gets here): a file
        // named `-` is a surprise, not what was meant.
        return refuse("stdout is not taken here; name a file (./- if that is the name)".into());
    }
    let dir = parent(path);
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => return refuse(format!("{} is not a directory", dir.display())),
        Err(e) => return refuse(format!("its directory {}: {e}", dir.display())),
    }
    match (std::fs::metadata(path), kind) {
        (Ok(m), Kind::File) if m.is_dir() => return refuse("is a directory, expected a file".into()),
        (Ok(m), Kind::Dir) if !m.is_dir() => return refuse("exists and is not a directory".into()),
        _ => {}
    }
    if let Some(input) = inputs.iter().find(|i| same_file(path, i)) {
        return refuse(format!("is the input {}: refusing to overwrite an input", input.display()));
    }
    Ok(())
}

/// Refuses two outputs of one run that are the same file.
pub fn distinct(outputs: &[(&str, &Path)]) -> Result<(), UsageError> {
    for (i, (a, pa)) in outputs.iter().enumerate() {
        if let Some((b, _)) = outputs[..i].iter().find(|(_, pb)| same_file(pa, pb)) {
            return Err(UsageError(format!(
                "{a} {} is also {b}: two outputs of one run cannot share a file",
                pa.display()
            )));
        }
    }
    Ok(())
}

/// An output being written: a temporary file beside `path`, renamed onto
/// it by [`Atomic::commit`]; dropped without a commit, it leaves nothing.
/// An existing path that is not a regular file (`/dev/null`, a FIFO, a
/// terminal) is written in place: renaming over it would replace it.
pub struct Atomic {
    out: BufWriter<Target>,
    path: PathBuf,
    what: String,
}

enum Target {
    Temporary(tempfile::NamedTempFile),
    InPlace(std::fs::File),
}

impl Write for Target {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Target::Temporary(t) => t.write(buf),
            Target::InPlace(f) => f.write(buf),
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Target::Temporary(t) => t.flush(),
            Target::InPlace(f) => f.flush(),
        }
    }
}

impl Atomic {
    pub fn create(what: &str, path: &Path) -> Result<Self> {
        use std::os::unix::fs::PermissionsExt;
        let special = std::fs::metadata(path).is_ok_and(|m| !m.is_file() && !m.is_dir());
        let target = if special {
            let f = std::fs::OpenOptions::new()
                .write(true)
                .open(path)
                .with_context(|| format!("opening {what} {}", path.display()))?;
            Target::InPlace(f)
        } else {
            // Created as `File::create` would (0666 less the umask), not 0600.
            let name = path.file_name().map_or("out".into(), |n| n.to_string_lossy());
            let tmp = tempfile::Builder::new()
                .prefix(&format!(".{name}."))
                .permissions(std::fs::Permissions::from_mode(0o666))
                .tempfile_in(parent(path))
                .with_context(|| format!("creating {what} {} (a temporary file beside it)", path.display()))?;
            Target::Temporary(tmp)
        };
        Ok(Atomic { out: BufWriter::new(target), path: path.to_owned(), what: what.to_owned() })
    }

    /// Flushes, syncs and renames the file into place.
    pub fn commit(self) -> Result<()> {
        let (what, path) = (self.what, self.path);
        let ctx = || format!("writing {what} {}", path.display());
        match self.out.into_inner().map_err(|e| e.into_error()).with_context(ctx)? {
            Target::Temporary(tmp) => {
                tmp.as_file().sync_all().with_context(ctx)?;
                tmp.persist(&path)
                    .map_err(|e| e.error)
                    .with_context(|| format!("renaming into {what} {}", path.display()))?;
            }
            Target::InPlace(mut f) => f.flush().with_context(ctx)?,
        }
        Ok(())
    }
}

impl Atomic {
    /// `e` with the output's name in its message.
    fn named(&self, e: std::io::Error) -> std::io::Error {
        std::io::Error::new(e.kind(), format!("writing {} {}: {e}", self.what, self.path.display()))
    }
}

impl Write for Atomic {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.out.write(buf).map_err(|e| self.named(e))
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush().map_err(|e| self.named(e))
    }
}

/// Writes `bytes` as output `what` at `path` (temporary file and rename).
pub fn write(what: &str, path: &Path, bytes: &[u8]) -> Result<()> {
    let mut f = Atomic::create(what, path)?;
    // Its errors name the output already (`Atomic::named`).
    f.write_all(bytes)?;
    f.commit()
}

/// Creates the directory output `what` at `path` if missing.
pub fn create_dir(what: &str, path: &Path) -> Result<()> {
    std::fs::create_dir_all(path).with_context(|| format!("creating {what} {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::FileTypeExt;

    #[test]
    fn outputs_are_checked_and_replaced_whole() {
        let dir = std::env::temp_dir().join(format!("cqlab-output-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let input = dir.join("in.json");
        std::fs::write(&input, b"input").unwrap();
        let out = dir.join("out.json");
        assert!(check("--out", &out, Kind::File, &[&input]).is_ok());
        let e = check("--out", &input, Kind::File, &[&input]).unwrap_err();
        assert!(e.0.contains("is the input"), "{e}");
        // The same file by another name.
        let e = check("--out", &dir.join(".").join("in.json"), Kind::File, &[&input]).unwrap_err();
        assert!(e.0.contains("is the input"), "{e}");
        assert!(check("--out", &dir.join("missing/out.json"), Kind::File, &[]).unwrap_err().0.contains("missing"));
        assert!(check("--out", &dir, Kind::File, &[]).unwrap_err().0.contains("is a directory"));
        assert!(check("--out", &input, Kind::Dir, &[]).unwrap_err().0.contains("not a directory"));
        assert!(distinct(&[("--json", &out), ("--trace", &dir.join("out.json"))]).is_err());
        write("--out", &out, b"new").unwrap();
        assert_eq!(std::fs::read(&out).unwrap(), b"new");
        // Dropped without commit: the old file stays and no temporary is left.
        let mut f = Atomic::create("--out", &out).unwrap();
        f.write_all(b"half").unwrap();
        drop(f);
        assert_eq!(std::fs::read(&out).unwrap(), b"new");
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 2, "a temporary file was left behind");
        // A device is written in place, never renamed over; a full one is
        // an error naming it.
        let e = write("--out", Path::new("/dev/full"), b"x").unwrap_err();
        assert!(format!("{e:#}").contains("/dev/full"), "{e:#}");
        assert!(std::fs::metadata("/dev/full").unwrap().file_type().is_char_device(), "/dev/full replaced");
        write("--out", Path::new("/dev/null"), b"x").unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
