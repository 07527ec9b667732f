//! `scripts/setup` decides every install from the package manager's record.
//! The real script (copied with scripts/lib/ into a fake repository root)
//! runs against fake `dpkg-query`, `apt-get`, `npm`, `node`, `python3`,
//! `java` and `mvn` (named by the DPKG_QUERY / APT_GET / NPM / NODE / PYTHON
//! / JAVA / MVN overrides) that keep their state in files: a dpkg status
//! list, an npm "tree is complete" flag, a venv whose fake pip knows what it
//! installed, a Maven "local repository is complete" flag, and a log of
//! every install they were asked for.
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

// `mvn [-o] -q -f POM dependency:resolve`: offline it succeeds only once the
// local repository has everything; online it fetches (logged).
const FAKE_MVN: &str = r#"#!/usr/bin/env bash
offline=0
for a in "$@"; do [ "$a" = -o ] && offline=1; done
[ -e "$FAKE/m2-complete" ] && exit 0
[ "$offline" = 1 ] && exit 1
echo "mvn resolve $(basename "$(dirname "${@: -2:1}")")" >> "$FAKE/log"
touch "$FAKE/m2-complete"
"#;

// `python3 -m venv DIR` makes DIR/bin/python, a fake whose pip keeps its
// record in DIR/installed (`./python`, the repository's package, is
// recorded under its name, rhizome, as pip does).
const FAKE_PYTHON: &str = r#"#!/usr/bin/env bash
[ "$1 $2" = "-m venv" ] || { echo "fake python3: unexpected $*" >&2; exit 2; }
mkdir -p "$3/bin"
cat > "$3/bin/python" <<'PY'
#!/usr/bin/env bash
venv="$(cd "$(dirname "$0")/.." && pwd)"
[ "$1 $2" = "-m pip" ] || exit 2
case "$3" in
  show) shift 3; for p in "$@"; do case "$p" in -*) ;; *) grep -qx "$p" "$venv/installed" 2>/dev/null || exit 1 ;; esac; done ;;
  install) shift 3; for p in "$@"; do case "$p" in -*) ;; *) p="${p%%==*}"; [ "$p" = ./python ] && echo rhizome >> "$venv/installed"; echo "$p" >> "$venv/installed"; echo "pip install $p" >> "$FAKE/log" ;; esac; done ;;
  *) exit 2 ;;
esac
PY
chmod +x "$3/bin/python"
"#;

impl FakeMachine {
    /// A machine whose dpkg record holds `packages` ("name|status") and whose
    /// npm tree is complete or not.
    fn new(packages: &[&str], npm_tree_complete: bool) -> FakeMachine {
        Self::with_maven(packages, npm_tree_complete, true)
    }

    /// `new`, with Maven's local repository complete or not.
    fn with_maven(packages: &[&str], npm_tree_complete: bool, m2_complete: bool) -> FakeMachine {
        let dir = tempfile::tempdir().expect("a temp dir");
        let bin = dir.path().join("bin");
        fs::create_dir(&bin).unwrap();
        for (name, text) in [
            ("dpkg-query", FAKE_DPKG_QUERY),
            ("apt-get", FAKE_APT_GET),
            ("npm", FAKE_NPM),
            ("node", "#!/bin/sh\n"),
            ("python3", FAKE_PYTHON),
            ("sudo", "#!/bin/sh\nexec \"$@\"\n"),
            ("mvn", FAKE_MVN),
            ("java", "#!/bin/sh\n"),
        ] {
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
        if m2_complete {
            fs::write(dir.path().join("m2-complete"), "").unwrap();
        }
        // The repository: the real scripts, and the folders they work in.
        let root = dir.path().join("repo");
        fs::create_dir_all(root.join("scripts/lib")).unwrap();
        fs::create_dir_all(root.join("tests/pouchdb")).unwrap();
        fs::create_dir_all(root.join("tests/clients")).unwrap();
        fs::create_dir_all(root.join("tests/python")).unwrap();
        fs::create_dir_all(root.join("tests/ldp")).unwrap();
        fs::copy(repo().join("tests/ldp/pom.xml"), root.join("tests/ldp/pom.xml")).unwrap();
        fs::copy(repo().join("scripts/setup"), root.join("scripts/setup")).unwrap();
        fs::copy(repo().join("scripts/lib/install.sh"), root.join("scripts/lib/install.sh")).unwrap();
        FakeMachine { dir }
    }

    /// Runs the real scripts/setup on this machine; returns the installs it asked for.
    fn run_setup(&self, node: &str) -> Vec<String> {
        self.run_setup_with(node, &[])
    }

    /// Runs the real scripts/setup with `args`; returns the installs it asked for.
    fn run_setup_with(&self, node: &str, args: &[&str]) -> Vec<String> {
        let before = fs::read_to_string(self.dir.path().join("log")).unwrap();
        let bin = self.dir.path().join("bin");
        let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
        let out = Command::new("bash")
            .arg(self.dir.path().join("repo/scripts/setup"))
            .args(args)
            .env("PATH", path)
            .env("FAKE", self.dir.path())
            .env("DPKG_QUERY", bin.join("dpkg-query"))
            .env("APT_GET", bin.join("apt-get"))
            .env("NPM", bin.join("npm"))
            .env("NODE", node)
            .env("PYTHON", bin.join("python3"))
            .env("MVN", bin.join("mvn"))
            .env("JAVA", bin.join("java"))
            .output()
            .expect("bash runs scripts/setup");
        assert!(out.status.success(), "scripts/setup failed: {}", String::from_utf8_lossy(&out.stderr));
        let after = fs::read_to_string(self.dir.path().join("log")).unwrap();
        after[before.len()..].lines().filter(|l| !l.contains(" update")).map(str::to_owned).collect()
    }

    /// A venv of tests/python whose pip already has rdflib, pytest and
    /// the Python CouchDB clients.
    fn with_rdflib(&self) {
        let venv = self.dir.path().join("repo/tests/python/.venv");
        let out = Command::new(self.dir.path().join("bin/python3")).args(["-m", "venv"]).arg(&venv).output().unwrap();
        assert!(out.status.success());
        fs::write(venv.join("installed"), VENV_PACKAGES).unwrap();
    }

    /// The repository's Python package (python/) and a crate it is built
    /// from, both present in the fake repository.
    fn with_python_package(&self) {
        let root = self.dir.path().join("repo");
        fs::create_dir_all(root.join("python/rhizome")).unwrap();
        fs::create_dir_all(root.join("python/tests")).unwrap();
        fs::create_dir_all(root.join("crates/rhizome-rdf/src")).unwrap();
        fs::write(root.join("python/pyproject.toml"), "[project]\nname = \"rhizome\"\n").unwrap();
        fs::write(root.join("crates/rhizome-rdf/src/lib.rs"), "// one\n").unwrap();
        fs::write(root.join("Cargo.lock"), "# lock\n").unwrap();
    }

    fn node(&self) -> String {
        self.dir.path().join("bin/node").display().to_string()
    }
}

fn make_executable(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(path, fs::Permissions::from_mode(0o755)).unwrap();
}

/// What every machine here has: the packages setup checks besides libclang.
const BASE: &[&str] = &["g++|install ok installed", "curl|install ok installed", "procps|install ok installed", "chromium|install ok installed", "openjdk-17-jdk-headless|install ok installed"];

/// What pip's record in the test venv holds once setup has run (the
/// repository's own package aside).
const VENV_PACKAGES: &str = "rdflib\npytest\nibmcloudant\npycouchdb\ntyping_extensions\nrequests\nplaywright\npytest-playwright\n";
const LIBCLANG: &[&str] = &["libclang-dev|install ok installed", "clang|install ok installed"];

/// A machine with BASE and `packages` in dpkg's record, the npm tree
/// complete or not, and rdflib in the venv or not.
fn machine(packages: &[&str], npm_tree_complete: bool, rdflib: bool) -> FakeMachine {
    let record: Vec<&str> = BASE.iter().chain(packages).copied().collect();
    let machine = FakeMachine::new(&record, npm_tree_complete);
    if rdflib {
        machine.with_rdflib();
    }
    machine
}

const NOTHING: Vec<String> = Vec::new();

#[test]
fn server_setup_installs_only_what_the_build_needs() {
    // No libclang, no node, no npm tree, no venv: `--server` (scripts/run)
    // installs libclang and nothing for the tests.
    let m = machine(&[], false, false);
    assert_eq!(m.run_setup_with("/nonexistent/node", &["--server"]), vec!["apt-get install -y -qq libclang-dev clang"]);
    // Without it, the same machine gets the test tools as well.
    let all = m.run_setup("/nonexistent/node");
    assert!(all.iter().any(|l| l.contains("nodejs")), "{all:?}");
}

#[test]
fn installs_libclang_when_only_libclang_cpp_is_present() {
    let m = machine(&["libclang-cpp14|install ok installed"], true, true);
    assert_eq!(m.run_setup(&m.node()), vec!["apt-get install -y -qq libclang-dev clang"], "libclang-cpp14 is not libclang");
    // Now the record has them: a second run installs nothing.
    assert_eq!(m.run_setup(&m.node()), NOTHING);
}

#[test]
fn does_nothing_when_everything_is_there() {
    let m = machine(LIBCLANG, true, true);
    assert_eq!(m.run_setup(&m.node()), NOTHING);
}

#[test]
fn a_package_removed_with_its_config_left_is_missing() {
    let m = machine(&["libclang-dev|deinstall ok config-files", "clang|install ok installed"], true, true);
    assert_eq!(m.run_setup(&m.node()), vec!["apt-get install -y -qq libclang-dev"]);
}

#[test]
fn runs_npm_ci_when_npm_says_the_tree_is_incomplete() {
    let m = machine(LIBCLANG, false, true);
    assert_eq!(m.run_setup(&m.node()), vec!["npm ci in pouchdb"]);
    assert_eq!(m.run_setup(&m.node()), NOTHING);
}

/// The page of the CORS test runs in Debian's Chromium.
#[test]
fn installs_chromium_when_dpkg_lacks_it() {
    let record: Vec<&str> = BASE.iter().filter(|p| !p.starts_with("chromium")).chain(LIBCLANG).copied().collect();
    let m = FakeMachine::new(&record, true);
    m.with_rdflib();
    assert_eq!(m.run_setup(&m.node()), vec!["apt-get install -y -qq chromium"]);
    assert_eq!(m.run_setup(&m.node()), NOTHING);
}

/// The Cassandra backend's SSTable tool is compiled: a JDK, by dpkg's record.
#[test]
fn installs_the_jdk_when_dpkg_lacks_it() {
    let record: Vec<&str> = BASE.iter().filter(|p| !p.starts_with("openjdk-17-jdk-headless")).chain(LIBCLANG).copied().collect();
    let m = FakeMachine::new(&record, true);
    m.with_rdflib();
    assert_eq!(m.run_setup(&m.node()), vec!["apt-get install -y -qq openjdk-17-jdk-headless"]);
    assert_eq!(m.run_setup(&m.node()), NOTHING);
}

#[test]
fn installs_node_when_the_command_is_missing() {
    let m = machine(LIBCLANG, true, true);
    assert_eq!(m.run_setup("no-such-node-command"), vec!["apt-get install -y -qq nodejs npm"]);
}

#[test]
fn makes_the_rdflib_venv_when_pip_lacks_it() {
    let m = machine(LIBCLANG, true, false);
    assert_eq!(
        m.run_setup(&m.node()),
        vec!["pip install rdflib", "pip install pytest", "pip install ibmcloudant", "pip install pycouchdb", "pip install typing_extensions", "pip install requests", "pip install playwright", "pip install pytest-playwright"]
    );
    assert_eq!(m.run_setup(&m.node()), NOTHING);
}

/// `pip install ./python` runs when pip lacks the package or when a file
/// it is built from changed since the install; not for a change to its
/// tests, and not again when nothing changed.
#[test]
fn installs_the_python_package_again_only_when_its_sources_change() {
    let m = machine(LIBCLANG, true, true);
    m.with_python_package();
    assert_eq!(m.run_setup(&m.node()), vec!["pip install ./python"]);
    assert_eq!(m.run_setup(&m.node()), NOTHING);
    let root = m.dir.path().join("repo");
    fs::write(root.join("python/tests/test_x.py"), "def test_x(): pass\n").unwrap();
    assert_eq!(m.run_setup(&m.node()), NOTHING, "tests are not built into the package");
    fs::write(root.join("crates/rhizome-rdf/src/lib.rs"), "// two\n").unwrap();
    assert_eq!(m.run_setup(&m.node()), vec!["pip install ./python"]);
    assert_eq!(m.run_setup(&m.node()), NOTHING);
    fs::write(root.join("tests/python/.venv/installed"), VENV_PACKAGES).unwrap();
    assert_eq!(m.run_setup(&m.node()), vec!["pip install ./python"], "pip's record lacks rhizome");
}

#[test]
fn resolves_the_ldp_test_suite_when_mavens_repository_lacks_it() {
    let record: Vec<&str> = BASE.iter().chain(LIBCLANG).copied().collect();
    let m = FakeMachine::with_maven(&record, true, false);
    m.with_rdflib();
    assert_eq!(m.run_setup(&m.node()), vec!["mvn resolve ldp"]);
    assert_eq!(m.run_setup(&m.node()), NOTHING);
}
