// Shared by the PouchDB interop scripts: the server URL (with the admin's
// credentials) comes from RHIZOME_URL, local databases live in a temp dir.
'use strict';
const PouchDB = require('pouchdb');
const fs = require('fs');
const os = require('os');
const path = require('path');
const assert = require('assert');

const base = process.env.RHIZOME_URL;
if (!base) {
  console.error('RHIZOME_URL is not set (http://user:pass@host:port)');
  process.exit(2);
}
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'rhizome-pouch-'));
process.on('exit', () => fs.rmSync(tmp, { recursive: true, force: true }));

function local(name) {
  return new PouchDB(path.join(tmp, name));
}

function remote(name) {
  return new PouchDB(`${base}/${name}`);
}

// Every step logs its name so a failure says where it was.
async function step(name, fn) {
  const started = Date.now();
  try {
    await fn();
  } catch (e) {
    console.error(`FAIL ${name}:`, e);
    process.exit(1);
  }
  console.log(`ok ${name} (${Date.now() - started} ms)`);
}

// Winner and conflicts of every document, for comparing two replicas.
async function winners(db) {
  const all = await db.allDocs({ conflicts: true, include_docs: true });
  const out = new Map();
  for (const row of all.rows) {
    out.set(row.id, { rev: row.doc._rev, conflicts: (row.doc._conflicts || []).slice().sort() });
  }
  return out;
}

function sameWinners(a, b, what) {
  assert.strictEqual(a.size, b.size, `${what}: ${a.size} vs ${b.size} documents`);
  for (const [id, w] of a) {
    assert.deepStrictEqual(b.get(id), w, `${what}: document ${id} differs`);
  }
}

async function until(deadlineMs, what, check) {
  const end = Date.now() + deadlineMs;
  let last;
  while (Date.now() < end) {
    try {
      if (await check()) return;
    } catch (e) {
      last = e;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}${last ? ': ' + last.message : ''}`);
}

module.exports = { PouchDB, assert, local, remote, step, winners, sameWinners, until };
