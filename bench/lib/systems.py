"""Shared pieces of the bench scripts (bench/seed-load, bench/sparql): paths,
measuring helpers, the generated data, and the four systems (Rhizome,
Oxigraph via pyoxigraph, Virtuoso 7, Apache Jena TDB2) with their loaders.

Each system's load(size, paths, db_dir=None) loads one file or a list of
files into a fresh store (db_dir, by default bench/work/db/NAME-SIZE).
"""
import datetime
import http.client
import json
import os
import random
import resource
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.parse

LIB = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.dirname(LIB)

REPO = os.path.dirname(BENCH)
WORK = os.path.join(BENCH, "work")
VENV_PY = os.path.join(WORK, "venv", "bin", "python")
DATA = os.path.join(WORK, "data")
DBS = os.path.join(WORK, "db")
QDIR = os.path.join(WORK, "queries")
JENA = os.path.join(WORK, "jena")
VDIR = os.path.join(WORK, "virtuoso")
GRAPH = "http://rhizome.bench/faculty"
V_SQL_PORT, V_HTTP_PORT = 1112, 8891
ALL_SIZES = ["10k", "100k", "700k", "4.8m"]
ALL_PEERS = ["rhizome", "oxigraph", "virtuoso", "jena"]

RANGE_DOCS = 1000
LOG_PREFIX = "[bench]"


def log(*a):
    print(LOG_PREFIX, *a, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- utils
def dir_bytes(path):
    """Apparent size of all files under path (like du -sb)."""
    total = 0
    if os.path.isfile(path):
        return os.path.getsize(path)
    for root, _dirs, files in os.walk(path):
        for f in files:
            try:
                total += os.lstat(os.path.join(root, f)).st_size
            except OSError:
                pass
    return total


def alloc_bytes(path):
    """Allocated size (st_blocks * 512) of all files under path (like du -s)."""
    total = 0
    for root, _dirs, files in os.walk(path):
        for f in files:
            try:
                total += os.lstat(os.path.join(root, f)).st_blocks * 512
            except OSError:
                pass
    return total


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run_measured(cmd, env=None, timeout=None, capture=True):
    """Run cmd; return (wall_s, cpu_s of the child tree, CompletedProcess)."""
    c0, t0 = children_cpu(), time.perf_counter()
    p = subprocess.run(cmd, env=env, timeout=timeout, text=True,
                       stdout=subprocess.PIPE if capture else None,
                       stderr=subprocess.PIPE if capture else None)
    wall = time.perf_counter() - t0
    return wall, children_cpu() - c0, p


def as_list(path):
    return list(path) if isinstance(path, (list, tuple)) else [path]


def fresh_dir(path):
    if os.path.exists(path):
        shutil.rmtree(path)
    os.makedirs(path)


def human_bytes(n):
    if n is None:
        return "n/a"
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024.0


def fmt(x, digits=2):
    if x is None:
        return "n/a"
    if isinstance(x, int):
        return f"{x:,}"
    if x == 0:
        return "0"
    if abs(x) >= 100:
        return f"{x:,.0f}"
    if abs(x) >= 1:
        return f"{x:.{digits}f}"
    return f"{x:.{digits}g}" if abs(x) < 0.01 else f"{x:.{digits + 1}f}"


# --------------------------------------------------------------------------- data
def ensure_data(size):
    os.makedirs(DATA, exist_ok=True)
    path = os.path.join(DATA, f"faculty-{size}.nt")
    ok = path + ".ok"
    if os.path.exists(path) and os.path.exists(ok):
        return path
    log(f"generating {path}")
    t0 = time.perf_counter()
    with open(path + ".tmp", "w") as out:
        subprocess.run([os.path.join(BENCH, "gen-faculty"), size], stdout=out, check=True)
    os.replace(path + ".tmp", path)
    open(ok, "w").write("ok\n")
    log(f"generated in {time.perf_counter() - t0:.1f}s")
    return path


# ----------------------------------------------------------------- N-Triples terms
def unescape(s):
    if "\\" not in s:
        return s
    return json.loads('"' + s + '"')  # N-Triples ECHARs/UCHARs (\\U... aside) are JSON escapes


def to_pyox(term):
    from pyoxigraph import Literal, NamedNode
    if term.startswith("<"):
        return NamedNode(term[1:-1])
    end = term.rindex('"')
    lex, suffix = unescape(term[1:end]), term[end + 1:]
    if suffix.startswith("@"):
        return Literal(lex, language=suffix[1:])
    if suffix.startswith("^^"):
        return Literal(lex, datatype=NamedNode(suffix[3:-1]))
    return Literal(lex)


def warm_os_cache(path):
    """Reads every file under path once, so it sits in the OS page cache."""
    for root, _, files in os.walk(path):
        for f in files:
            try:
                with open(os.path.join(root, f), "rb") as fh:
                    while fh.read(1 << 20):
                        pass
            except OSError:
                pass


# --------------------------------------------------------------------------- Rhizome
class Rhizome:
    name = "rhizome"

    def __init__(self, args):
        self.bin = os.environ.get("RHIZOME") or os.path.join(
            os.environ.get("CARGO_TARGET_DIR") or os.path.join(REPO, "target"), "release", "rhizome")
        self.args = args

    def setup(self):
        if not os.path.exists(self.bin):
            if os.environ.get("RHIZOME"):
                raise RuntimeError(f"RHIZOME={self.bin} does not exist")
            log("building rhizome: cargo build --release")
            subprocess.run(["cargo", "build", "--release"], cwd=REPO, check=True)
        if not os.path.exists(self.bin):
            raise RuntimeError(f"{self.bin} missing after cargo build")

    def load(self, size, path, db_dir=None):
        self.dir = db_dir or os.path.join(DBS, f"rhizome-{size}")
        fresh_dir(self.dir)
        wall, cpu, p = run_measured([self.bin, "--data", self.dir, "load"] + as_list(path))
        if p.returncode != 0:
            raise RuntimeError(f"rhizome load failed: {p.stderr[-2000:]}")
        st = subprocess.run([self.bin, "--data", self.dir, "stats"], capture_output=True, text=True)
        stats = {}
        try:
            stats = json.loads(st.stdout)
        except ValueError:
            log(f"rhizome stats not JSON: {st.stdout[:200]!r} {st.stderr[-500:]!r}")
        note = []
        if "bytes_on_disk" in stats:
            note.append(f"stats.bytes_on_disk {human_bytes(stats['bytes_on_disk'])}")
        if "terms" in stats:
            note.append(f"terms {stats['terms']:,}")
        return {"wall": wall, "cpu": cpu, "triples": stats.get("quads"),
                "bytes": dir_bytes(self.dir), "notes": ", ".join(note)}

    def run_queries(self, sets, budget):
        # One process for every set, as the peers keep one store open for
        # all of them (in-process caches warm alike across sets).
        files = [st["file"] for st in sets]
        try:
            p = subprocess.run([self.bin, "--data", self.dir, "bench-lookups", "--budget-seconds", str(budget),
                                "--queries", *files],
                               capture_output=True, text=True, timeout=max(budget * 3, 60) * len(sets))
        except subprocess.TimeoutExpired:
            return [{"done": 0, "results": None, "seconds": None, "note": "timeout"} for _ in sets]
        by_file = {}
        for line in p.stdout.splitlines():
            try:
                j = json.loads(line)
            except ValueError:
                continue
            by_file[(j.get("file"), j.get("kind"))] = j
        out = []
        for st in sets:
            res = by_file.get((st["file"], st["kind"]))
            if p.returncode != 0 or res is None:
                out.append({"done": 0, "results": None, "seconds": None,
                            "note": "bench-lookups failed: " + (p.stderr.strip().splitlines() or ["?"])[-1][:120]})
            else:
                done = res.get("queries", st["n"])
                out.append({"done": done, "results": res.get("results"), "seconds": res.get("seconds"),
                            "note": "" if done == st["n"] else f"stopped after {budget:.0f}s budget"})
        return out

    def stop(self):
        pass


def run_budgeted_sets(sets, budget, one):
    """Runs each query set through `one(kind, term) -> result count`, stopping a
    set after `budget` seconds and skipping the larger sets of a kind whose
    smaller set already ran out (the peers' runners; Rhizome's does the same
    in process with `bench-lookups --budget-seconds`)."""
    out = []
    over = set()
    for st in sets:
        kind = st["kind"]
        if kind in over:
            out.append({"done": 0, "results": None, "seconds": None,
                        "note": "skipped: the smaller set of this kind exceeded the budget"})
            continue
        results, done = 0, 0
        t0 = time.perf_counter()
        for t in st["terms"]:
            results += one(kind, t)
            done += 1
            if time.perf_counter() - t0 > budget:
                break
        el = time.perf_counter() - t0
        if done < st["n"]:
            over.add(kind)
        out.append({"done": done, "results": results, "seconds": el,
                    "note": "" if done == st["n"] else f"stopped after {budget:.0f}s budget"})
    return out


# --------------------------------------------------------------------------- Oxigraph
OX_LOAD = r"""
import sys, pyoxigraph
from pyoxigraph import Store, RdfFormat
store = Store(sys.argv[1])
for path in sys.argv[2:]:
    store.bulk_load(path=path, format=RdfFormat.N_TRIPLES)
store.flush()
store.optimize()
print(len(store))
"""

RANGE_SPARQL = ("SELECT ?s ?p ?o {FROM} WHERE {{ {{ SELECT DISTINCT ?s WHERE {{ ?s ?p0 ?o0 "
                "FILTER(isIRI(?s) && STR(?s) >= \"{start}\") }} ORDER BY STR(?s) LIMIT {limit} }} ?s ?p ?o }}")


class Oxigraph:
    name = "oxigraph"

    def __init__(self, args):
        self.store = None

    def setup(self):
        import pyoxigraph  # noqa: F401  (venv)
        self.version = pyoxigraph.__version__

    def load(self, size, path, db_dir=None):
        self.dir = db_dir or os.path.join(DBS, f"oxigraph-{size}")
        fresh_dir(self.dir)
        self.store = None
        wall, cpu, p = run_measured([sys.executable, "-c", OX_LOAD, self.dir] + as_list(path))
        if p.returncode != 0:
            raise RuntimeError(f"oxigraph load failed: {p.stderr[-2000:]}")
        return {"wall": wall, "cpu": cpu, "triples": int(p.stdout.strip().splitlines()[-1]),
                "bytes": dir_bytes(self.dir), "notes": f"pyoxigraph {self.version}, bulk_load+optimize"}

    def run_queries(self, sets, budget):
        from pyoxigraph import Store
        if self.store is None:
            self.store = Store(self.dir)
        store = self.store

        def one(kind, t):
            if kind in ("subject", "id"):
                it = store.quads_for_pattern(to_pyox(t), None, None, None)
            elif kind == "predicate":
                it = store.quads_for_pattern(None, to_pyox(t), None, None)
            elif kind == "object":
                it = store.quads_for_pattern(None, None, to_pyox(t), None)
            else:
                it = store.query(RANGE_SPARQL.format(FROM="", start=t[1:-1], limit=RANGE_DOCS))
            return sum(1 for _ in it)
        return run_budgeted_sets(sets, budget, one)

    def stop(self):
        self.store = None


# --------------------------------------------------------------------------- Virtuoso
V_INI = """[Database]
DatabaseFile       = {db}/virtuoso.db
ErrorLogFile       = {db}/virtuoso.log
LockFile           = {db}/virtuoso.lck
TransactionFile    = {db}/virtuoso.trx
xa_persistent_file = {db}/virtuoso.pxa
ErrorLogLevel      = 7
FileExtend         = 200
MaxCheckpointRemap = 2000
Striping           = 0
TempStorage        = TempDatabase

[TempDatabase]
DatabaseFile       = {db}/virtuoso-temp.db
TransactionFile    = {db}/virtuoso-temp.trx
MaxCheckpointRemap = 2000
Striping           = 0

[Parameters]
ServerPort               = 127.0.0.1:{sql}
LiteMode                 = 0
DisableUnixSocket        = 1
DisableTcpSocket         = 0
MaxClientConnections     = 10
CheckpointInterval       = 60
O_DIRECT                 = 0
CaseMode                 = 2
MaxStaticCursorRows      = 5000
CheckpointAuditTrail     = 0
AllowOSCalls             = 0
SchedulerInterval        = 10
DirsAllowed              = ., {data}, /usr/share/virtuoso-opensource-7/vad
ThreadCleanupInterval    = 0
ThreadThreshold          = 10
ResourcesCleanupInterval = 0
FreeTextBatchSize        = 100000
SingleCPU                = 0
PrefixResultNames        = 0
RdfFreeTextRulesSize     = 100
IndexTreeMaps            = 64
MaxQueryMem              = 2G
; ORDER BY ... LIMIT/OFFSET past 10,000 rows is refused at the default
MaxSortedTopRows         = 10000000
VectorSize               = 1000
MaxVectorSize            = 1000000
AdjustVectorSize         = 0
ThreadsPerQuery          = 2
AsyncQueueMaxThreads     = 10
; ~3 GB of buffers (8 KB pages): the Virtuoso docs' setting for 4 GB of RAM
NumberOfBuffers          = 340000
MaxDirtyBuffers          = 250000

[HTTPServer]
ServerPort                  = 127.0.0.1:{http}
ServerRoot                  = /var/lib/virtuoso-opensource-7/vsp
MaxClientConnections        = 4
DavRoot                     = DAV
EnabledDavVSP               = 0
HTTPProxyEnabled            = 0
TempASPXDir                 = 0
ServerThreads               = 4
MaxKeepAlives               = 4
KeepAliveTimeout            = 30
HTTPThreadSize              = 280000
HttpPrintWarningsInOutput   = 0
Charset                     = UTF-8
EnabledGzipContent          = 0

[Client]
SQL_PREFETCH_ROWS  = 100
SQL_PREFETCH_BYTES = 16000
SQL_QUERY_TIMEOUT  = 0
SQL_TXN_TIMEOUT    = 0

[SPARQL]
ResultSetMaxRows           = 1000000000
MaxQueryCostEstimationTime = 0
MaxQueryExecutionTime      = 0
DefaultGraph               = {graph}
"""


class Virtuoso:
    name = "virtuoso"

    def __init__(self, args):
        self.proc = None
        self.conn = None

    def setup(self):
        for b in ("virtuoso-t", "isql-vt"):
            if not shutil.which(b):
                raise RuntimeError(f"{b} not found (run bench/lib/setup-peers)")
        for port in (V_SQL_PORT, V_HTTP_PORT):
            s = socket.socket()
            try:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    raise RuntimeError(f"port {port} already in use (a Virtuoso left running? "
                                       f"isql-vt {V_SQL_PORT} dba dba exec='shutdown;')")
            finally:
                s.close()
        v = subprocess.run(["virtuoso-t", "-?"], capture_output=True, text=True)
        line = [l for l in (v.stdout + v.stderr).splitlines() if "Version" in l]
        self.version = line[0].strip() if line else "Virtuoso 7"

    def isql(self, sql, timeout=None):
        return subprocess.run(["isql-vt", str(V_SQL_PORT), "dba", "dba", f"exec={sql}"],
                              capture_output=True, text=True, timeout=timeout)

    def start(self, db_dir=None, fresh=True):
        """Starts our own virtuoso-t on db_dir (default bench/work/virtuoso/db),
        emptied first unless fresh is False (then it opens what is there)."""
        self.db = db_dir or os.path.join(VDIR, "db")
        if fresh or not os.path.isdir(self.db):
            fresh_dir(self.db)
        ini = os.path.join(VDIR, "virtuoso.ini")
        with open(ini, "w") as f:
            f.write(V_INI.format(db=self.db, sql=V_SQL_PORT, http=V_HTTP_PORT, data=DATA, graph=GRAPH))
        self.proc = subprocess.Popen(["virtuoso-t", "+configfile", ini, "+foreground"],
                                     cwd=VDIR, stdout=open(os.path.join(VDIR, "server.out"), "w"),
                                     stderr=subprocess.STDOUT)
        t0 = time.time()
        while time.time() - t0 < 120:
            if self.proc.poll() is not None:
                raise RuntimeError("virtuoso-t exited; see " + os.path.join(self.db, "virtuoso.log"))
            if self.isql("select 1;", timeout=10).returncode == 0:
                return
            time.sleep(0.5)
        raise RuntimeError("virtuoso did not come up in 120s")

    def stop(self):
        if self.conn:
            self.conn.close()
            self.conn = None
        if self.proc and self.proc.poll() is None:
            try:
                self.isql("shutdown;", timeout=120)
                self.proc.wait(timeout=120)
            except Exception:
                self.proc.send_signal(signal.SIGTERM)
                self.proc.wait(timeout=60)
        self.proc = None

    def server_cpu(self):
        import psutil
        t = psutil.Process(self.proc.pid).cpu_times()
        return t.user + t.system

    def load(self, size, path, db_dir=None):
        self.stop()
        self.start(db_dir)
        sql = "".join(f"ld_dir('{os.path.dirname(f)}', '{os.path.basename(f)}', '{GRAPH}'); " for f in as_list(path))
        sql += "rdf_loader_run(); checkpoint;"
        base = self.used_pages()
        s0 = self.server_cpu()
        wall, cpu, p = run_measured(["isql-vt", str(V_SQL_PORT), "dba", "dba", f"exec={sql}"])
        cpu += self.server_cpu() - s0
        if p.returncode != 0 or "Error" in p.stdout:
            raise RuntimeError(f"virtuoso load failed: {p.stdout[-1500:]} {p.stderr[-500:]}")
        err = self.scalar("select count(*) from DB.DBA.LOAD_LIST where ll_error is not null;")
        if err and int(err) != 0:
            raise RuntimeError("virtuoso: load_list has errors: " +
                               self.isql("select ll_file, ll_error from DB.DBA.LOAD_LIST;").stdout[-1500:])
        triples = int(self.scalar(f"sparql select count(*) from <{GRAPH}> where {{?s ?p ?o}};"))
        pages = self.used_pages()
        used = pages * 8192 if pages is not None else None
        grown = (pages - base) * 8192 if pages is not None and base is not None else None
        dbfile = os.path.getsize(os.path.join(self.db, "virtuoso.db"))
        note = f"virtuoso.db file {human_bytes(dbfile)}"
        if used is not None:
            note += (f"; pages in use {human_bytes(used)} = {used / max(triples, 1):.1f} B/triple "
                     f"(incl. {human_bytes(base * 8192)} of an empty db)")
        if grown is not None:
            note += f"; pages added by the load {human_bytes(grown)} = {grown / max(triples, 1):.1f} B/triple"
        return {"wall": wall, "cpu": cpu, "triples": triples, "bytes": dir_bytes(self.db),
                "used_bytes": used, "load_bytes": grown, "notes": note}

    def used_pages(self):
        """Pages in use from status(''): 'File size N, P pages, F free.'"""
        import re
        m = re.search(r"File size \d+, (\d+) pages, (\d+) free", self.isql("status('');").stdout)
        return int(m.group(1)) - int(m.group(2)) if m else None

    def scalar(self, sql):
        p = self.isql(sql)
        lines = [l.strip() for l in p.stdout.splitlines()]
        # value is the first non-empty line after the ____ separator
        for i, l in enumerate(lines):
            if l.startswith("____"):
                for v in lines[i + 1:]:
                    if v:
                        return v
        return None

    def sparql(self, query):
        """Run a SELECT over the HTTP endpoint (keep-alive); return result row count."""
        for attempt in (1, 2):
            if self.conn is None:
                self.conn = http.client.HTTPConnection("127.0.0.1", V_HTTP_PORT, timeout=3600)
            try:
                body = urllib.parse.urlencode({"query": query})
                self.conn.request("POST", "/sparql", body=body,
                                  headers={"Content-Type": "application/x-www-form-urlencoded",
                                           "Accept": "text/tab-separated-values"})
                r = self.conn.getresponse()
                data = r.read()
                if r.status != 200:
                    raise RuntimeError(f"virtuoso HTTP {r.status}: {data[:300]!r}")
                return data.count(b"\n") - 1 if data else 0
            except (http.client.HTTPException, ConnectionError, BrokenPipeError):
                self.conn.close()
                self.conn = None
                if attempt == 2:
                    raise

    def run_queries(self, sets, budget):
        g = f"FROM <{GRAPH}>"

        def one(kind, t):
            if kind in ("subject", "id"):
                q = f"SELECT ?p ?o {g} WHERE {{ {t} ?p ?o }}"
            elif kind == "predicate":
                q = f"SELECT ?s ?o {g} WHERE {{ ?s {t} ?o }}"
            elif kind == "object":
                q = f"SELECT ?s ?p {g} WHERE {{ ?s ?p {t} }}"
            else:
                q = RANGE_SPARQL.format(FROM=g, start=t[1:-1], limit=RANGE_DOCS)
            return self.sparql(q)
        return run_budgeted_sets(sets, budget, one)


# --------------------------------------------------------------------------- Jena
class Jena:
    name = "jena"

    def __init__(self, args):
        self.heap = args.jena_heap

    def setup(self):
        jars = [f for f in os.listdir(JENA) if f.endswith(".jar")] if os.path.isdir(JENA) else []
        if not any(f.startswith("jena-cmds-") for f in jars):
            raise RuntimeError("jena jars missing (run bench/lib/setup-peers)")
        self.version = [f for f in jars if f.startswith("jena-cmds-")][0][len("jena-cmds-"):-4]

    def load(self, size, path, db_dir=None):
        self.dir = db_dir or os.path.join(DBS, f"jena-{size}")
        fresh_dir(self.dir)
        cp = os.path.join(JENA, "*")
        wall, cpu, p = run_measured(["java", f"-Xmx{self.heap}", "-cp", cp, "tdb2.tdbloader",
                                     "--loc", self.dir] + as_list(path))
        if p.returncode != 0:
            raise RuntimeError(f"jena load failed: {p.stderr[-2000:]}")
        q = subprocess.run(["java", "-cp", cp, "tdb2.tdbquery", "--loc", self.dir, "--results=csv",
                            "SELECT (COUNT(*) AS ?c) { ?s ?p ?o }"], capture_output=True, text=True)
        try:
            triples = int(q.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            triples = None
        return {"wall": wall, "cpu": cpu, "triples": triples, "bytes": dir_bytes(self.dir),
                "notes": f"jena-cmds {self.version}, tdb2.tdbloader (default loader), -Xmx{self.heap}"}

    def run_queries(self, sets, budget):
        return None  # not part of the query tables

    def stop(self):
        pass



def ensure_venv(script):
    """Re-exec under bench/work/venv's python (pyoxigraph, psutil); set it up if missing."""
    if os.path.realpath(sys.prefix) == os.path.realpath(os.path.join(WORK, "venv")):
        return
    if "-h" in sys.argv or "--help" in sys.argv:
        return
    # pip's own record decides, not the interpreter file's presence.
    if not os.path.exists(VENV_PY) or subprocess.run([VENV_PY, "-m", "pip", "show", "-q", "pyoxigraph", "psutil"],
                                                     capture_output=True).returncode != 0:
        log("bench/work/venv lacks pyoxigraph or psutil: running bench/lib/setup-peers")
        subprocess.run([os.path.join(BENCH, "lib", "setup-peers")], check=True)
    os.execv(VENV_PY, [VENV_PY, os.path.abspath(script)] + sys.argv[1:])


