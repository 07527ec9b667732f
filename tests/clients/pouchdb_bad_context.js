// PouchDB (tests/pouchdb's npm tree) replicates to rhizome serve a batch in
// which one document has a malformed JSON-LD @context: CouchDB's rule for
// _bulk_docs is one error per document, so that one fails alone
// (doc_write_failures) and every other document is written. Run by
// crates/rhizome-cli/tests/clients.rs with RHIZOME_URL set.
'use strict';
const path = require('path');
const { local, remote, step } = require(path.join(__dirname, '../pouchdb/common.js'));
const assert = require('assert');

(async () => {
  const source = local('source');
  const target = remote('contexts');
  await step('write 50 documents, one with a malformed @context', async () => {
    const docs = [];
    for (let n = 0; n < 50; n++) {
      docs.push({ _id: `doc${String(n).padStart(2, '0')}`, '@context': { '@vocab': 'http://schema.org/' }, name: `n${n}` });
    }
    docs[17]['@context'] = { '@vocab': 5 };
    await source.bulkDocs(docs);
  });
  await step('replicate: the bad document fails alone, and replication goes on', async () => {
    const result = await source.replicate.to(target);
    assert.strictEqual(result.docs_written, 49, JSON.stringify(result));
    assert.strictEqual(result.doc_write_failures, 1, JSON.stringify(result));
    const all = await target.allDocs();
    assert.strictEqual(all.rows.length, 49);
    assert.ok(!all.rows.some((r) => r.id === 'doc17'));
  });
  await step('a bulkDocs from PouchDB gets the error for that document only', async () => {
    const res = await target.bulkDocs([{ _id: 'fine' }, { _id: 'broken', '@context': { '@vocab': 5 } }]);
    assert.ok(res[0].ok, JSON.stringify(res));
    assert.strictEqual(res[1].name, 'doc_validation', JSON.stringify(res));
  });
})();
