// Prints the table of bench/views results and rewrites the views section of
// BENCHMARKS.md between its markers.
// Usage: node report.js RESULTS.json BENCHMARKS.md COMMAND
'use strict';
const fs = require('fs');
const os = require('os');
const { writeSection, ratioTable } = require('../lib/couch');

const [file, benchmarks, command] = process.argv.slice(2);
const data = JSON.parse(fs.readFileSync(file, 'utf8'));
const [us] = data.results;
const servers = data.results;
const rate = (n, s) => (s > 0 ? n / s : 0);
// Targets: 10x Apache CouchDB 3.5.0 (issue 43) where it set one.
const rows = [
  [`load ${data.docs} documents (_bulk_docs of 10,000)`, (r) => rate(r.docs, r.load_s), 'docs/s', 10],
  ['build the views (3 views: _count, _sum, _count by age)', (r) => rate(r.docs, r.build_s), 'docs/s', 10],
  [`one query of ${data.keys} random keys (best of 3)`, (r) => rate(data.keys, r.keys_s), 'keys/s', 10],
  [`single-key view queries (${data.view_gets} GETs, 25 connections)`, (r) => rate(data.view_gets, r.view_gets_s), 'queries/s', 10],
  ['_sum over the whole view', (r) => rate(1, r.sum_s), 'queries/s', null],
  [`_find with an index (${data.finds} single-key finds, 4 connections)`, (r) => rate(data.finds, r.find_indexed_s), 'queries/s', 10],
  [`_find without an index (${data.scans} full scans)`, (r) => rate(data.scans * r.docs, r.find_scan_s), 'docs scanned/s', 10],
  ['people per age: grouped _count view', (r) => rate(1, r.group_view_s), 'queries/s', null],
  ['people per age: _find + grouping in the client', (r) => rate(1, r.group_find_s), 'queries/s', null],
  ['people per age: SPARQL GROUP BY', (r) => (r.group_sparql_s ? rate(1, r.group_sparql_s) : 0), 'queries/s', null],
];
const fmt = (x) => (x >= 100 ? Math.round(x).toLocaleString('en-US') : x === 0 ? '-' : x.toFixed(2));
let md = ratioTable(servers, rows, fmt);
md += `\nBuilding the views took Rhizome ${us.build_s.toFixed(1)} s against ${us.load_s.toFixed(1)} s to load the documents (which includes their RDF graphs: the database has a default context). `;
md += `Index creation for _find: ${servers.map((r) => `${r.name} ${r.index_s.toFixed(1)} s`).join(', ')}.\n`;
md += `\nMachine: ${data.cpus} cores, ${os.platform()}; measured ${new Date().toISOString().slice(0, 10)} with \`${command}\` (BENCH_DOCS=${data.docs}).\n`;
console.log(md);
writeSection(
  benchmarks,
  'bench/views',
  '## Views and Mango: rhizome serve vs Apache CouchDB and pouchdb-server (bench/views)\n\nSeed 001 kept CouchDB for its views and found that one "takes time to generate on a large table"; seed 004 spent 2m43s instead of 50 s loading 700k triples because of its views. Same documents, same queries, side by side in one run.',
  md,
);
