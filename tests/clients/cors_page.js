// A web page on another origin syncs with rhizome serve through PouchDB
// (tests/pouchdb's browser build), in Debian's Chromium driven by
// playwright-core: the offline-first case, which needs CORS. Run by
// crates/rhizome-cli/tests/clients.rs with:
//   RHIZOME_URL  the server, with the admin's credentials;
//   PAGE_PORT    the port to serve the page from (the server lists
//                http://127.0.0.1:PAGE_PORT in --cors-origins);
//   OTHER_PORT   a port for the same page from an origin not listed.
// The server side of the test speaks through nano, CouchDB's Node.js client.
'use strict';
const assert = require('assert');
const fs = require('fs');
const http = require('http');
const os = require('os');
const path = require('path');
const { chromium } = require('playwright-core');

const admin = new URL(process.env.RHIZOME_URL);
const serverUrl = `${admin.protocol}//${admin.host}`;
const nano = require('nano')(process.env.RHIZOME_URL);
const pouchdbJs = fs.readFileSync(path.join(__dirname, '../pouchdb/node_modules/pouchdb/dist/pouchdb.min.js'));

const PAGE = `<!doctype html><meta charset="utf-8"><title>offline-first</title>
<script src="/pouchdb.js"></script>
<script>
  // Everything the test asks of the page, by name.
  window.app = {
    local: new PouchDB('notes'),
    remote(user, password) {
      return new PouchDB(${JSON.stringify(serverUrl)} + '/notes', { auth: { username: user, password: password } });
    },
  };
</script>`;

function servePage(port) {
  const server = http.createServer((req, res) => {
    if (req.url === '/pouchdb.js') {
      res.writeHead(200, { 'content-type': 'application/javascript' });
      res.end(pouchdbJs);
    } else {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end(PAGE);
    }
  });
  return new Promise((resolve) => server.listen(port, '127.0.0.1', () => resolve(server)));
}

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

async function until(ms, what, check) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out: ${what}`);
}

(async () => {
  const pages = [await servePage(Number(process.env.PAGE_PORT)), await servePage(Number(process.env.OTHER_PORT))];
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'rhizome-chromium-'));
  const browser = await chromium.launchPersistentContext(profile, {
    executablePath: '/usr/bin/chromium',
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  const cleanup = async () => {
    await browser.close();
    pages.forEach((p) => p.close());
    fs.rmSync(profile, { recursive: true, force: true });
  };
  try {
    await step('a member user and the database, through nano', async () => {
      await nano.db.create('notes');
      await nano.use('_users').insert({ _id: 'org.couchdb.user:alice', name: 'alice', type: 'user', roles: [], password: 'pw-alice' });
      await nano.request({ db: 'notes', method: 'PUT', path: '_security', body: { members: { names: ['alice'], roles: [] } } });
      await nano.use('notes').insert({ _id: 'from-server', text: 'written on the server' });
    });
    const page = await browser.newPage();
    await page.goto(`http://127.0.0.1:${process.env.PAGE_PORT}/`);
    await step('the page writes offline, then syncs both ways across origins', async () => {
      const result = await page.evaluate(async () => {
        const docs = [];
        for (let n = 0; n < 25; n++) docs.push({ _id: `note${String(n).padStart(2, '0')}`, text: `note ${n}` });
        await app.local.bulkDocs(docs);
        const remote = app.remote('alice', 'pw-alice');
        const info = await remote.info();
        const sync = await app.local.sync(remote);
        const mine = await app.local.get('from-server');
        return { db: info.db_name, pushed: sync.push.docs_written, pulled: sync.pull.docs_written, text: mine.text };
      });
      assert.deepStrictEqual(result, { db: 'notes', pushed: 25, pulled: 1, text: 'written on the server' });
      const all = await nano.use('notes').list();
      assert.strictEqual(all.rows.length, 26);
    });
    await step('a live sync brings a server write to the page and an edit back', async () => {
      await page.evaluate(() => {
        window.live = app.local.sync(app.remote('alice', 'pw-alice'), { live: true, retry: true });
      });
      await nano.use('notes').insert({ _id: 'later', text: 'live' });
      await until(20000, 'the page has the live write', () => page.evaluate(() => app.local.get('later').then(() => true, () => false)));
      await page.evaluate(async () => {
        const doc = await app.local.get('note03');
        doc.text = 'edited in the page';
        await app.local.put(doc);
      });
      await until(20000, 'the server has the page edit', async () => (await nano.use('notes').get('note03')).text === 'edited in the page');
      await page.evaluate(() => window.live.cancel());
    });
    await step('the same page from an origin not listed cannot reach the server', async () => {
      const other = await browser.newPage();
      await other.goto(`http://127.0.0.1:${process.env.OTHER_PORT}/`);
      const outcome = await other.evaluate(() => app.remote('alice', 'pw-alice').info().then(() => 'reached', (e) => String(e && (e.message || e.name))));
      assert.notStrictEqual(outcome, 'reached');
    });
  } finally {
    await cleanup();
  }
})();
