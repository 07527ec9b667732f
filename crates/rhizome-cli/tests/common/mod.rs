//! Helpers shared by the CLI's integration tests: running the real binary.
#![allow(dead_code)] // each test file uses its own subset

pub mod attacks;
pub mod process;
pub mod server;

use std::path::Path;
use std::process::{Command, Output};

/// The `rhizome` binary built for these tests, on the store at `data`.
pub fn rhizome(data: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_rhizome"));
    c.arg("--data").arg(data);
    c
}

pub fn run(cmd: &mut Command) -> Output {
    cmd.output().expect("rhizome runs")
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Runs a command that must succeed; its stdout.
pub fn output_ok(cmd: &mut Command) -> String {
    let o = run(cmd);
    assert!(o.status.success(), "rhizome failed: {}", stderr(&o));
    stdout(&o)
}
