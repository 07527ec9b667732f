// Prints the bench.js table and rewrites the replication section of
// BENCHMARKS.md between its markers. Usage: node report.js RESULTS.json BENCHMARKS.md COMMAND
'use strict';
const fs = require('fs');
const os = require('os');

const [file, benchmarks, command] = process.argv.slice(2);
const data = JSON.parse(fs.readFileSync(file, 'utf8'));
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const pairs = ['rhizome -> rhizome', 'pouchdb-server -> pouchdb-server'];
const t = (pair, who) => median(data.times[`${pair}|${who}`]);
let md = `| servers | rhizome replicate s | PouchDB replicator s | ratio |\n|---|---:|---:|---:|\n`;
for (const pair of pairs) {
  const ours = t(pair, 'rhizome replicate');
  const theirs = t(pair, 'PouchDB replicator');
  md += `| ${pair} | ${ours.toFixed(2)} | ${theirs.toFixed(2)} | ${(theirs / ours).toFixed(1)}x |\n`;
}
const stack = t(pairs[1], 'PouchDB replicator') / t(pairs[0], 'rhizome replicate');
md += `\nThe whole stack, \`rhizome replicate\` between rhizome servers against PouchDB's replicator between pouchdb-servers: ${stack.toFixed(1)}x.\n`;
const section = `<!-- replication:begin -->\nMedians of ${data.rounds} interleaved rounds, each replicating the same ${data.docs} documents into a new target database (${os.cpus().length} cores, ${new Date().toISOString().slice(0, 10)}; \`${command}\`):\n\n${md}<!-- replication:end -->`;
console.log(md);
let text = fs.readFileSync(benchmarks, 'utf8');
const re = /<!-- replication:begin -->[\s\S]*<!-- replication:end -->/;
text = re.test(text) ? text.replace(re, section) : `${text.trimEnd()}\n\n## Replication (\`bench/replication/run\`)\n\n${section}\n`;
fs.writeFileSync(benchmarks, text);
