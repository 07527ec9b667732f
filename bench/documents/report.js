// Prints the table of bench.js results (Rhizome first, then the peers) and
// rewrites the documents section of BENCHMARKS.md between its markers.
// Usage: node report.js RESULTS.json BENCHMARKS.md COMMAND
'use strict';
const fs = require('fs');
const os = require('os');
const { writeSection, ratioTable } = require('../lib/couch');

const [file, benchmarks, command] = process.argv.slice(2);
const data = JSON.parse(fs.readFileSync(file, 'utf8'));
const alone = data.results.find((r) => r.name === 'client-alone');
const servers = data.results.filter((r) => r !== alone);
const [us, ...peers] = servers;
const rate = (n, s) => (s > 0 ? n / s : 0);
// Targets: 10x Apache CouchDB 3.5.0 on each (issue 43); the PouchDB
// replications are bound by the PouchDB client (the table below).
const rows = [
  ['single writes (PUT, 25 clients)', (r) => rate(r.writes.ops, r.writes.seconds), 'docs/s', 10],
  ['single reads (GET, 25 clients)', (r) => rate(r.reads.ops, r.reads.seconds), 'docs/s', 10],
  [`${data.ops} documents by _bulk_docs of ${(data.bulk_batch || data.ops).toLocaleString('en-US')}`, (r) => rate(r.bulk.docs, r.bulk.seconds), 'docs/s', 10],
  [`PouchDB push of ${data.repl_docs}`, (r) => rate(r.push.docs, r.push.seconds), 'docs/s', null],
  [`PouchDB pull of ${data.repl_docs}`, (r) => rate(r.pull.docs, r.pull.seconds), 'docs/s', null],
];
const fmt = (x) => Math.round(x).toLocaleString('en-US');
let md = ratioTable(servers, rows, fmt);
if (alone && peers.length) {
  // The same replications against null-target.js (a no-op in-memory server):
  // the client's own time, which bounds every server's ratio.
  const secs = (r, k) => r[k].seconds.toFixed(2);
  const cpu = (r, k) => r[k].client_cpu_s.toFixed(2);
  md += `\nPouchDB replication of ${data.repl_docs} documents (local databases: PouchDB's \`${us.adapter}\` adapter), seconds, and the client process's CPU seconds. `;
  md += `"client alone" replicates against \`bench/documents/null-target.js\`, a server that keeps the documents in a JavaScript Map and does nothing else; `;
  md += `${peers[0].name}'s time over its time is the highest ratio any server can reach with this client.\n\n`;
  md += `| replication | ${us.name} s | ${peers[0].name} s | client alone s | ratio | highest ratio possible | client CPU s (${us.name} / ${peers[0].name} / alone) |\n|---|---:|---:|---:|---:|---:|---|\n`;
  for (const k of ['push', 'pull']) {
    md += `| ${k} | ${secs(us, k)} | ${secs(peers[0], k)} | ${secs(alone, k)} | ${(peers[0][k].seconds / us[k].seconds).toFixed(1)}x | ${(peers[0][k].seconds / alone[k].seconds).toFixed(1)}x | ${cpu(us, k)} / ${cpu(peers[0], k)} / ${cpu(alone, k)} |\n`;
  }
}
const lat = (r) => `${r.name}: writes p50 ${r.writes.p50_ms} ms / p99 ${r.writes.p99_ms} ms, reads p50 ${r.reads.p50_ms} ms / p99 ${r.reads.p99_ms} ms, non-2xx ${r.writes.non2xx + r.reads.non2xx}`;
md += `\nLatencies: ${servers.map(lat).join('; ')}.\n`;
md += `\nLoad generator: ${data.client === 'rhizome' ? '`rhizome bench-http` (one thread, keep-alive)' : 'autocannon'}, ${data.connections} connections.\n`;
md += `\nMachine: ${data.cpus} cores, ${os.platform()}; measured ${new Date().toISOString().slice(0, 10)} with \`${command}\`.\n`;
console.log(md);
writeSection(benchmarks, 'bench/documents', '## Documents: rhizome serve vs Apache CouchDB and pouchdb-server (bench/documents)', md);
