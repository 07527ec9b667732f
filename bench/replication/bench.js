// Times replications of the same documents by each replicator between the
// same servers. Usage: node bench.js OUT.json PAIR=URL_A,URL_B...
// (PAIR names the servers, e.g. "rhizome -> rhizome"); COUCHDB_REPLICATOR,
// a CouchDB's URL, adds CouchDB's own replicator (POST /_replicate there).
'use strict';
const fs = require('fs');
const { execFileSync } = require('child_process');
const PouchDB = require('pouchdb');

const [out, ...pairArgs] = process.argv.slice(2);
const COUCHDB = process.env.COUCHDB_REPLICATOR;
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
if (COUCHDB) {
  // Apache CouchDB's replicator, run by the peer CouchDB: a one-shot
  // replication answers once it is complete.
  replicators['CouchDB replicator'] = async (from, to) => {
    const u = new URL(COUCHDB);
    const auth = 'Basic ' + Buffer.from(`${decodeURIComponent(u.username)}:${decodeURIComponent(u.password)}`).toString('base64');
    const r = await fetch(`${u.origin}/_replicate`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: auth }, body: JSON.stringify({ source: from, target: to, create_target: true }) });
    const body = await r.json();
    if (!body.ok) throw new Error(`CouchDB replicator: ${r.status} ${JSON.stringify(body)}`);
    return body.history[0].docs_written;
  };
}

async function main() {
  const pairs = pairArgs.map((p) => {
    const i = p.indexOf('=');
    const [a, b] = p.slice(i + 1).split(',');
    return [p.slice(0, i), a, b];
  });
  for (const a of new Set(pairs.map(([, a]) => a))) await seed(a);
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
  fs.writeFileSync(out, JSON.stringify({ docs: DOCS, rounds: ROUNDS, pairs: pairs.map(([p]) => p), replicators: Object.keys(replicators), times }, null, 1));
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
