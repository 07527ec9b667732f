// Documents are RDF, seen from PouchDB: a subject loaded as RDF
// (`rhizome load --db`, before the server started) is a document PouchDB
// reads and replicates; a JSON-LD document PouchDB writes is found by
// SPARQL at /{db}/_sparql; a SPARQL update is a new revision PouchDB sees.
'use strict';
const { assert, local, remote, step, until } = require('./common');

const dbName = process.env.RDF_DB;
const subject = process.env.RDF_SUBJECT;
const FOAF = 'http://xmlns.com/foaf/0.1/';

async function sparql(params) {
  const url = new URL(`${process.env.RHIZOME_URL}/${dbName}/_sparql`);
  const auth = 'Basic ' + Buffer.from(`${url.username}:${decodeURIComponent(url.password)}`).toString('base64');
  url.username = '';
  url.password = '';
  const res = await fetch(url, {
    method: 'POST',
    headers: { Authorization: auth, 'Content-Type': 'application/x-www-form-urlencoded', Accept: 'application/sparql-results+json' },
    body: new URLSearchParams(params).toString(),
  });
  const text = await res.text();
  assert.ok(res.ok, `_sparql answered ${res.status}: ${text}`);
  return text ? JSON.parse(text) : null;
}

(async () => {
  const db = remote(dbName);

  await step('an RDF-loaded subject is a document PouchDB reads', async () => {
    const doc = await db.get(subject);
    assert.ok(doc._rev.startsWith('1-'), `revision ${doc._rev}`);
    const node = doc['@graph'].find((n) => n['@id'] === subject);
    assert.ok(node, `no node for ${subject} in ${JSON.stringify(doc)}`);
    assert.deepStrictEqual(node[FOAF + 'name'], [{ '@value': 'Bob' }]);
  });

  await step('and replicates it to a local PouchDB', async () => {
    const copy = local('rdf-copy');
    await copy.replicate.from(db);
    const doc = await copy.get(subject);
    assert.ok(doc['@graph'].length >= 1);
    const all = await db.allDocs();
    const mine = await copy.allDocs();
    assert.strictEqual(mine.total_rows, all.total_rows);
  });

  await step('a JSON-LD document written by PouchDB is found by SPARQL', async () => {
    await db.put({
      _id: 'alice',
      '@context': { name: FOAF + 'name', knows: { '@id': FOAF + 'knows', '@type': '@id' } },
      '@id': '',
      name: 'Alice',
      knows: subject,
    });
    const r = await sparql({ query: `SELECT ?doc ?friend WHERE { GRAPH ?doc { ?doc <${FOAF}name> "Alice" ; <${FOAF}knows> ?friend } }` });
    assert.strictEqual(r.results.bindings.length, 1, JSON.stringify(r));
    assert.ok(r.results.bindings[0].doc.value.endsWith(`/${dbName}/alice`), JSON.stringify(r));
    assert.strictEqual(r.results.bindings[0].friend.value, subject);
  });

  await step('an update of the document replaces its graph', async () => {
    const doc = await db.get('alice');
    doc.name = 'Alice Liddell';
    await db.put(doc);
    const r = await sparql({ query: `SELECT ?name WHERE { ?s <${FOAF}name> ?name FILTER(STRSTARTS(?name, "Alice")) }` });
    assert.deepStrictEqual(r.results.bindings.map((b) => b.name.value), ['Alice Liddell']);
  });

  // A loaded subject's document is the graph named by the subject's IRI; an
  // update without GRAPH would go to the stored default graph instead.
  await step('a SPARQL update of a document\'s graph is a new revision that PouchDB sees in _changes', async () => {
    const before = await db.get(subject);
    const since = (await db.info()).update_seq;
    await sparql({ update: `INSERT DATA { GRAPH <${subject}> { <${subject}> <${FOAF}nick> "bobby" } }` });
    const changes = await db.changes({ since });
    assert.ok(changes.results.some((c) => c.id === subject), JSON.stringify(changes));
    const after = await db.get(subject);
    assert.ok(after._rev.startsWith('2-'), `${before._rev} -> ${after._rev}`);
    const node = after['@graph'].find((n) => n['@id'] === subject);
    assert.deepStrictEqual(node[FOAF + 'nick'], [{ '@value': 'bobby' }]);
  });

  await step('an update without GRAPH goes to the stored default graph, a document PouchDB sees too', async () => {
    const since = (await db.info()).update_seq;
    await sparql({ update: `INSERT DATA { <http://example.org/note> <${FOAF}nick> "loose" }` });
    const changes = await db.changes({ since });
    assert.deepStrictEqual(changes.results.map((c) => c.id), ['default-graph'], JSON.stringify(changes));
    const r = await sparql({ query: `ASK { <http://example.org/note> <${FOAF}nick> "loose" }` });
    assert.strictEqual(r.boolean, true);
  });

  await step('a deleted document leaves no triples', async () => {
    const doc = await db.get('alice');
    await db.remove(doc);
    const r = await sparql({ query: `ASK { ?s <${FOAF}name> "Alice Liddell" }` });
    assert.strictEqual(r.boolean, false);
  });
})();
