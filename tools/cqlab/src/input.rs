//! Reading input files. Every reader has a size limit and names the file
//! in every error. What the user got wrong (a missing file, a directory
//! where a file belongs, a file over the limit, text that is not UTF-8, a
//! line that is not what it should be) is a usage error (exit 2); a read
//! that fails part-way is an I/O error (exit 1).

use crate::usage::UsageError;
use anyhow::{Context, Result};
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

/// Largest raw dump `decode` and `sim exec` read (an issue queue is at
/// most a few MiB; an ELF for one core far less).
pub const MAX_DUMP_BYTES: u64 = 64 << 20;
/// Largest JSON report `compare` reads.
pub const MAX_REPORT_BYTES: u64 = 64 << 20;
/// Longest line of a JSON Lines file (a campaign record, a trace line).
pub const MAX_LINE_BYTES: usize = 1 << 20;
/// Most bytes of campaign records read from one file (`replay`, `campaign merge`).
pub const MAX_RECORDS_BYTES: u64 = 1 << 30;

fn refuse(what: &str, path: &Path, why: impl std::fmt::Display) -> anyhow::Error {
    UsageError(format!("{what} {}: {why}", path.display())).into()
}

/// Checks, without reading it, that `path` can be an input file: it
/// exists and is not a directory.
pub fn check_file(what: &str, path: &Path) -> Result<(), UsageError> {
    match std::fs::metadata(path) {
        Ok(m) if m.is_dir() => Err(UsageError(format!("{what} {}: is a directory, expected a file", path.display()))),
        Ok(_) => Ok(()),
        Err(e) => Err(UsageError(format!("{what} {}: {e}", path.display()))),
    }
}

/// Opens `path` for reading: a file (a FIFO or a device too), never a
/// directory.
pub fn open(what: &str, path: &Path) -> Result<File> {
    check_file(what, path)?;
    File::open(path).map_err(|e| refuse(what, path, e))
}

/// The whole of `path`, at most `limit` bytes.
pub fn read_bytes(what: &str, path: &Path, limit: u64) -> Result<Vec<u8>> {
    let f = open(what, path)?;
    let mut bytes = Vec::new();
    f.take(limit + 1).read_to_end(&mut bytes).with_context(|| format!("reading {what} {}", path.display()))?;
    if bytes.len() as u64 > limit {
        return Err(refuse(what, path, format!("holds more than {limit} bytes, the most this command reads")));
    }
    Ok(bytes)
}

/// The whole of `path` as UTF-8 text, at most `limit` bytes.
pub fn read_text(what: &str, path: &Path, limit: u64) -> Result<String> {
    let bytes = read_bytes(what, path, limit)?;
    String::from_utf8(bytes).map_err(|e| {
        refuse(what, path, format!("is not UTF-8 text (invalid byte at offset {})", e.utf8_error().valid_up_to()))
    })
}

/// A JSON Lines file, line by line: each line at most [`MAX_LINE_BYTES`],
/// the file at most a given total. Remembers whether the last line ended
/// without its newline (a file cut short, e.g. by Ctrl-C).
pub struct Lines {
    reader: BufReader<File>,
    what: String,
    path: String,
    /// Lines read so far (the number of the last one returned).
    pub line_no: usize,
    read: u64,
    limit: u64,
    /// The last line returned had no newline: the file ends inside it.
    pub cut: bool,
}

impl Lines {
    pub fn open(what: &str, path: &Path, limit: u64) -> Result<Self> {
        let f = open(what, path)?;
        Ok(Lines {
            reader: BufReader::new(f),
            what: what.to_owned(),
            path: path.display().to_string(),
            line_no: 0,
            read: 0,
            limit,
            cut: false,
        })
    }

    /// `WHAT PATH line N` for messages.
    pub fn at(&self) -> String {
        format!("{} {} line {}", self.what, self.path, self.line_no)
    }

    /// The next line without its newline, `None` at the end.
    pub fn next_line(&mut self) -> Result<Option<String>> {
        let mut buf = Vec::new();
        let max = MAX_LINE_BYTES as u64 + 1;
        (&mut self.reader)
            .take(max)
            .read_until(b'\n', &mut buf)
            .with_context(|| format!("reading {} {} after line {}", self.what, self.path, self.line_no))?;
        if buf.is_empty() {
            return Ok(None);
        }
        self.line_no += 1;
        self.read += buf.len() as u64;
        let ended = buf.last() == Some(&b'\n');
        if !ended && buf.len() as u64 >= max {
            return Err(UsageError(format!("{} is longer than {MAX_LINE_BYTES} bytes", self.at())).into());
        }
        if self.read > self.limit {
            return Err(UsageError(format!(
                "{} {}: more than {} bytes, the most this command reads",
                self.what, self.path, self.limit
            ))
            .into());
        }
        if ended {
            buf.pop();
        }
        self.cut = !ended;
        String::from_utf8(buf).map(Some).map_err(|e| {
            UsageError(format!(
                "{} is not UTF-8 (invalid byte at column {})",
                self.at(),
                e.utf8_error().valid_up_to() + 1
            ))
            .into()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file holding `bytes`, removed when the test drops it.
    fn scratch(name: &str, bytes: &[u8]) -> tempfile::TempPath {
        let p = tempfile::Builder::new().prefix(&format!("cqlab-input-{name}-")).tempfile().unwrap().into_temp_path();
        std::fs::write(&p, bytes).unwrap();
        p
    }

    fn is_usage(e: &anyhow::Error) -> bool {
        e.downcast_ref::<UsageError>().is_some()
    }

    #[test]
    fn readers_are_bounded_and_name_the_file() {
        let e = read_bytes("dump", Path::new("/dev/zero"), 1000).unwrap_err();
        assert!(is_usage(&e) && e.to_string().contains("/dev/zero") && e.to_string().contains("1000"), "{e}");
        let e = read_bytes("dump", Path::new("/tmp"), 1000).unwrap_err();
        assert!(is_usage(&e) && e.to_string().contains("/tmp: is a directory"), "{e}");
        let e = read_bytes("dump", Path::new("/nonexistent/x"), 1000).unwrap_err();
        assert!(is_usage(&e) && e.to_string().contains("/nonexistent/x"), "{e}");
        let p = scratch("latin1", b"caf\xe9\n");
        let e = read_text("report", &p, 1000).unwrap_err();
        assert!(is_usage(&e) && e.to_string().contains(&p.display().to_string()), "{e}");
        assert_eq!(read_text("report", &scratch("ok", b"{}"), 2).unwrap(), "{}");
    }

    #[test]
    fn lines_know_a_cut_end_and_refuse_endless_lines() {
        let p = scratch("cut", b"one\ntwo\nthr");
        let mut l = Lines::open("trace", &p, 1000).unwrap();
        assert_eq!(l.next_line().unwrap().as_deref(), Some("one"));
        assert_eq!(l.next_line().unwrap().as_deref(), Some("two"));
        assert!(!l.cut);
        assert_eq!(l.next_line().unwrap().as_deref(), Some("thr"));
        assert!(l.cut && l.line_no == 3);
        assert_eq!(l.next_line().unwrap(), None);
        let mut z = Lines::open("trace", Path::new("/dev/zero"), u64::MAX).unwrap();
        let e = z.next_line().unwrap_err();
        assert!(is_usage(&e) && e.to_string().contains("/dev/zero line 1 is longer than"), "{e}");
        let mut bad = Lines::open("trace", &scratch("utf8", b"ok\n\xff\n"), 1000).unwrap();
        bad.next_line().unwrap();
        let e = bad.next_line().unwrap_err();
        assert!(e.to_string().contains("line 2 is not UTF-8"), "{e}");
        let mut big = Lines::open("records", &scratch("total", b"aaaa\nbbbb\n"), 6).unwrap();
        big.next_line().unwrap();
        assert!(big.next_line().unwrap_err().to_string().contains("more than 6 bytes"));
    }
}
