//! Standard output of the report commands (`run`, `compare`, `trace
//! summary`, `decode --kind completion|trace`). When the reader goes away
//! (`cqlab ... | head -1`), the command ends quietly with exit 0 instead of
//! panicking on the broken pipe; any other write error is exit 1.

use std::io::{ErrorKind, Write};

/// Writes one line to stdout (see the module docs).
pub fn line(args: std::fmt::Arguments<'_>) {
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_fmt(args).and_then(|()| out.write_all(b"\n")) {
        if e.kind() == ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("error: writing to stdout: {e}");
        std::process::exit(1);
    }
}

/// `println!` for report output: a closed pipe ends the command quietly.
macro_rules! outln {
    ($($t:tt)*) => { $crate::out::line(format_args!($($t)*)) };
}
pub(crate) use outln;
