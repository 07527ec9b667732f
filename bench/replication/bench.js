// Times replications of the same documents by two replicators between the
// same servers. Usage: node bench.js OUT.json RHIZOME_A RHIZOME_B POUCH_A POUCH_B
'use strict';
const fs = require('fs');
const { execFileSync } = require('child_process');
const PouchDB = require('pouchdb');

const [out, rhizomeA, rhizomeB, pouchA, pouchB] = process.argv.slice(2);
const DOCS = Number(process.env.BENCH_REPL_DOCS || 10000);
const ROUNDS = Number(process.env.BENCH_ROUNDS || 3);
const BIN = process.env.RHIZOME_BIN;

// The document shape of bench/documents: a small profile.
const doc = (i) => ({ _id: `p-${String(i).padStart(7, '0')}`, name: `user ${i}`, age: 18 + (i % 60), city: `city ${i % 97}`, tags: [`t${i % 7}`, `t${i % 11}`], bio: 'x'.repeat(100 + (i % 50)) });

async function seed(base) {
  const db = new PouchDB(`${base}/src`);
  for (let s = 0; s < DOCS; s += 1000) {
    const batch = [];
    for (let i = s; i < Math.min(DOCS, s + 1000); i++) batch.push(doc(i));
    await db.bulkDocs(batch);
  }
}

const replicators = {
  'rhizome replicate': async (from, to) => {
    const summary = JSON.parse(execFileSync(BIN, ['replicate', '--quiet', '--create-target', from, to], { encoding: 'utf8' }));
    return summary.docs_written;
  },
  'PouchDB replicator': async (from, to) => {
    const result = await PouchDB.replicate(new PouchDB(from), new PouchDB(to));
    return result.docs_written;
  },
};

async function main() {
  const pairs = [['rhizome -> rhizome', rhizomeA, rhizomeB], ['pouchdb-server -> pouchdb-server', pouchA, pouchB]];
  for (const [, a] of pairs) await seed(a);
  const times = {};
  let n = 0;
  for (let round = 0; round < ROUNDS; round++) {
    for (const [pair, a, b] of pairs) {
      // Alternate which replicator goes first, so neither always runs on a
      // fresher machine.
      const names = Object.keys(replicators);
      if (round % 2) names.reverse();
      for (const name of names) {
        const target = `${b}/t${n++}`;
        const t0 = process.hrtime.bigint();
        const written = await replicators[name](`${a}/src`, target);
        const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
        if (written !== DOCS) throw new Error(`${name} ${pair}: wrote ${written}, expected ${DOCS}`);
        (times[`${pair}|${name}`] ||= []).push(seconds);
        console.error(`round ${round + 1}: ${pair}, ${name}: ${seconds.toFixed(2)} s`);
      }
    }
  }
  fs.writeFileSync(out, JSON.stringify({ docs: DOCS, rounds: ROUNDS, times }, null, 1));
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
