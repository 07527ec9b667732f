// Prints the table of bench.js results (Rhizome first, then the peers) and
// rewrites the documents section of BENCHMARKS.md between its markers.
// Usage: node report.js RESULTS.json BENCHMARKS.md COMMAND
'use strict';
const fs = require('fs');
const os = require('os');

const [file, benchmarks, command] = process.argv.slice(2);
const data = JSON.parse(fs.readFileSync(file, 'utf8'));
const [us, ...peers] = data.results;
const rate = (n, s) => (s > 0 ? n / s : 0);
const rows = [
  ['single writes (PUT, 25 clients)', (r) => rate(r.writes.ops, r.writes.seconds), 'docs/s', 20],
  ['single reads (GET, 25 clients)', (r) => rate(r.reads.ops, r.reads.seconds), 'docs/s', 20],
  [`one _bulk_docs of ${data.ops}`, (r) => rate(r.bulk.docs, r.bulk.seconds), 'docs/s', null],
  [`PouchDB push of ${data.repl_docs}`, (r) => rate(r.push.docs, r.push.seconds), 'docs/s', 5],
  [`PouchDB pull of ${data.repl_docs}`, (r) => rate(r.pull.docs, r.pull.seconds), 'docs/s', 5],
];
const fmt = (x) => Math.round(x).toLocaleString('en-US');
let md = `| benchmark | ${data.results.map((r) => r.name).join(' | ')} | ratio | target |\n|---|${data.results.map(() => '---:').join('|')}|---:|---|\n`;
for (const [label, f, unit, target] of rows) {
  const ours = f(us);
  const theirs = peers.length ? f(peers[0]) : 0;
  const ratio = theirs > 0 ? ours / theirs : 0;
  const met = target === null ? '' : `${target}x: ${ratio >= target ? 'met' : '**missed**'}`;
  md += `| ${label} (${unit}) | ${data.results.map((r) => fmt(f(r))).join(' | ')} | ${ratio.toFixed(1)}x | ${met} |\n`;
}
const lat = (r) => `${r.name}: writes p50 ${r.writes.p50_ms} ms / p99 ${r.writes.p99_ms} ms, reads p50 ${r.reads.p50_ms} ms / p99 ${r.reads.p99_ms} ms, non-2xx ${r.writes.non2xx + r.reads.non2xx}`;
md += `\nLatencies: ${data.results.map(lat).join('; ')}.\n`;
md += `\nLoad generator: ${data.client === 'rhizome' ? '`rhizome bench-http` (one thread, keep-alive)' : 'autocannon'}, ${data.connections} connections.\n`;
md += `\nMachine: ${data.cpus} cores, ${os.platform()}; measured ${new Date().toISOString().slice(0, 10)} with \`${command}\`.\n`;
console.log(md);
if (benchmarks && fs.existsSync(benchmarks)) {
  const begin = '<!-- bench/documents:begin -->';
  const end = '<!-- bench/documents:end -->';
  let text = fs.readFileSync(benchmarks, 'utf8');
  const section = `${begin}\n${md}${end}`;
  if (text.includes(begin)) {
    text = text.slice(0, text.indexOf(begin)) + section + text.slice(text.indexOf(end) + end.length);
  } else {
    text += `\n## Documents: rhizome serve vs pouchdb-server (bench/documents)\n\n${section}\n`;
  }
  fs.writeFileSync(benchmarks, text);
}
