// The least a CouchDB replication peer can do: an in-memory server that
// answers exactly the requests PouchDB's replicator makes (database info,
// _local checkpoints, _revs_diff, _bulk_docs with new_edits=false, _changes,
// _bulk_get) and keeps only the latest revision of each document, with no
// revision tree, no disk, no fsync and no authentication.
//
// bench/documents replicates against it to measure the PouchDB client alone:
// no real server can answer faster than this one, so pouchdb-server's time
// divided by this one's time is the highest ratio any server can reach over
// pouchdb-server with the same client.
// Usage: node null-target.js PORT
'use strict';
const http = require('http');

const dbs = new Map(); // name -> { docs: Map(id -> { seq, doc }), log: [[seq, id]], seq, local: Map }

function send(res, status, body) {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function info(name, db) {
  return { db_name: name, doc_count: db.docs.size, update_seq: db.seq, instance_start_time: '0' };
}

function changes(db, query) {
  const since = Number(query.get('since') || 0);
  const limit = Number(query.get('limit') || Infinity);
  const results = [];
  for (const [seq, id] of db.log) {
    if (results.length >= limit) break;
    const entry = db.docs.get(id);
    if (seq <= since || entry.seq !== seq) continue;
    results.push({ seq, id, changes: [{ rev: entry.doc._rev }], ...(entry.doc._deleted ? { deleted: true } : {}) });
  }
  return { results, last_seq: results.length ? results[results.length - 1].seq : since, pending: 0 };
}

function handle(req, res, body) {
  const url = new URL(req.url, 'http://localhost');
  const parts = url.pathname.split('/').filter(Boolean).map(decodeURIComponent);
  if (parts.length === 0) return send(res, 200, { couchdb: 'Welcome', version: '3.3.0', uuid: 'null-target' });
  const [name, ...rest] = parts;
  let db = dbs.get(name);
  if (rest.length === 0) {
    if (req.method === 'PUT') {
      if (!db) dbs.set(name, { docs: new Map(), log: [], seq: 0, local: new Map() });
      return send(res, 201, { ok: true });
    }
    if (req.method === 'DELETE') return send(res, dbs.delete(name) ? 200 : 404, { ok: true });
    return db ? send(res, 200, info(name, db)) : send(res, 404, { error: 'not_found', reason: 'Database does not exist.' });
  }
  if (!db) return send(res, 404, { error: 'not_found', reason: 'Database does not exist.' });
  const input = body.length ? JSON.parse(body) : {};
  const route = rest[0];
  if (route === '_local') {
    const id = rest.slice(1).join('/');
    if (req.method === 'PUT') {
      db.local.set(id, { ...input, _id: `_local/${id}`, _rev: '0-1' });
      return send(res, 201, { ok: true, id: `_local/${id}`, rev: '0-1' });
    }
    const doc = db.local.get(id);
    return doc ? send(res, 200, doc) : send(res, 404, { error: 'not_found', reason: 'missing' });
  }
  if (route === '_revs_diff') {
    const out = {};
    for (const [id, revs] of Object.entries(input)) {
      const have = db.docs.get(id);
      const missing = revs.filter((rev) => !have || have.doc._rev !== rev);
      if (missing.length) out[id] = { missing };
    }
    return send(res, 200, out);
  }
  if (route === '_bulk_docs') {
    for (const doc of input.docs) {
      db.seq += 1;
      db.docs.set(doc._id, { seq: db.seq, doc });
      db.log.push([db.seq, doc._id]);
    }
    return send(res, 201, []);
  }
  if (route === '_changes') return send(res, 200, changes(db, url.searchParams));
  if (route === '_bulk_get') {
    const results = input.docs.map(({ id }) => {
      const have = db.docs.get(id);
      return { id, docs: [have ? { ok: have.doc } : { error: { id, error: 'not_found', reason: 'missing' } }] };
    });
    return send(res, 200, { results });
  }
  send(res, 404, { error: 'not_found', reason: `null-target does not answer ${req.method} ${url.pathname}` });
}

http
  .createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      try {
        handle(req, res, Buffer.concat(chunks).toString('utf8'));
      } catch (e) {
        send(res, 400, { error: 'bad_request', reason: String(e) });
      }
    });
  })
  .listen(Number(process.argv[2]), '127.0.0.1');
