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
NODE="${NODE:-node}"

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

# CouchDB's and PouchDB's own test suites (tests/couch-suites/run) read from
# ../shared/conformance, in a copy outside the clone (they write beside
# themselves), cached between runs and keyed by what it is built from: the
# suite's files, Node's version and this recipe. Prints the copy's folder.
COUCH_SUITES_CACHE="${COUCH_SUITES_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rhizome-couch-suites}"
pouchdb_suite_dir() {
  local src="$1" key
  key="$( (cd "$src" && find . -type f -not -path './node_modules/*' -print0 | LC_ALL=C sort -z | xargs -0 sha256sum;
           "$NODE" --version; echo "recipe: npm ci --ignore-scripts, npm run build-node") | sha256sum | cut -c1-16)"
  printf '%s/pouchdb-%s\n' "$COUCH_SUITES_CACHE" "$key"
}

# The copy of PouchDB's repository at SRC with its npm tree (npm's own
# record: `npm ls --all`) and its node build (`npm run build-node`, marked
# done in the copy once it succeeded, since the build leaves no package
# record). A copy keyed by older sources is removed.
pouchdb_suite_ensure() {
  local src="$1" dir
  dir="$(pouchdb_suite_dir "$src")"
  if [ ! -f "$dir/.rhizome-copied" ]; then
    echo "setup: copying $src to $dir" >&2
    rm -rf "$dir" && mkdir -p "$dir"
    (cd "$src" && tar --exclude=./node_modules -cf - .) | (cd "$dir" && tar -xf -)
    touch "$dir/.rhizome-copied"
  fi
  if ! (cd "$dir" && "$NPM" ls --all >/dev/null 2>&1); then
    echo "setup: npm ci --ignore-scripts in $dir" >&2
    (cd "$dir" && "$NPM" ci --ignore-scripts --no-audit --no-fund --loglevel=error)
    rm -f "$dir/.rhizome-built"
  fi
  if [ ! -f "$dir/.rhizome-built" ]; then
    echo "setup: npm run build-node in $dir" >&2
    (cd "$dir" && "$NPM" run build-node >/dev/null)
    touch "$dir/.rhizome-built"
  fi
  local old
  for old in "$COUCH_SUITES_CACHE"/pouchdb-*; do
    [ "$old" = "$dir" ] || rm -rf "$old"
  done
}

# A venv at VENV with CouchDB's Mango suite's requirements (REQUIREMENTS:
# nose2, requests, hypothesis, pinned there), decided by pip's record.
mango_venv_ensure() {
  local venv="$1" requirements="$2" names
  names="$(sed -n 's/^\([A-Za-z0-9_.-]*\)==.*/\1/p' "$requirements" | tr '\n' ' ')"
  # shellcheck disable=SC2086
  if ! pip_has "$venv" $names; then
    echo "setup: pip install -r $requirements into $venv" >&2
    [ -x "$venv/bin/python" ] || "${PYTHON:-python3}" -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet -r "$requirements"
  fi
}
