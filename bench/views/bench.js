// bench/views: the same documents and queries against each server given.
// Usage: node bench.js OUT.json NAME=URL [NAME=URL...]   (URL may hold user:pass@)
'use strict';
const fs = require('fs');
const { split, http } = require('../lib/couch');
const os = require('os');

const N = Number(process.env.BENCH_DOCS || 100000);
const KEYS = 10000;
const FINDS = Number(process.env.BENCH_FINDS || 3000);
const VIEW_GETS = Number(process.env.BENCH_VIEW_GETS || 10000);
const SCANS = 3;
const CITIES = ['Fribourg', 'Bern', 'Basel', 'Zurich'];

function doc(i) {
  // Pokec-like profiles (seed 003): a unique number, an age, a score.
  return { _id: `p${String(i).padStart(8, '0')}`, num: i, age: 18 + ((i * 7919) % 60), score: (i * 31) % 1000, city: CITIES[i % 4], name: `user ${i}` };
}

const seconds = async (fn) => {
  const t = process.hrtime.bigint();
  const value = await fn();
  return [Number(process.hrtime.bigint() - t) / 1e9, value];
};

// A fixed pseudo-random sequence, the same for every server.
function randoms(count, max, seed) {
  let x = seed;
  const out = [];
  for (let i = 0; i < count; i++) {
    x = (x * 1103515245 + 12345) % 2147483648;
    out.push(x % max);
  }
  return out;
}

const DDOC = {
  views: {
    num_count: { map: 'function (doc) { if (doc.num !== undefined) emit(doc.num, doc.score); }', reduce: '_count' },
    num_sum: { map: 'function (doc) { if (doc.num !== undefined) emit(doc.num, doc.score); }', reduce: '_sum' },
    age: { map: 'function (doc) { if (doc.age !== undefined) emit(doc.age, null); }', reduce: '_count' },
  },
};

async function measure(name, url) {
  const server = split(url);
  const out = { name, docs: N };
  const db = '/views';
  await http(server, 'DELETE', db).catch(() => {});
  await http(server, 'PUT', db);
  const rhizome = name === 'rhizome';
  if (rhizome) {
    // Every document is also RDF (a default context), so that SPARQL sees
    // the same data: what loading costs Rhizome includes its graph.
    await http(server, 'PUT', `${db}/_local/rhizome-context`, { '@context': { '@vocab': 'http://example.org/p#' } });
  }
  const [load] = await seconds(async () => {
    for (let s = 0; s < N; s += 10000) {
      const docs = [];
      for (let i = s; i < Math.min(N, s + 10000); i++) docs.push(doc(i));
      await http(server, 'POST', `${db}/_bulk_docs`, { docs });
    }
  });
  out.load_s = load;
  console.error(`${name}: loaded ${N} in ${load.toFixed(1)} s`);
  await http(server, 'PUT', `${db}/_design/bench`, DDOC);
  const [build] = await seconds(async () => {
    for (const v of Object.keys(DDOC.views)) await http(server, 'GET', `${db}/_design/bench/_view/${v}?limit=1`);
  });
  out.build_s = build;
  console.error(`${name}: built 3 views in ${build.toFixed(1)} s`);
  const keys = randoms(KEYS, N, 42);
  // The best of three, for each server alike (the first pays for a cold cache).
  out.keys_s = Infinity;
  for (let attempt = 0; attempt < 3; attempt++) {
    const [keyQuery, rows] = await seconds(() => http(server, 'POST', `${db}/_design/bench/_view/num_count?reduce=false`, { keys }));
    if (rows.rows.length !== KEYS) throw new Error(`${name}: ${rows.rows.length} rows for ${KEYS} keys`);
    out.keys_s = Math.min(out.keys_s, keyQuery);
  }
  const keyQuery = out.keys_s;
  // Single-key view queries from `rhizome bench-http` (25 keep-alive
  // connections): each answer carries its offset, the rows before it.
  const { execFileSync } = require('child_process');
  const gets = JSON.parse(
    execFileSync(process.env.RHIZOME_BIN, ['bench-http', '--url', url, '--connections', '25', '--requests', String(VIEW_GETS), '--path', `${db}/_design/bench/_view/num_count?reduce=false&key={n}`, '--random', String(N)], { encoding: 'utf8' }),
  );
  if (gets.non2xx || gets.errors) throw new Error(`${name}: view GET load: ${JSON.stringify(gets)}`);
  out.view_gets_s = gets.seconds;
  const [sums, total] = await seconds(() => http(server, 'GET', `${db}/_design/bench/_view/num_sum`));
  out.sum_s = sums;
  out.sum = total.rows[0].value;
  console.error(`${name}: ${KEYS} keys in ${keyQuery.toFixed(2)} s, _sum in ${sums.toFixed(2)} s`);

  // Mango: an index on num, then single-key finds; a full scan on score.
  const [indexBuild] = await seconds(async () => {
    await http(server, 'POST', `${db}/_index`, { index: { fields: ['num'] }, name: 'num' });
    await http(server, 'POST', `${db}/_find`, { selector: { num: 0 } });
  });
  out.index_s = indexBuild;
  // Single-key finds from `rhizome bench-http` (4 keep-alive connections):
  // Node's fetch costs about a millisecond per request itself, which would
  // bound the ratio (a client-alone limit, as in bench/documents).
  const finds = JSON.parse(
    execFileSync(process.env.RHIZOME_BIN, ['bench-http', '--url', url, '--connections', '4', '--requests', String(FINDS), '--method', 'POST', '--path', `${db}/_find`, '--body', '{"selector":{"num":{n}}}', '--random', String(N)], { encoding: 'utf8' }),
  );
  if (finds.non2xx || finds.errors) throw new Error(`${name}: _find load: ${JSON.stringify(finds)}`);
  const check = await http(server, 'POST', `${db}/_find`, { selector: { num: 12345 % N }, execution_stats: true });
  if (check.docs.length !== 1) throw new Error(`${name}: _find by num gave ${check.docs.length}`);
  out.find_indexed_s = finds.seconds;
  const scans = randoms(SCANS, 1000, 3);
  let scanned = 0;
  const [findScan] = await seconds(async () => {
    for (const k of scans) {
      const r = await http(server, 'POST', `${db}/_find`, { selector: { score: k, city: 'Bern' }, limit: N });
      scanned += r.docs.length;
    }
  });
  out.find_scan_s = findScan;
  out.find_scan_docs = scanned;
  console.error(`${name}: ${FINDS} indexed finds in ${out.find_indexed_s.toFixed(2)} s, ${SCANS} full-scan finds in ${findScan.toFixed(2)} s`);

  // Seed 003's aggregation: people per age.
  const [grouped, g] = await seconds(() => http(server, 'GET', `${db}/_design/bench/_view/age?group=true`));
  out.group_view_s = grouped;
  out.groups = g.rows.length;
  const [client] = await seconds(async () => {
    const r = await http(server, 'POST', `${db}/_find`, { selector: { age: { $gt: null } }, fields: ['age'], limit: N });
    const counts = new Map();
    for (const d of r.docs) counts.set(d.age, (counts.get(d.age) || 0) + 1);
    if (counts.size !== out.groups) throw new Error(`${name}: ${counts.size} ages by _find, ${out.groups} by the view`);
  });
  out.group_find_s = client;
  if (rhizome) {
    const q = 'SELECT ?age (COUNT(*) AS ?n) WHERE { ?p <http://example.org/p#num> ?num ; <http://example.org/p#age> ?age } GROUP BY ?age';
    const [sparql, res] = await seconds(() => http(server, 'POST', `${db}/_sparql`, q, { 'content-type': 'application/sparql-query', accept: 'application/sparql-results+json' }));
    if (res.results.bindings.length !== out.groups) throw new Error(`SPARQL gave ${res.results.bindings.length} ages`);
    out.group_sparql_s = sparql;
  }
  console.error(`${name}: per-age counts: view ${grouped.toFixed(2)} s, _find+client ${client.toFixed(2)} s${rhizome ? `, SPARQL ${out.group_sparql_s.toFixed(2)} s` : ''}`);
  return out;
}

(async () => {
  const [outFile, ...targets] = process.argv.slice(2);
  const results = [];
  for (const t of targets) {
    const i = t.indexOf('=');
    results.push(await measure(t.slice(0, i), t.slice(i + 1)));
  }
  fs.writeFileSync(outFile, JSON.stringify({ docs: N, keys: KEYS, finds: FINDS, view_gets: VIEW_GETS, scans: SCANS, cpus: os.cpus().length, results }, null, 2));
})().catch((e) => {
  console.error(e);
  process.exit(1);
});
