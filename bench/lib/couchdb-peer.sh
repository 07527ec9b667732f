# Sourced by the bench/ run scripts: the peer Apache CouchDB 3.5.0
# (../shared/peers/couchdb, beside the repository) started in a fresh
# folder on a free port with the benchmarks' admin, and stopped on exit.
#   couchdb_peer_start DIR   -> prints its URL (http://bench:bench@127.0.0.1:PORT)
#   couchdb_peer_stop DIR
# COUCHDB_PEER overrides the peer's folder. CouchDB 3 fsyncs every commit
# (delayed commits are gone since 3.0), as rhizome serve does.
COUCHDB_PEER="${COUCHDB_PEER:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)/shared/peers/couchdb}"

couchdb_peer_start() {
  local dir="$1" port
  if [ ! -x "$COUCHDB_PEER/start" ]; then
    echo "bench: no peer CouchDB at $COUCHDB_PEER (set COUCHDB_PEER, or BENCH_ONLY=rhizome)" >&2
    return 1
  fi
  rm -rf "$dir" && mkdir -p "$dir"
  # Below the kernel's ephemeral range, as the tests' servers: the peer's
  # epmd takes PORT+1 too.
  port=$(python3 -c 'import random, socket
for _ in range(200):
    p = random.randrange(20000, 30000, 2)
    try:
        for q in (p, p + 1):
            s = socket.socket(); s.bind(("127.0.0.1", q)); s.close()
        print(p); break
    except OSError:
        pass')
  "$COUCHDB_PEER/start" "$dir" "$port" bench:bench
}

couchdb_peer_stop() {
  [ -x "$COUCHDB_PEER/stop" ] && "$COUCHDB_PEER/stop" "$1" >/dev/null 2>&1 || true
}
