#!/usr/bin/env python3
"""Faults on a 3-node Cassandra cluster at replication factor 3 (issue 47,
point 4), run by scripts/cassandra-faults:

1. Two `rhizome serve` on the cluster take document writes from four
   clients; node 3 is killed (SIGKILL) in the middle. Every write a server
   answered 201 must be readable afterwards through the other server, and
   writes must go on being answered after the kill.
2. A Rhizome server is killed (SIGKILL) while clients write 200-triple
   documents through it. Through the other server afterwards, each of
   those documents is either whole (its revision and all 200 triples of
   its graph) or absent (404 and no triple): never half-written.

Prints one line per check and `N passed, M failed`; exits non-zero on a
failure.
"""
import base64, json, os, signal, socket, subprocess, sys, tempfile, threading, time, urllib.parse, urllib.request

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RHIZOME = os.path.join(REPO, "target", "release", "rhizome")
AUTH = "Basic " + base64.b64encode(b"admin:s3cret").decode()
results = []


def check(ok, what):
    results.append(ok)
    print(("ok   " if ok else "FAIL ") + what, flush=True)


def request(port, method, path, body=None, timeout=60):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data, method=method,
                                 headers={"Authorization": AUTH, "Content-Type": "application/json", "Accept": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def start_server(data, store):
    port = free_port()
    env = dict(os.environ, RHIZOME_STORE=store, RHIZOME_BASE_IRI="http://example.org")
    proc = subprocess.Popen([RHIZOME, "--data", data, "serve", "--quiet", "--bind", f"127.0.0.1:{port}", "--admin", "admin:s3cret"],
                            env=env, stdout=subprocess.DEVNULL)
    deadline = time.time() + 120
    while time.time() < deadline:
        try:
            if request(port, "GET", "/_up", timeout=5)[0] == 200:
                return proc, port
        except OSError:
            pass
        if proc.poll() is not None:
            sys.exit(f"rhizome serve exited: {proc.returncode}")
        time.sleep(0.2)
    sys.exit("rhizome serve did not answer within 120 s")


def writers(ports, db, stop, answered, prefix, clients=4):
    """Clients writing new documents round-robin through `ports`; each
    answered write is recorded with the time it was answered."""
    def client(c):
        n = 0
        while not stop.is_set():
            port = ports[(c + n) % len(ports)]
            doc = f"{prefix}-{c}-{n}"
            try:
                status, body = request(port, "PUT", f"/{db}/{doc}", {"n": n, "client": c}, timeout=30)
                if status == 201:
                    answered.append((time.time(), doc, json.loads(body)["rev"]))
            except OSError:
                pass
            n += 1
    threads = [threading.Thread(target=client, args=(c,)) for c in range(clients)]
    for t in threads:
        t.start()
    return threads


def main():
    cluster_dir = sys.argv[1]
    hosts = sys.argv[2]
    store = f"cassandra://{hosts}/rhizome_faults?lease_ms=3000"
    work = tempfile.mkdtemp(prefix="rhizome-faults-")
    a, port_a = start_server(os.path.join(work, "a"), store)
    b, port_b = start_server(os.path.join(work, "b"), store)
    db = f"faults{int(time.time())}"
    check(request(port_a, "PUT", f"/{db}")[0] == 201, "database created")

    # 1. A node killed during writes through two servers.
    stop, answered = threading.Event(), []
    threads = writers([port_a, port_b], db, stop, answered, "n")
    time.sleep(4)
    killed_at = time.time()
    subprocess.run([os.path.join(REPO, "scripts", "cassandra"), "kill", cluster_dir, "3"], check=True)
    print(f"killed Cassandra node 3 after {len(answered)} answered writes", flush=True)
    time.sleep(8)
    stop.set()
    for t in threads:
        t.join()
    after = [w for w in answered if w[0] > killed_at + 1]
    check(len(after) > 0, f"writes answered after the node was killed: {len(after)} of {len(answered)}")
    lost = []
    for i, (_, doc, rev) in enumerate(answered):
        port = port_b if i % 2 == 0 else port_a
        status, body = request(port, "GET", f"/{db}/{doc}")
        if status != 200 or json.loads(body)["_rev"] != rev:
            lost.append((doc, status))
    check(not lost, f"every answered write readable through both servers ({len(answered)} checked, lost: {lost[:5]})")

    # 2. A Rhizome server killed mid-write: documents of 200 triples each.
    stop, inflight, answered2 = threading.Event(), [], []
    def graph_client(c):
        n = 0
        while not stop.is_set():
            doc = f"g-{c}-{n}"
            inflight.append(doc)
            body = {"@id": f"http://example.org/{db}/{doc}", "http://example.org/v": list(range(200))}
            try:
                status, _ = request(port_a, "PUT", f"/{db}/{doc}", body, timeout=30)
                if status == 201:
                    answered2.append(doc)
            except OSError:
                pass
            n += 1
    threads = [threading.Thread(target=graph_client, args=(c,)) for c in range(4)]
    for t in threads:
        t.start()
    time.sleep(3)
    a.send_signal(signal.SIGKILL)
    a.wait()
    stop.set()
    for t in threads:
        t.join()
    print(f"killed Rhizome server A with {len(inflight)} graph writes started, {len(answered2)} answered", flush=True)
    half = []
    whole = absent = 0
    for doc in inflight:
        status, _ = request(port_b, "GET", f"/{db}/{doc}", timeout=60)
        q = f"SELECT (COUNT(*) AS ?n) WHERE {{ <http://example.org/{db}/{doc}> ?p ?o }}"
        s2, body = request(port_b, "GET", f"/{db}/_sparql?query=" + urllib.parse.quote(q), timeout=60)
        triples = int(json.loads(body)["results"]["bindings"][0]["n"]["value"]) if s2 == 200 else -1
        if status == 200 and triples == 200:
            whole += 1
        elif status == 404 and triples == 0:
            absent += 1
        else:
            half.append((doc, status, triples))
    check(not half, f"each in-flight document whole or absent after the kill ({whole} whole, {absent} absent, half-written: {half[:5]})")
    check(all(d in set(inflight) for d in answered2) and all(request(port_b, "GET", f"/{db}/{d}")[0] == 200 for d in answered2),
          f"every document server A answered before dying is there ({len(answered2)})")
    # Service goes on through B once A's lease expires.
    status, _ = request(port_b, "PUT", f"/{db}/after", {"ok": True}, timeout=60)
    check(status == 201, "writes through server B go on after A died")
    b.send_signal(signal.SIGTERM)
    b.wait()
    passed = sum(results)
    print(f"{passed} passed, {len(results) - passed} failed")
    sys.exit(0 if passed == len(results) else 1)


if __name__ == "__main__":
    main()
