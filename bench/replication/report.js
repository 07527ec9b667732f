// Prints the bench.js table and rewrites the replication section of
// BENCHMARKS.md between its markers. Usage: node report.js RESULTS.json BENCHMARKS.md COMMAND
'use strict';
const fs = require('fs');
const os = require('os');

const [file, benchmarks, command] = process.argv.slice(2);
const data = JSON.parse(fs.readFileSync(file, 'utf8'));
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const { pairs, replicators } = data;
const t = (pair, who) => median(data.times[`${pair}|${who}`]);
let md = `| servers | ${replicators.map((r) => `${r} s`).join(' | ')} |\n|---|${replicators.map(() => '---:').join('|')}|\n`;
for (const pair of pairs) md += `| ${pair} | ${replicators.map((r) => t(pair, r).toFixed(2)).join(' | ')} |\n`;
// The whole stack: Rhizome's servers and replicator against each peer's
// own (CouchDB's replicator between CouchDBs, PouchDB's between
// pouchdb-servers).
const ours = t('rhizome -> rhizome', 'rhizome replicate');
const stacks = [['couchdb -> couchdb', 'CouchDB replicator'], ['pouchdb-server -> pouchdb-server', 'PouchDB replicator']].filter(([p, r]) => pairs.includes(p) && replicators.includes(r));
if (stacks.length) {
  md += `\nThe whole stack, \`rhizome replicate\` between rhizome servers against ${stacks.map(([p, r]) => `${r} between ${p.split(' ')[0]}s: ${(t(p, r) / ours).toFixed(1)}x`).join('; ')}.\n`;
}
const section = `<!-- replication:begin -->\nMedians of ${data.rounds} interleaved rounds, each replicating the same ${data.docs} documents into a new target database (${os.cpus().length} cores, ${new Date().toISOString().slice(0, 10)}; \`${command}\`):\n\n${md}<!-- replication:end -->`;
console.log(md);
let text = fs.readFileSync(benchmarks, 'utf8');
const re = /<!-- replication:begin -->[\s\S]*<!-- replication:end -->/;
text = re.test(text) ? text.replace(re, section) : `${text.trimEnd()}\n\n## Replication (\`bench/replication/run\`)\n\n${section}\n`;
fs.writeFileSync(benchmarks, text);
