//! `scripts/setup` decides every install from the package manager's record.
//! The real script runs against fake `dpkg-query`, `apt-get`, `npm` and `node`
//! (put first on PATH and named by the DPKG_QUERY / APT_GET / NPM / NODE
//! overrides) that keep their state in files: a dpkg status list, an npm
//! "tree is complete" flag, and a log of every install they were asked for.
//! Fake `apt-get install` records its packages as installed, so a second run
//! shows the script is quick and quiet when everything is there.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

struct FakeMachine {
    dir: tempfile::TempDir,
}

const FAKE_DPKG_QUERY: &str = r#"#!/usr/bin/env bash
# dpkg-query -W -f='${Status}' PKG, answered from $FAKE/status ("pkg|status" lines)
pkg="${@: -1}"
line="$(grep -F "$pkg|" "$FAKE/status" | grep "^$pkg|" | head -1)"
if [ -z "$line" ]; then echo "dpkg-query: no packages found matching $pkg" >&2; exit 1; fi
printf '%s' "${line#*|}"
"#;

const FAKE_APT_GET: &str = r#"#!/usr/bin/env bash
echo "apt-get $*" >> "$FAKE/log"
if [ "$1" = install ]; then
  for a in "$@"; do
    case "$a" in install|-*) ;; *) grep -v "^$a|" "$FAKE/status" > "$FAKE/status.new"; echo "$a|install ok installed" >> "$FAKE/status.new"; mv "$FAKE/status.new" "$FAKE/status" ;; esac
  done
fi
"#;

const FAKE_NPM: &str = r#"#!/usr/bin/env bash
case "$1" in
  ls) [ -e "$FAKE/npm-tree-complete" ] ;;
  ci) echo "npm ci in $(basename "$PWD")" >> "$FAKE/log"; touch "$FAKE/npm-tree-complete" ;;
  *) echo "fake npm: unexpected $*" >&2; exit 2 ;;
esac
"#;

impl FakeMachine {
    /// A machine whose dpkg record holds `packages` ("name|status") and whose
    /// npm tree is complete or not.
    fn new(packages: &[&str], npm_tree_complete: bool) -> FakeMachine {
        let dir = tempfile::tempdir().expect("a temp dir");
        let bin = dir.path().join("bin");
        fs::create_dir(&bin).unwrap();
        for (name, text) in [("dpkg-query", FAKE_DPKG_QUERY), ("apt-get", FAKE_APT_GET), ("npm", FAKE_NPM), ("node", "#!/bin/sh\n"), ("sudo", "#!/bin/sh\nexec \"$@\"\n")] {
            let path = bin.join(name);
            fs::write(&path, text).unwrap();
            make_executable(&path);
        }
        let mut status = packages.join("\n");
        status.push('\n');
        fs::write(dir.path().join("status"), status).unwrap();
        fs::write(dir.path().join("log"), "").unwrap();
        if npm_tree_complete {
            fs::write(dir.path().join("npm-tree-complete"), "").unwrap();
        }
        FakeMachine { dir }
    }

    /// Runs the real scripts/setup on this machine; returns the installs it asked for.
    fn run_setup(&self, node: &str) -> Vec<String> {
        let before = fs::read_to_string(self.dir.path().join("log")).unwrap();
        let bin = self.dir.path().join("bin");
        let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
        let out = Command::new("bash")
            .arg(repo().join("scripts/setup"))
            .env("PATH", path)
            .env("FAKE", self.dir.path())
            .env("DPKG_QUERY", bin.join("dpkg-query"))
            .env("APT_GET", bin.join("apt-get"))
            .env("NPM", bin.join("npm"))
            .env("NODE", node)
            .output()
            .expect("bash runs scripts/setup");
        assert!(out.status.success(), "scripts/setup failed: {}", String::from_utf8_lossy(&out.stderr));
        let after = fs::read_to_string(self.dir.path().join("log")).unwrap();
        after[before.len()..].lines().filter(|l| !l.contains(" update")).map(str::to_owned).collect()
    }

    fn node(&self) -> String {
        self.dir.path().join("bin/node").display().to_string()
    }
}

fn make_executable(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(path, fs::Permissions::from_mode(0o755)).unwrap();
}

const BASE: &[&str] = &["g++|install ok installed", "curl|install ok installed", "procps|install ok installed"];

#[test]
fn installs_libclang_when_only_libclang_cpp_is_present() {
    let mut packages = BASE.to_vec();
    packages.push("libclang-cpp14|install ok installed");
    let machine = FakeMachine::new(&packages, true);
    let installs = machine.run_setup(&machine.node());
    assert_eq!(installs, vec!["apt-get install -y -qq libclang-dev clang"], "libclang-cpp14 is not libclang");
    // Now the record has them: a second run installs nothing.
    assert_eq!(machine.run_setup(&machine.node()), Vec::<String>::new());
}

#[test]
fn does_nothing_when_everything_is_there() {
    let mut packages = BASE.to_vec();
    packages.extend(["libclang-dev|install ok installed", "clang|install ok installed"]);
    let machine = FakeMachine::new(&packages, true);
    assert_eq!(machine.run_setup(&machine.node()), Vec::<String>::new());
}

#[test]
fn a_package_removed_with_its_config_left_is_missing() {
    let mut packages = BASE.to_vec();
    packages.extend(["libclang-dev|deinstall ok config-files", "clang|install ok installed"]);
    let machine = FakeMachine::new(&packages, true);
    assert_eq!(machine.run_setup(&machine.node()), vec!["apt-get install -y -qq libclang-dev"]);
}

#[test]
fn runs_npm_ci_when_npm_says_the_tree_is_incomplete() {
    let mut packages = BASE.to_vec();
    packages.extend(["libclang-dev|install ok installed", "clang|install ok installed"]);
    let machine = FakeMachine::new(&packages, false);
    assert_eq!(machine.run_setup(&machine.node()), vec!["npm ci in pouchdb"]);
    assert_eq!(machine.run_setup(&machine.node()), Vec::<String>::new());
}

#[test]
fn installs_node_when_the_command_is_missing() {
    let mut packages = BASE.to_vec();
    packages.extend(["libclang-dev|install ok installed", "clang|install ok installed", "curl|install ok installed"]);
    let machine = FakeMachine::new(&packages, true);
    let installs = machine.run_setup("no-such-node-command");
    assert_eq!(installs, vec!["apt-get install -y -qq nodejs npm"]);
}
