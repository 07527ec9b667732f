// A CouchDB-compatible server made of PouchDB, in memory: express-pouchdb,
// the HTTP layer pouchdb-server is built on (without pouchdb-server's
// SQLite adapter, which would need a native build). A real peer for
// `rhizome replicate`. Usage: node peer-server.js PORT
'use strict';
const express = require('express');
const PouchDB = require('pouchdb').plugin(require('pouchdb-adapter-memory'));

const port = Number(process.argv[2]);
const app = express();
app.use('/', require('express-pouchdb')(PouchDB.defaults({ adapter: 'memory' }), { mode: 'minimumForPouchDB', inMemoryConfig: true }));
app.listen(port, '127.0.0.1', () => console.error(`express-pouchdb on http://127.0.0.1:${port}`));
