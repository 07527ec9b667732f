// PouchDB against rhizome serve: CRUD, _bulk_docs, _all_docs, _changes
// (normal and live), attachments, conflicts. Exits non-zero on failure.
'use strict';
const { assert, local, remote, step, until } = require('./common');

(async () => {
  await remote('crud').destroy().catch(() => {});
  const db = remote('crud');
  await step('create database through PouchDB setup', async () => {
    const info = await db.info();
    assert.strictEqual(info.db_name, 'crud');
    assert.strictEqual(info.doc_count, 0);
  });

  let rev1;
  await step('put, get, update, conflict, delete', async () => {
    const r = await db.put({ _id: 'a', n: 1 });
    assert.ok(r.ok && r.rev.startsWith('1-'));
    rev1 = r.rev;
    const doc = await db.get('a');
    assert.strictEqual(doc.n, 1);
    const r2 = await db.put({ ...doc, n: 2 });
    assert.ok(r2.rev.startsWith('2-'));
    await assert.rejects(db.put({ _id: 'a', _rev: rev1, n: 3 }), (e) => e.status === 409);
    const del = await db.remove('a', r2.rev);
    assert.ok(del.ok);
    await assert.rejects(db.get('a'), (e) => e.status === 404 && e.reason === 'deleted');
    const posted = await db.post({ kind: 'posted' });
    assert.ok(posted.id.length > 0);
  });

  await step('bulkDocs and allDocs', async () => {
    const docs = [];
    for (let i = 0; i < 50; i++) docs.push({ _id: `doc-${String(i).padStart(3, '0')}`, i });
    const res = await db.bulkDocs(docs);
    assert.strictEqual(res.filter((r) => r.ok).length, 50);
    const again = await db.bulkDocs([{ _id: 'doc-000', i: -1 }]);
    assert.strictEqual(again[0].status || again[0].error, again[0].status ? 409 : 'conflict');
    const all = await db.allDocs({ startkey: 'doc-010', endkey: 'doc-019', include_docs: true });
    assert.strictEqual(all.rows.length, 10);
    assert.strictEqual(all.rows[0].doc.i, 10);
    const desc = await db.allDocs({ descending: true, limit: 3, startkey: 'doc-049', endkey: 'doc-' });
    assert.deepStrictEqual(desc.rows.map((r) => r.id), ['doc-049', 'doc-048', 'doc-047']);
    const keys = await db.allDocs({ keys: ['doc-005', 'nope', 'a'] });
    assert.strictEqual(keys.rows[0].id, 'doc-005');
    assert.strictEqual(keys.rows[1].error, 'not_found');
    assert.strictEqual(keys.rows[2].value.deleted, true);
    const skip = await db.allDocs({ startkey: 'doc-', endkey: 'doc-\uffff', skip: 45 });
    assert.strictEqual(skip.rows.length, 5);
  });

  await step('changes: normal, since, limit, filters', async () => {
    const all = await db.changes();
    assert.strictEqual(all.results.length, 52);
    const deleted = all.results.find((r) => r.id === 'a');
    assert.strictEqual(deleted.deleted, true);
    const some = await db.changes({ since: all.results[40].seq, limit: 5, include_docs: true });
    assert.strictEqual(some.results.length, 5);
    assert.ok(some.results[0].doc._id);
    const ids = await db.changes({ doc_ids: ['doc-001', 'doc-002'] });
    assert.deepStrictEqual(ids.results.map((r) => r.id).sort(), ['doc-001', 'doc-002']);
    const sel = await db.changes({ selector: { i: { $gte: 45 } } });
    assert.strictEqual(sel.results.length, 5);
  });

  await step('changes: live feed sees new writes', async () => {
    const seen = new Set();
    const feed = db.changes({ live: true, since: 'now', include_docs: true }).on('change', (c) => seen.add(c.id));
    await new Promise((r) => setTimeout(r, 200));
    await db.put({ _id: 'live-1' });
    await db.bulkDocs([{ _id: 'live-2' }, { _id: 'live-3' }]);
    await until(10000, 'live changes', () => ['live-1', 'live-2', 'live-3'].every((id) => seen.has(id)));
    feed.cancel();
  });

  await step('attachments: inline, standalone, stubs, digests', async () => {
    const text = Buffer.from('hello rhizome');
    const r = await db.put({ _id: 'att', _attachments: { 'a.txt': { content_type: 'text/plain', data: text.toString('base64') } } });
    const doc = await db.get('att');
    assert.strictEqual(doc._attachments['a.txt'].stub, true);
    assert.strictEqual(doc._attachments['a.txt'].digest, 'md5-' + require('crypto').createHash('md5').update(text).digest('base64'));
    const blob = await db.getAttachment('att', 'a.txt');
    assert.strictEqual(Buffer.from(blob).toString(), 'hello rhizome');
    const bin = Buffer.from([0, 1, 2, 255, 254]);
    const r2 = await db.putAttachment('att', 'b.bin', r.rev, bin, 'application/octet-stream');
    const withData = await db.get('att', { attachments: true });
    assert.strictEqual(Object.keys(withData._attachments).length, 2);
    assert.strictEqual(withData._attachments['b.bin'].data, bin.toString('base64'));
    const current = await db.get('att');
    assert.strictEqual(current._rev, r2.rev);
    const updated = await db.put({ ...current, extra: true });
    const kept = await db.getAttachment('att', 'a.txt');
    assert.strictEqual(Buffer.from(kept).toString(), 'hello rhizome');
    const r4 = await db.removeAttachment('att', 'a.txt', updated.rev);
    const after = await db.get('att');
    assert.deepStrictEqual(Object.keys(after._attachments), ['b.bin']);
    assert.ok(r4.ok);
    // Attachments travel with replication both ways.
    const copy = local('att-copy');
    await copy.replicate.from(db);
    const back = await copy.getAttachment('att', 'b.bin');
    assert.deepStrictEqual(Buffer.from(back), bin);
  });

  await step('conflicts: the server and PouchDB pick the same winner', async () => {
    const branches = [
      { _id: 'c', _rev: '2-aaa', _revisions: { start: 2, ids: ['aaa', 'root'] }, v: 'a' },
      { _id: 'c', _rev: '2-bbb', _revisions: { start: 2, ids: ['bbb', 'root'] }, v: 'b' },
      { _id: 'c', _rev: '3-ccc', _revisions: { start: 3, ids: ['ccc', 'aaa', 'root'] }, _deleted: true },
      { _id: 'c', _rev: '1-zzz', _revisions: { start: 1, ids: ['zzz'] }, v: 'z' },
    ];
    const here = local('conflicts');
    await db.bulkDocs(branches, { new_edits: false });
    await here.bulkDocs(branches.slice().reverse(), { new_edits: false });
    const a = await db.get('c', { conflicts: true, deleted_conflicts: true });
    const b = await here.get('c', { conflicts: true, deleted_conflicts: true });
    assert.strictEqual(a._rev, b._rev);
    assert.strictEqual(a._rev, '2-bbb');
    assert.deepStrictEqual(a._conflicts.sort(), b._conflicts.sort());
    assert.deepStrictEqual(a._deleted_conflicts, b._deleted_conflicts);
    const revs = await db.get('c', { open_revs: 'all' });
    assert.strictEqual(revs.length, 3);
    // Resolve by deleting the losers; both sides agree after replication.
    for (const loser of a._conflicts) await db.remove('c', loser);
    await here.replicate.from(db);
    const resolved = await here.get('c', { conflicts: true });
    assert.strictEqual(resolved._conflicts, undefined);
    assert.strictEqual(resolved._rev, '2-bbb');
  });

  await step('local documents (replication checkpoints)', async () => {
    const r = await db.put({ _id: '_local/check', last_seq: 5 });
    const doc = await db.get('_local/check');
    assert.strictEqual(doc.last_seq, 5);
    await db.put({ ...doc, last_seq: 6 });
    await assert.rejects(db.put({ _id: '_local/check', _rev: r.rev, last_seq: 7 }), (e) => e.status === 409);
  });

  await step('destroy the database', async () => {
    await db.destroy();
    const again = remote('crud');
    const info = await again.info();
    assert.strictEqual(info.doc_count, 0);
  });
})();
