// bench/documents: ArangoDB's method (seed 003) on the CouchDB API, the same
// load against each server given on the command line:
//   single reads and single writes, N each, 25 concurrent keep-alive
//   clients (autocannon); N documents by _bulk_docs of 10,000; a PouchDB push and
//   pull of R documents.
// Usage: node bench.js OUT.json NAME=URL [NAME=URL...]   (URL may hold user:pass@)
'use strict';
const autocannon = require('autocannon');
const PouchDB = require('pouchdb');
PouchDB.plugin(require('pouchdb-adapter-memory'));
const fs = require('fs');
const { split, http } = require('../lib/couch');
const os = require('os');
const path = require('path');

const OPS = Number(process.env.BENCH_OPS || 100000);
const REPL = Number(process.env.BENCH_REPL_DOCS || 10000);
const CONNECTIONS = 25;
const BULK_BATCH = 10000;

function doc(i) {
  // A small profile document, like the Pokec profiles ArangoDB's benchmark reads and writes.
  return { name: `user ${i}`, age: 18 + (i % 60), city: ['Fribourg', 'Bern', 'Basel', 'Zurich'][i % 4], public: i % 2 === 0, tags: ['a', 'b', String(i % 10)] };
}

// The load generator: `rhizome bench-http` (RHIZOME_BIN set by run; one
// thread, light per request) or autocannon (BENCH_CLIENT=autocannon).
const CLIENT = process.env.BENCH_CLIENT || (process.env.RHIZOME_BIN ? 'rhizome' : 'autocannon');

function rustLoad(url, method, pathTemplate, body, random) {
  const { execFileSync } = require('child_process');
  const args = ['bench-http', '--url', url, '--connections', String(CONNECTIONS), '--requests', String(OPS), '--method', method, '--path', pathTemplate];
  if (body) args.push('--body', body);
  if (random) args.push('--random', String(random));
  const r = JSON.parse(execFileSync(process.env.RHIZOME_BIN, args, { encoding: 'utf8' }));
  return { seconds: r.seconds, non2xx: r.non2xx, errors: r.errors, latency: { p50: r.p50_ms, p99: r.p99_ms } };
}

function cannon(server, setupRequest) {
  return new Promise((resolve, reject) => {
    autocannon(
      { url: server.base, connections: CONNECTIONS, amount: OPS, headers: server.headers, requests: [{ setupRequest }] },
      (err, res) => (err ? reject(err) : resolve(res)),
    );
  });
}

// A PouchDB push of REPL documents into URL/repl, then a pull of them into a
// new local database. The local databases are in memory (pouchdb-adapter-
// memory; BENCH_REPL_ADAPTER=leveldb for PouchDB's on-disk default): with
// leveldb the client's own disk reads dominate, and PouchDB's replicator
// ships whatever it has read whenever the target is idle, so a faster target
// gets more, smaller batches (against rhizome serve: ~390 batches for 10,000
// documents instead of 100) and costs the client more. Client CPU seconds are
// recorded to show where the time goes.
async function replicate(url, db = 'repl') {
  const adapter = process.env.BENCH_REPL_ADAPTER || 'memory';
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'rhizome-bench-'));
  const local = (name) => (adapter === 'memory' ? new PouchDB(`${name}-${path.basename(tmp)}`, { adapter: 'memory' }) : new PouchDB(path.join(tmp, name)));
  try {
    const src = local('src');
    for (let s = 0; s < REPL; s += 1000) {
      const batch = [];
      for (let i = s; i < Math.min(REPL, s + 1000); i++) batch.push({ _id: `r-${i}`, ...doc(i) });
      await src.bulkDocs(batch);
    }
    const remote = new PouchDB(`${url}/${db}`);
    const cpu = () => { const c = process.cpuUsage(); return (c.user + c.system) / 1e6; };
    let c0 = cpu();
    const t3 = Date.now();
    const push = await src.replicate.to(remote);
    const pushOut = { docs: push.docs_written, seconds: (Date.now() - t3) / 1000, client_cpu_s: cpu() - c0 };
    const dst = local('dst');
    c0 = cpu();
    const t4 = Date.now();
    const pull = await dst.replicate.from(remote);
    const pullOut = { docs: pull.docs_written, seconds: (Date.now() - t4) / 1000, client_cpu_s: cpu() - c0 };
    if (pushOut.docs !== REPL || pullOut.docs !== REPL) throw new Error(`${url}: pushed ${pushOut.docs}, pulled ${pullOut.docs}, expected ${REPL}`);
    await Promise.all([src.destroy(), dst.destroy()]);
    return { push: pushOut, pull: pullOut, adapter };
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

async function measure(name, url) {
  const server = split(url);
  const out = { name };
  if (name === 'client-alone') {
    // null-target.js: only the replication is measured against it.
    await http(server, 'PUT', '/repl');
    Object.assign(out, await replicate(url));
    console.error(`${name}: push ${out.push.seconds} s, pull ${out.pull.seconds} s`);
    return out;
  }
  for (const db of ['bench', 'bulk', 'repl']) {
    await http(server, 'DELETE', `/${db}`).catch(() => {});
    await http(server, 'PUT', `/${db}`);
  }
  const body = JSON.stringify(doc(0)).replace('"user 0"', '"user {n}"');
  let writes, reads;
  const t0 = Date.now();
  if (CLIENT === 'rhizome') {
    writes = rustLoad(url, 'PUT', '/bench/w-{n}', body);
  } else {
    let n = 0;
    writes = await cannon(server, (req) => {
      const i = n++;
      return { ...req, method: 'PUT', path: `/bench/w-${i}`, body: JSON.stringify(doc(i)) };
    });
  }
  out.writes = { ops: OPS, seconds: (Date.now() - t0) / 1000, non2xx: writes.non2xx, errors: writes.errors, p50_ms: writes.latency.p50, p99_ms: writes.latency.p99 };
  console.error(`${name}: ${OPS} writes in ${out.writes.seconds} s (${writes.non2xx} non-2xx, ${writes.errors} errors)`);
  const t1 = Date.now();
  if (CLIENT === 'rhizome') {
    reads = rustLoad(url, 'GET', '/bench/w-{n}', null, OPS);
  } else {
    reads = await cannon(server, (req) => ({ ...req, method: 'GET', path: `/bench/w-${Math.floor(Math.random() * OPS)}` }));
  }
  out.reads = { ops: OPS, seconds: (Date.now() - t1) / 1000, non2xx: reads.non2xx, errors: reads.errors, p50_ms: reads.latency.p50, p99_ms: reads.latency.p99 };
  console.error(`${name}: ${OPS} reads in ${out.reads.seconds} s (${reads.non2xx} non-2xx, ${reads.errors} errors)`);
  // In requests of BULK_BATCH documents: CouchDB 3 refuses more in one
  // (max_bulk_docs_count), as rhizome serve does (--max-bulk-docs).
  const bodies = [];
  for (let s = 0; s < OPS; s += BULK_BATCH) {
    const docs = [];
    for (let i = s; i < Math.min(OPS, s + BULK_BATCH); i++) docs.push({ _id: `b-${i}`, ...doc(i) });
    bodies.push(JSON.stringify({ docs }));
  }
  const t2 = Date.now();
  let okCount = 0;
  for (const body of bodies) okCount += (await http(server, 'POST', '/bulk/_bulk_docs', body)).filter((r) => r.ok).length;
  out.bulk = { docs: OPS, seconds: (Date.now() - t2) / 1000, ok: okCount };
  if (okCount !== OPS) throw new Error(`${name}: _bulk_docs wrote ${okCount} of ${OPS}`);
  console.error(`${name}: _bulk_docs of ${OPS} in ${out.bulk.seconds} s`);
  Object.assign(out, await replicate(url));
  console.error(`${name}: push ${out.push.seconds} s, pull ${out.pull.seconds} s`);
  return out;
}

(async () => {
  const [outFile, ...targets] = process.argv.slice(2);
  const results = [];
  // One untimed replication first, so that no target pays for warming up
  // the client (V8's JIT compiling PouchDB) in its timed runs.
  const alone = targets.find((t) => t.startsWith('client-alone='));
  if (alone) {
    const url = alone.slice(alone.indexOf('=') + 1);
    await http(split(url), 'PUT', '/warmup');
    await replicate(url, 'warmup');
  }
  for (const t of targets) {
    const i = t.indexOf('=');
    results.push(await measure(t.slice(0, i), t.slice(i + 1)));
  }
  fs.writeFileSync(outFile, JSON.stringify({ ops: OPS, bulk_batch: BULK_BATCH, repl_docs: REPL, connections: CONNECTIONS, client: CLIENT, cpus: os.cpus().length, results }, null, 2));
})().catch((e) => {
  console.error(e);
  process.exit(1);
});
