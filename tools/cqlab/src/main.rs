//! `cqlab`: the command-line tool for command-queue bring-up work. The
//! commands live in the library (`lib.rs`), so the tests and the fuzzer
//! can parse and check argument vectors in-process.

fn main() -> std::process::ExitCode {
    cqlab::main_with(std::env::args_os())
}
