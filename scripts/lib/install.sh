# Install checks shared by scripts/setup and the bench scripts (source it).
# Every check asks the package manager's own record, never a file glob:
# a file that happens to exist can belong to another package (libclang-cpp14
# ships a libclang-cpp.so that is not the libclang bindgen loads).
# DPKG_QUERY, APT_GET, NPM and MVN override the tools, for tests with fake records
# (crates/rhizome-cli/tests/setup_script.rs).
DPKG_QUERY="${DPKG_QUERY:-dpkg-query}"
APT_GET="${APT_GET:-apt-get}"
NPM="${NPM:-npm}"
MVN="${MVN:-mvn}"

# True when dpkg's record says PKG is installed (not merely known, removed,
# or left with its configuration files).
deb_installed() {
  local status
  status="$("$DPKG_QUERY" -W -f='${Status}' "$1" 2>/dev/null)" || return 1
  [ "$status" = "install ok installed" ]
}

# Prints the packages among "$@" that dpkg's record lacks.
deb_missing() {
  local pkg
  for pkg in "$@"; do deb_installed "$pkg" || printf '%s\n' "$pkg"; done
}

# apt-get install, as root or through sudo; quiet unless it fails.
apt_install() {
  echo "setup: installing $* (apt)" >&2
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo "$APT_GET" update -qq
  DEBIAN_FRONTEND=noninteractive $sudo "$APT_GET" install -y -qq "$@" >/dev/null
}

# Installs the Debian packages among "$@" that are missing.
apt_ensure() {
  local missing
  mapfile -t missing < <(deb_missing "$@")
  [ ${#missing[@]} -eq 0 ] || apt_install "${missing[@]}"
}

# `npm ci` in DIR unless npm itself says the tree matches its lock file
# (`npm ls --all` fails on anything missing, extraneous or of another version).
npm_ensure() {
  local dir="$1"
  if ! (cd "$dir" && "$NPM" ls --all >/dev/null 2>&1); then
    echo "setup: npm ci in $dir" >&2
    (cd "$dir" && "$NPM" ci --no-audit --no-fund --loglevel=error)
  fi
}

# True when the venv at VENV has every Python distribution named after it,
# by pip's own record.
pip_has() {
  local venv="$1"; shift
  [ -x "$venv/bin/python" ] || return 1
  "$venv/bin/python" -m pip show -q "$@" >/dev/null 2>&1
}

# A hash of every file the Python package (python/) is built from: the
# workspace's manifests and lock file, the crates (without their tests) and
# python/ (without its tests and caches). Content, not timestamps.
python_sources_hash() {
  local paths=() p
  for p in Cargo.toml Cargo.lock crates python; do
    [ -e "$p" ] && paths+=("$p")
  done
  find "${paths[@]}" -type f \
    -not -path '*/tests/*' -not -path '*/__pycache__/*' -not -path '*/.pytest_cache/*' -print0 2>/dev/null |
    LC_ALL=C sort -z | xargs -0 -r sha256sum | sha256sum | cut -d' ' -f1
}

# Resolves the dependencies POM declares into Maven's local repository,
# unless Maven itself says they are all there (an offline resolve succeeds).
maven_ensure() {
  local pom="$1"
  if ! "$MVN" -o -q -f "$pom" dependency:resolve >/dev/null 2>&1; then
    echo "setup: maven dependency:resolve of $pom" >&2
    "$MVN" -q -f "$pom" dependency:resolve >/dev/null
  fi
}
