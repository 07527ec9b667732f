// PouchDB replication with rhizome serve: a push, a pull and a live sync of
// N documents (10,000 by default, SYNC_DOCS to change) with conflicts made
// on both sides, compared document by document (winner and conflict list).
'use strict';
const { assert, local, remote, step, winners, sameWinners, until } = require('./common');

const N = Number(process.env.SYNC_DOCS || 10000);
const CONFLICTS = Math.max(1, Math.floor(N / 20));

function id(i) {
  return `doc-${String(i).padStart(6, '0')}`;
}

(async () => {
  const a = local('a');
  const b = local('b');
  await remote('sync').destroy().catch(() => {});
  const server = remote('sync');

  await step(`write ${N} documents locally`, async () => {
    for (let start = 0; start < N; start += 1000) {
      const docs = [];
      for (let i = start; i < Math.min(N, start + 1000); i++) docs.push({ _id: id(i), i, text: `document number ${i}`, tags: ['x', i % 7] });
      const res = await a.bulkDocs(docs);
      assert.ok(res.every((r) => r.ok));
    }
  });

  await step(`push ${N} documents`, async () => {
    const res = await a.replicate.to(server, { batch_size: 500 });
    assert.strictEqual(res.ok, true);
    assert.strictEqual(res.docs_written, N);
    const info = await server.info();
    assert.strictEqual(info.doc_count, N);
  });

  await step(`pull ${N} documents into a fresh replica`, async () => {
    const res = await b.replicate.from(server, { batch_size: 500 });
    assert.strictEqual(res.docs_written, N);
    sameWinners(await winners(server), await winners(b), 'pulled replica');
  });

  await step(`make ${CONFLICTS} conflicts: the same documents edited on both sides`, async () => {
    const ids = [];
    for (let k = 0; k < CONFLICTS; k++) ids.push(id(k * 20));
    const onA = await a.allDocs({ keys: ids, include_docs: true });
    await a.bulkDocs(onA.rows.map((r) => ({ ...r.doc, edited: 'on a' })));
    const onServer = await server.allDocs({ keys: ids, include_docs: true });
    const res = await server.bulkDocs(onServer.rows.map((r) => ({ ...r.doc, edited: 'on the server', more: [1, 2] })));
    assert.ok(res.every((r) => r.ok));
    // A few deletions on one side too.
    const del = await server.allDocs({ keys: [id(1), id(2)], include_docs: true });
    await server.bulkDocs(del.rows.map((r) => ({ ...r.doc, _deleted: true })));
  });

  await step('live sync converges with the same winners and conflicts on both sides', async () => {
    const sync = a.sync(server, { live: true, retry: true, batch_size: 500 });
    let failed = null;
    sync.on('error', (e) => (failed = e));
    await a.bulkDocs([{ _id: 'live-from-a' }]);
    await server.bulkDocs([{ _id: 'live-from-server' }]);
    await until(120000, 'replicas to converge', async () => {
      if (failed) throw failed;
      const [wa, ws] = await Promise.all([winners(a), winners(server)]);
      if (wa.size !== ws.size || !wa.has('live-from-server') || !ws.has('live-from-a')) return false;
      for (const [k, w] of wa) {
        const o = ws.get(k);
        if (!o || o.rev !== w.rev || o.conflicts.join() !== w.conflicts.join()) return false;
      }
      return true;
    });
    sync.cancel();
    const wa = await winners(a);
    const ws = await winners(server);
    sameWinners(wa, ws, 'after live sync');
    const conflicted = [...wa.values()].filter((w) => w.conflicts.length > 0).length;
    assert.strictEqual(conflicted, CONFLICTS, 'every edited document is in conflict on both sides');
    assert.strictEqual(wa.has(id(1)), false, 'a deletion on the server reached the replica');
    // The winner is the same revision CouchDB's rule picks: deeper, then the
    // greater hash; check one document's body matches its winning revision.
    const doc = await a.get(id(0), { conflicts: true });
    const fromServer = await server.get(id(0), { conflicts: true });
    assert.deepStrictEqual(doc, fromServer);
  });

  await step('pull the conflicts into the second replica too', async () => {
    await b.replicate.from(server, { batch_size: 500 });
    sameWinners(await winners(server), await winners(b), 'second replica');
  });
})();
