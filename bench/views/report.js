// Prints the table of bench/views results and rewrites the views section of
// BENCHMARKS.md between its markers.
// Usage: node report.js RESULTS.json BENCHMARKS.md COMMAND
'use strict';
const fs = require('fs');
const os = require('os');
const { writeSection } = require('../lib/couch');

const [file, benchmarks, command] = process.argv.slice(2);
const data = JSON.parse(fs.readFileSync(file, 'utf8'));
const [us, peer] = data.results;
const servers = data.results;
const rate = (n, s) => (s > 0 ? n / s : 0);
const rows = [
  [`load ${data.docs} documents (_bulk_docs of 10,000)`, (r) => rate(r.docs, r.load_s), 'docs/s', null],
  ['build the views (3 views: _count, _sum, _count by age)', (r) => rate(r.docs, r.build_s), 'docs/s', 20],
  [`one query of ${data.keys} random keys (best of 3)`, (r) => rate(data.keys, r.keys_s), 'keys/s', 20],
  ['_sum over the whole view', (r) => rate(1, r.sum_s), 'queries/s', null],
  [`_find with an index (${data.finds} single-key finds, 4 connections)`, (r) => rate(data.finds, r.find_indexed_s), 'queries/s', 20],
  [`_find without an index (${data.scans} full scans)`, (r) => rate(data.scans * r.docs, r.find_scan_s), 'docs scanned/s', 10],
  ['people per age: grouped _count view', (r) => rate(1, r.group_view_s), 'queries/s', null],
  ['people per age: _find + grouping in the client', (r) => rate(1, r.group_find_s), 'queries/s', null],
  ['people per age: SPARQL GROUP BY', (r) => (r.group_sparql_s ? rate(1, r.group_sparql_s) : 0), 'queries/s', null],
];
const fmt = (x) => (x >= 100 ? Math.round(x).toLocaleString('en-US') : x === 0 ? '-' : x.toFixed(2));
let md = `| benchmark | ${servers.map((r) => r.name).join(' | ')} | ratio | target |\n|---|${servers.map(() => '---:').join('|')}|---:|---|\n`;
for (const [label, f, unit, target] of rows) {
  const ours = f(us);
  const theirs = peer ? f(peer) : 0;
  const ratio = theirs > 0 ? ours / theirs : 0;
  const met = target === null || !peer ? '' : `${target}x: ${ratio >= target ? 'met' : '**missed**'}`;
  md += `| ${label} (${unit}) | ${servers.map((r) => fmt(f(r))).join(' | ')} | ${ratio ? ratio.toFixed(1) + 'x' : ''} | ${met} |\n`;
}
md += `\nBuilding the views took Rhizome ${us.build_s.toFixed(1)} s against ${us.load_s.toFixed(1)} s to load the documents (which includes their RDF graphs: the database has a default context). `;
md += `Index creation for _find: ${servers.map((r) => `${r.name} ${r.index_s.toFixed(1)} s`).join(', ')}.\n`;
md += `\nMachine: ${data.cpus} cores, ${os.platform()}; measured ${new Date().toISOString().slice(0, 10)} with \`${command}\` (BENCH_DOCS=${data.docs}).\n`;
console.log(md);
writeSection(
  benchmarks,
  'bench/views',
  '## Views and Mango: rhizome serve vs pouchdb-server (bench/views)\n\nSeed 001 kept CouchDB for its views and found that one "takes time to generate on a large table"; seed 004 spent 2m43s instead of 50 s loading 700k triples because of its views. Same documents, same queries, side by side in one run.',
  md,
);
