// pouchdb-find against rhizome serve: createIndex, find (selectors, sort,
// fields, limit, skip, bookmark), explain, getIndexes, deleteIndex, and
// CouchDB's errors as PouchDB reports them. Exits non-zero on failure.
'use strict';
const PouchDB = require('pouchdb');
PouchDB.plugin(require('pouchdb-find'));
const { assert, remote, step } = require('./common');

(async () => {
  await remote('find').destroy().catch(() => {});
  const db = remote('find');
  await db.info();

  await step('bulkDocs of movies', async () => {
    const docs = [];
    for (let i = 0; i < 40; i++) {
      docs.push({ _id: `movie-${String(i).padStart(2, '0')}`, year: 1980 + i, genre: i % 3 === 0 ? 'drama' : 'comedy', title: `Title ${i}`, cast: { lead: `Lead ${i}`, count: i % 5 } });
    }
    docs.push({ _id: 'odd', year: 'unknown', tags: ['a', 'b'] });
    const res = await db.bulkDocs(docs);
    assert.strictEqual(res.filter((r) => r.ok).length, docs.length);
  });

  await step('find without an index scans all documents and warns', async () => {
    const res = await db.find({ selector: { genre: 'drama', year: { $lt: 1990 } } });
    assert.deepStrictEqual(res.docs.map((d) => d._id), ['movie-00', 'movie-03', 'movie-06', 'movie-09']);
    assert.ok(/no matching index/i.test(res.warning), JSON.stringify(res));
  });

  await step('a sort no index serves is refused as CouchDB does', async () => {
    await assert.rejects(db.find({ selector: { year: { $gt: 0 } }, sort: ['year'] }), (e) => e.status === 400 && e.error === 'no_usable_index');
  });

  await step('createIndex creates once, then exists', async () => {
    const r = await db.createIndex({ index: { fields: ['year'] }, ddoc: 'by-year', name: 'year' });
    assert.strictEqual(r.result, 'created');
    assert.strictEqual(r.id, '_design/by-year');
    const again = await db.createIndex({ index: { fields: ['year'] }, ddoc: 'by-year', name: 'year' });
    assert.strictEqual(again.result, 'exists');
    const compound = await db.createIndex({ index: { fields: ['genre', 'year'] } });
    assert.strictEqual(compound.result, 'created');
  });

  await step('find with an index: range, sort, fields, limit, skip', async () => {
    // 'odd' (a string year) collates after every number: first in desc, skipped.
    const res = await db.find({ selector: { year: { $gte: 2010 } }, sort: [{ year: 'desc' }], fields: ['_id', 'year', 'cast.lead'], limit: 3, skip: 1 });
    assert.deepStrictEqual(res.docs, [
      { _id: 'movie-39', year: 2019, cast: { lead: 'Lead 39' } },
      { _id: 'movie-38', year: 2018, cast: { lead: 'Lead 38' } },
      { _id: 'movie-37', year: 2017, cast: { lead: 'Lead 37' } },
    ]);
    assert.strictEqual(res.warning, undefined);
    // Strings collate after numbers, so the index's range holds 'unknown'.
    const after = await db.find({ selector: { year: { $gt: 2018 } }, sort: ['year'] });
    assert.deepStrictEqual(after.docs.map((d) => d._id), ['movie-39', 'odd']);
  });

  await step('bookmarks page through an index', async () => {
    const seen = [];
    let bookmark;
    for (let page = 0; page < 10; page++) {
      const res = await db.find({ selector: { genre: 'comedy', year: { $gt: 0 } }, sort: ['genre', 'year'], limit: 10, bookmark });
      if (res.docs.length === 0) break;
      seen.push(...res.docs.map((d) => d.year));
      bookmark = res.bookmark;
    }
    assert.strictEqual(seen.length, 26);
    assert.deepStrictEqual(seen, [...seen].sort((a, b) => a - b));
  });

  await step('selector operators', async () => {
    const ids = async (selector) => (await db.find({ selector, limit: 100 })).docs.map((d) => d._id).sort();
    assert.deepStrictEqual(await ids({ tags: { $elemMatch: { $eq: 'b' } } }), ['odd']);
    assert.deepStrictEqual(await ids({ year: { $type: 'string' } }), ['odd']);
    assert.deepStrictEqual(await ids({ $or: [{ year: 1980 }, { year: 1981 }] }), ['movie-00', 'movie-01']);
    assert.deepStrictEqual(await ids({ year: { $in: [1999, 2000] } }), ['movie-19', 'movie-20']);
    assert.deepStrictEqual(await ids({ title: { $regex: '^Title 3[0-2]$' } }), ['movie-30', 'movie-31', 'movie-32']);
    assert.deepStrictEqual(await ids({ 'cast.count': 4, year: { $lt: 1995 } }), ['movie-04', 'movie-09', 'movie-14']);
    assert.deepStrictEqual(await ids({ tags: { $exists: true } }), ['odd']);
    await assert.rejects(db.find({ selector: { year: { $bogus: 1 } } }), (e) => e.status === 400 && e.error === 'invalid_operator');
  });

  await step('explain names the index CouchDB would pick', async () => {
    const ex = await db.explain({ selector: { genre: 'drama', year: { $gt: 2000 } } });
    assert.strictEqual(ex.dbname, 'find');
    assert.deepStrictEqual(ex.index.def.fields, [{ genre: 'asc' }, { year: 'asc' }]);
    assert.deepStrictEqual(ex.selector, { $and: [{ genre: { $eq: 'drama' } }, { year: { $gt: 2000 } }] });
    assert.strictEqual(ex.limit, 25);
  });

  await step('getIndexes and deleteIndex', async () => {
    const { indexes, total_rows } = await db.getIndexes();
    assert.strictEqual(total_rows, 3);
    assert.strictEqual(indexes[0].name, '_all_docs');
    const year = indexes.find((i) => i.name === 'year');
    assert.strictEqual(year.ddoc, '_design/by-year');
    const res = await db.deleteIndex(year);
    assert.strictEqual(res.ok, true);
    assert.strictEqual((await db.getIndexes()).total_rows, 2);
    await assert.rejects(db.deleteIndex(year), (e) => e.status === 404);
    // The index's design document replicates like any other: gone now.
    await assert.rejects(db.get('_design/by-year'), (e) => e.status === 404);
  });

  await step('find follows writes and deletes (update=true)', async () => {
    const doc = await db.get('movie-00');
    await db.remove(doc);
    await db.put({ _id: 'late', genre: 'drama', year: 1970 });
    const res = await db.find({ selector: { genre: 'drama', year: { $lt: 1985 } }, sort: ['genre', 'year'] });
    assert.deepStrictEqual(res.docs.map((d) => d._id), ['late', 'movie-03']);
  });

  await db.destroy();
})();
