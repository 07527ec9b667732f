// nano, CouchDB's official Node.js client, against rhizome serve (run by
// crates/rhizome-cli/tests/clients.rs with RHIZOME_URL set): a continuous
// replication started and cancelled by its replication_id, as CouchDB
// allows, and a continuous _changes feed cut by limit reporting what is
// left (pending).
'use strict';
const assert = require('assert');
const nano = require('nano')(process.env.RHIZOME_URL);

async function step(name, fn) {
  try {
    await fn();
  } catch (e) {
    console.error(`FAIL ${name}:`, e);
    process.exit(1);
  }
  console.log(`ok ${name}`);
}

(async () => {
  await step('documents to replicate', async () => {
    await nano.db.create('src');
    const docs = [];
    for (let n = 0; n < 10; n++) docs.push({ _id: `d${n}`, n });
    await nano.use('src').bulk({ docs });
  });
  await step('a continuous replication cancelled by its replication_id', async () => {
    const started = await nano.db.replicate('src', 'dst', { continuous: true, create_target: true });
    assert.ok(started.ok && started._local_id, JSON.stringify(started));
    const tasks = await nano.request({ path: '_active_tasks' });
    assert.ok(tasks.some((t) => t.type === 'replication'), JSON.stringify(tasks));
    const cancelled = await nano.request({ method: 'POST', path: '_replicate', body: { replication_id: started._local_id, cancel: true } });
    assert.deepStrictEqual(cancelled, { ok: true, _local_id: started._local_id });
    const after = await nano.request({ path: '_active_tasks' });
    assert.ok(!after.some((t) => t.type === 'replication'), JSON.stringify(after));
    await assert.rejects(nano.request({ method: 'POST', path: '_replicate', body: { replication_id: started._local_id, cancel: true } }), (e) => e.statusCode === 404);
  });
  await step('a continuous feed cut by limit reports what is pending', async () => {
    // nano hands a continuous feed to its changesReader; read it whole here.
    const url = new URL(process.env.RHIZOME_URL);
    const auth = Buffer.from(`${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`).toString('base64');
    const res = await fetch(`${url.protocol}//${url.host}/src/_changes?feed=continuous&limit=3`, { headers: { Authorization: `Basic ${auth}` } });
    const lines = (await res.text()).trim().split('\n').map((l) => JSON.parse(l));
    const last = lines[lines.length - 1];
    assert.strictEqual(lines.length, 4, JSON.stringify(lines));
    assert.strictEqual(last.pending, 7, JSON.stringify(last));
    const normal = await nano.db.changes('src', { limit: 3 });
    assert.strictEqual(normal.pending, 7);
  });
  await step('update and show functions through nano (db.atomic, db.show)', async () => {
    const db = nano.use('src');
    await db.insert({
      _id: '_design/app',
      updates: {
        bump: 'function (doc, req) { var by = JSON.parse(req.body).by; if (!doc) { return [{_id: req.id, n: by}, {json: {made: true}}]; } doc.n += by; return [doc, {json: {n: doc.n}}]; }',
      },
      shows: { n: 'function (doc, req) { return {body: "n=" + (doc ? doc.n : "none"), headers: {"Content-Type": "text/plain"}}; }' },
      lists: { all: 'function (head, req) { send("x"); }' },
    });
    assert.deepStrictEqual(await db.atomic('app', 'bump', 'd3', { by: 5 }), { n: 8 });
    assert.strictEqual((await db.get('d3')).n, 8);
    assert.deepStrictEqual(await db.atomic('app', 'bump', 'fresh', { by: 2 }), { made: true });
    assert.strictEqual((await db.get('fresh')).n, 2);
    assert.strictEqual(await db.show('app', 'n', 'd3'), 'n=8');
    await assert.rejects(db.atomic('app', 'nope', 'd3', {}), (e) => e.statusCode === 404);
    await assert.rejects(nano.request({ db: 'src', path: '_design/app/_list/all/v' }), (e) => e.statusCode === 501);
  });
})();
