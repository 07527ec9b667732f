// PouchDB against rhizome serve: CouchDB's own document rules that
// PouchDB's replicator and applications rely on (couch_doc.erl and
// chttpd_db.erl are the reference). Exits non-zero on failure.
'use strict';
const { assert, local, remote, step } = require('./common');

(async () => {
  await remote('rules').destroy().catch(() => {});
  const db = remote('rules');
  await db.info();

  await step('_revisions wins over a disagreeing _rev (new_edits=false)', async () => {
    const doc = { _id: 'r', _rev: '2-bbb', _revisions: { start: 3, ids: ['ccc', 'bbb', 'aaa'] }, v: 3 };
    const res = await db.bulkDocs([doc], { new_edits: false });
    assert.deepStrictEqual(res.filter((r) => r.error), []);
    const got = await db.get('r', { revs: true });
    assert.strictEqual(got._rev, '3-ccc');
    assert.deepStrictEqual(got._revisions, { start: 3, ids: ['ccc', 'bbb', 'aaa'] });
  });

  await step('unknown special members and _ attachment names are refused', async () => {
    await assert.rejects(db.put({ _id: 'u', _foo: 1 }), (e) => e.status === 400 && e.name === 'doc_validation');
    const data = Buffer.from('x').toString('base64');
    await assert.rejects(
      db.put({ _id: 'u', _attachments: { _bad: { content_type: 'text/plain', data } } }),
      (e) => e.status === 400 && e.name === 'bad_request',
    );
    await assert.rejects(db.putAttachment('u2', '_bad', Buffer.from('x'), 'text/plain'), (e) => e.status === 400 && e.name === 'bad_request');
    // Neither write left a document behind.
    await assert.rejects(db.get('u'), (e) => e.status === 404);
    await assert.rejects(db.get('u2'), (e) => e.status === 404);
  });

  await step('new_edits=false without _rev fails the whole request, as CouchDB reads it', async () => {
    await assert.rejects(db.bulkDocs([{ _id: 'norev', v: 1 }, { _id: 'withrev', _rev: '1-abc', v: 1 }], { new_edits: false }),
      (e) => e.status === 400 && e.name === 'bad_request');
    await assert.rejects(db.get('withrev'), (e) => e.status === 404);
    await assert.rejects(db.get('norev'), (e) => e.status === 404);
    await db.bulkDocs([{ _id: 'withrev', _rev: '1-abc', v: 1 }], { new_edits: false });
    assert.strictEqual((await db.get('withrev'))._rev, '1-abc');
  });

  await step('_local documents: 0-N revisions, no history, no attachments, remove and re-put', async () => {
    const r1 = await db.put({ _id: '_local/cp', n: 1 });
    assert.strictEqual(r1.rev, '0-1');
    const d1 = await db.get('_local/cp', { revs: true });
    assert.strictEqual(d1._rev, '0-1');
    assert.strictEqual(d1._revisions, undefined);
    const r2 = await db.put({ ...d1, n: 2 });
    assert.strictEqual(r2.rev, '0-2');
    await assert.rejects(db.putAttachment('_local/cp', 'a.txt', r2.rev, Buffer.from('x'), 'text/plain'), (e) => e.status === 400);
    await assert.rejects(db.getAttachment('_local/cp', 'a.txt'), (e) => e.status === 400);
    const removed = await db.remove({ _id: '_local/cp', _rev: r2.rev });
    assert.ok(removed.ok);
    await assert.rejects(db.get('_local/cp'), (e) => e.status === 404);
    // Re-put without a rev, remove, then re-put with the rev it had.
    const r3 = await db.put({ _id: '_local/cp', n: 3 });
    assert.strictEqual(r3.rev, '0-1');
    await db.remove('_local/cp', r3.rev);
    const r4 = await db.put({ _id: '_local/cp', _rev: r3.rev, n: 4 });
    assert.ok(r4.ok);
    assert.strictEqual((await db.get('_local/cp')).n, 4);
    // Local documents are not in _all_docs or _changes.
    const all = await db.allDocs();
    assert.ok(!all.rows.some((row) => row.id.startsWith('_local/')));
  });

  await step('open_revs with latest=true returns each leaf once', async () => {
    const a = await db.put({ _id: 'lat', v: 1 });
    const b = await db.put({ _id: 'lat', _rev: a.rev, v: 2 });
    const c = await db.put({ _id: 'lat', _rev: b.rev, v: 3 });
    const revs = await db.get('lat', { open_revs: [a.rev, b.rev, c.rev], latest: true });
    assert.strictEqual(revs.length, 1, JSON.stringify(revs));
    assert.strictEqual(revs[0].ok._rev, c.rev);
  });

  await step('include_docs with attachments in allDocs and changes; stubs with digests', async () => {
    const text = Buffer.from('attached text');
    await db.put({ _id: 'att', _attachments: { 'f.txt': { content_type: 'text/plain', data: text.toString('base64') } } });
    const all = await db.allDocs({ keys: ['att'], include_docs: true, attachments: true, binary: false });
    assert.strictEqual(Buffer.from(all.rows[0].doc._attachments['f.txt'].data, 'base64').toString(), 'attached text');
    const full = await db.changes({ include_docs: true, attachments: true, doc_ids: ['att'], filter: '_doc_ids' });
    assert.strictEqual(Buffer.from(full.results[0].doc._attachments['f.txt'].data, 'base64').toString(), 'attached text');
    const stubs = await db.changes({ include_docs: true });
    const row = stubs.results.find((r) => r.id === 'att');
    const stub = row.doc._attachments['f.txt'];
    assert.strictEqual(stub.stub, true);
    assert.ok(stub.digest.startsWith('md5-'), JSON.stringify(stub));
    assert.strictEqual(stub.length, text.length);
  });

  await step('ids that are JavaScript Object members behave as any id', async () => {
    const ids = ['constructor', 'toString', 'hasOwnProperty', 'valueOf', 'prototype', 'isPrototypeOf'];
    for (const id of ids) {
      const r = await db.put({ _id: id, name: id });
      const got = await db.get(id);
      assert.strictEqual(got.name, id);
      await db.put({ ...got, name: `${id}!` });
      assert.ok(r.ok);
    }
    const all = await db.allDocs({ keys: ids, include_docs: true });
    assert.deepStrictEqual(all.rows.map((r) => r.doc.name), ids.map((id) => `${id}!`));
    // `__proto__` starts with `_`: refused as any such id, by CouchDB too.
    await assert.rejects(db.put({ _id: '__proto__', name: 'p' }), (e) => e.status === 400);
    const here = local('objects');
    await here.replicate.from(db, { doc_ids: ids });
    for (const id of ids) assert.strictEqual((await here.get(id)).name, `${id}!`);
    await here.put({ ...(await here.get('constructor')), name: 'pushed' });
    await here.replicate.to(db);
    assert.strictEqual((await db.get('constructor')).name, 'pushed');
  });

  await step('a full replication round trip keeps the rules', async () => {
    const here = local('roundtrip');
    await here.replicate.from(db);
    const back = remote('rules-copy');
    await back.destroy().catch(() => {});
    const copy = remote('rules-copy');
    await here.replicate.to(copy);
    const a = await db.get('att', { attachments: true });
    const b = await copy.get('att', { attachments: true });
    assert.deepStrictEqual(b._attachments['f.txt'].data, a._attachments['f.txt'].data);
    assert.strictEqual((await copy.get('r'))._rev, '3-ccc');
  });
})();
