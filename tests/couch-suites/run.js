'use strict';
// CouchDB's and PouchDB's own test suites against a real `rhizome serve`
// (issue 43): PouchDB's tests/integration, tests/find (pouchdb-find) and
// tests/mapreduce, and CouchDB's Mango suite (Python), file by file, each
// result checked against the suite's known-failure list beside this file.
//
// Run by ./run (which prepares the suites' copies through scripts/setup);
// see ./run --help. Fails on a failure that is not listed, and on a listed
// test that passes now or no longer exists, so that the lists stay true.
const { spawn } = require('child_process');
const fs = require('fs');
const http = require('http');
const net = require('net');
const os = require('os');
const path = require('path');

const HERE = __dirname;
const ADMIN = 'admin:s3cret';
const SUITES = ['integration', 'find', 'mapreduce', 'mango'];
// A whole file that runs past this is stopped and its unfinished tests fail.
const FILE_DEADLINE_MS = 15 * 60 * 1000;

function usage() {
  return `usage: run.js [--suite NAME]... [--file SUBSTRING]... [--couch URL] [--record FILE]
  --suite      ${SUITES.join(', ')} (default: all four)
  --file       only the files whose name contains this
  --couch URL  run against this server (http://USER:PASS@HOST:PORT) instead of
               starting rhizome serve; known failures are then not checked
  --record     write every result as JSON to FILE
environment: RHIZOME_BIN (the rhizome binary), POUCHDB_SUITE (the prepared copy
of PouchDB's repository), MANGO_PYTHON (a python with requests, hypothesis and
nose2), MANGO_TESTS (CouchDB's src/mango/test)`;
}

function parseArgs(argv) {
  const args = { suites: [], files: [], couch: null, record: null };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const value = () => {
      if (i + 1 >= argv.length) throw new Error(`${a} needs a value\n${usage()}`);
      return argv[++i];
    };
    if (a === '--suite') args.suites.push(value());
    else if (a === '--file') args.files.push(value());
    else if (a === '--couch') args.couch = value().replace(/\/$/, '');
    else if (a === '--record') args.record = value();
    else if (a === '--help' || a === '-h') { console.log(usage()); process.exit(0); }
    else throw new Error(`unknown argument ${a}\n${usage()}`);
  }
  for (const s of args.suites) {
    if (!SUITES.includes(s)) throw new Error(`unknown suite ${s}\n${usage()}`);
  }
  if (args.suites.length === 0) args.suites = SUITES.slice();
  return args;
}

function env(name) {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set (tests/couch-suites/run sets it)`);
  return v;
}

// --- the server ---------------------------------------------------------

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

function get(url) {
  return new Promise((resolve) => {
    const req = http.get(url, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode));
    });
    req.on('error', () => resolve(0));
    req.setTimeout(2000, () => { req.destroy(); resolve(0); });
  });
}

const pause = (ms) => new Promise((r) => setTimeout(r, ms));

async function startRhizome() {
  const bin = env('RHIZOME_BIN');
  const data = fs.mkdtempSync(path.join(os.tmpdir(), 'rhizome-couch-suites-'));
  const port = await freePort();
  const child = spawn(bin, ['--data', data, 'serve', '--quiet', '--bind', `127.0.0.1:${port}`, '--admin', ADMIN], {
    stdio: ['ignore', 'ignore', fs.openSync(path.join(data, '..', path.basename(data) + '.log'), 'w')],
  });
  let exited = null;
  const exit = new Promise((resolve) => child.on('exit', (code, signal) => { exited = signal || code; resolve(); }));
  // Poll readiness with a deadline (no fixed sleep).
  const deadline = Date.now() + 60000;
  while (Date.now() < deadline) {
    if (exited !== null) throw new Error(`rhizome serve exited early (${exited})`);
    if (await get(`http://127.0.0.1:${port}/_up`) === 200) {
      return {
        url: `http://${ADMIN}@127.0.0.1:${port}`,
        // The data folder goes once the server has exited: a stopping
        // server still writes into it (it closes its databases).
        async stop() {
          if (exited === null) {
            child.kill('SIGTERM');
            const killed = setTimeout(() => child.kill('SIGKILL'), 30000);
            await exit;
            clearTimeout(killed);
          }
          fs.rmSync(data, { recursive: true, force: true });
          fs.rmSync(data + '.log', { force: true });
        },
        // On the runner's own SIGINT/SIGTERM: no time to wait.
        kill() {
          if (exited === null) child.kill('SIGKILL');
          try { fs.rmSync(data, { recursive: true, force: true }); } catch { /* the process may still be going */ }
        },
        log: data + '.log',
      };
    }
    await pause(50);
  }
  child.kill('SIGKILL');
  throw new Error('rhizome serve did not answer /_up within 60 s');
}

// PouchDB's test-node.sh starts a server that answers 500 to everything on
// port 3010, for a replication test of a source that is down.
function startDownServer() {
  return new Promise((resolve) => {
    const srv = http.createServer((req, res) => {
      res.writeHead(500, { 'Content-Type': 'application/json' });
      res.end('{}');
    });
    srv.on('error', () => resolve(null));
    srv.listen(3010, '127.0.0.1', () => resolve(srv));
  });
}

// --- running files ------------------------------------------------------

function run(cmd, argv, opts) {
  return new Promise((resolve) => {
    const child = spawn(cmd, argv, { ...opts, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    const keep = (chunk) => {
      output += chunk;
      if (output.length > 200000) output = output.slice(-100000);
    };
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    let timedOut = false;
    const timer = setTimeout(() => { timedOut = true; child.kill('SIGKILL'); }, FILE_DEADLINE_MS);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, timedOut, output });
    });
  });
}

// The files of a PouchDB suite, each with the files that set up its run
// (global hooks, the shared `context`), as PouchDB's own runner loads them.
function pouchdbFiles(root, suite) {
  const list = (dir) => fs.readdirSync(path.join(root, dir))
    .filter((f) => /^test\..*\.js$/.test(f)).sort().map((f) => `${dir}/${f}`);
  if (suite === 'integration') {
    const hooks = 'tests/integration/test.setup_global_hooks.js';
    return list('tests/integration').filter((f) => f !== hooks).map((f) => ({ name: path.basename(f), files: [hooks, f] }));
  }
  if (suite === 'find') {
    const setup = 'tests/find/test-suite-1/test.aaa-setup.js';
    const files = [];
    for (const dir of ['test-suite-1', 'test-suite-2', 'test-issues']) {
      for (const f of list(`tests/find/${dir}`)) {
        if (f !== setup) files.push({ name: `${dir}/${path.basename(f)}`, files: dir === 'test-suite-1' ? [setup, f] : [f] });
      }
    }
    return files;
  }
  return list('tests/mapreduce').map((f) => ({ name: path.basename(f), files: [f] }));
}

// A folder of links to the prepared copy, where mocha runs: PouchDB's test
// setup keeps local databases in ./tmp and removes it when a run exits, so
// two runs of one copy (Rhizome's and CouchDB's, say) need a folder each.
function runFolder(root) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'couch-suites-pouchdb-'));
  for (const entry of fs.readdirSync(root)) {
    if (entry !== 'tmp') fs.symlinkSync(path.join(root, entry), path.join(dir, entry));
  }
  return dir;
}

async function runPouchdbFile(root, suite, file, couchUrl) {
  const out = path.join(os.tmpdir(), `couch-suites-${process.pid}-${Date.now()}.jsonl`);
  // VIEW_ADAPTERS as PouchDB's bin/run-test.sh sets it.
  const environment = { ...process.env, COUCH_HOST: couchUrl, VIEW_ADAPTERS: 'memory' };
  // As PouchDB's TESTING.md says: find and mapreduce on the server alone,
  // pouchdb-find loaded as the plugin it is; integration mixes local and
  // remote databases.
  if (suite !== 'integration') environment.ADAPTERS = 'http';
  if (suite === 'find') environment.PLUGINS = 'pouchdb-find';
  // mocha as PouchDB's bin/test-node.sh runs it, without --bail; --exit
  // for PouchDB's #8839. Its default test timeout is 5 s; 10 s here, as
  // this runs beside `cargo test` on two shared cores (a timeout is not
  // behaviour under test; tests that set their own keep theirs).
  const argv = [path.join(root, 'node_modules/mocha/bin/mocha.js'), '--exit', '--timeout', '10000',
    '--require=./tests/integration/node.setup.js',
    '--reporter', path.join(HERE, 'reporter.js'), '--reporter-option', `output=${out}`,
    ...file.files];
  const cwd = runFolder(root);
  const result = await run(process.execPath, argv, { cwd, env: environment });
  fs.rmSync(cwd, { recursive: true, force: true });
  const lines = fs.existsSync(out) ? fs.readFileSync(out, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l)) : [];
  fs.rmSync(out, { force: true });
  const tests = new Map();
  let ended = false;
  for (const r of lines) {
    if (r.event === 'planned') {
      if (!tests.has(r.title)) tests.set(r.title, { status: 'notrun', count: 0 });
      tests.get(r.title).count++;
    } else if (r.event === 'pass' || r.event === 'pending') {
      const t = tests.get(r.title) || { status: 'notrun', count: 1 };
      // A title given to several tests fails if any of them fails.
      if (t.status !== 'fail') t.status = r.event === 'pass' ? 'pass' : 'skip';
      tests.set(r.title, t);
    } else if (r.event === 'fail') {
      tests.set(r.title, { ...(tests.get(r.title) || { count: 1 }), status: 'fail', error: r.error });
    } else if (r.event === 'end') {
      ended = true;
    }
  }
  let note = '';
  if (!ended) {
    note = result.timedOut ? `stopped after ${FILE_DEADLINE_MS / 60000} min` : `ended early (exit ${result.signal || result.code})`;
  } else if ([...tests.values()].some((t) => t.status === 'notrun')) {
    note = 'mocha stopped the run after an uncaught error';
  }
  for (const t of tests.values()) {
    if (t.status === 'notrun') t.error = `not run: ${note}`;
  }
  if (lines.length === 0) {
    tests.set('(the file)', { status: 'fail', count: 1, error: `mocha ran nothing: ${result.output.slice(-2000)}` });
  }
  return { tests, note };
}

// CouchDB's Mango suite: nose2 over src/mango/test, one JUnit XML report.
async function runMango(couchUrl, only) {
  const python = env('MANGO_PYTHON');
  const testsDir = env('MANGO_TESTS');
  const url = new URL(couchUrl);
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'couch-suites-mango-'));
  // The suite writes nothing beside itself, but nose2 keeps caches: run a copy.
  fs.cpSync(testsDir, path.join(work, 'test'), { recursive: true });
  const environment = {
    ...process.env,
    COUCH_HOST: `${url.protocol}//${url.host}`,
    COUCH_USER: decodeURIComponent(url.username),
    COUCH_PASS: decodeURIComponent(url.password),
    PYTHONDONTWRITEBYTECODE: '1',
  };
  const files = fs.readdirSync(path.join(work, 'test')).filter((f) => /^\d.*\.py$/.test(f)).sort()
    .filter((f) => only.length === 0 || only.some((o) => f.includes(o)));
  const byFile = new Map();
  for (const f of files) {
    const started = Date.now();
    const xml = path.join(work, `${f}.xml`);
    const result = await run(python, ['-m', 'nose2', '-s', 'test', '--plugin', 'nose2.plugins.junitxml',
      '--junit-xml', '--junit-xml-path', xml, f.replace(/\.py$/, '')], { cwd: work, env: environment });
    const tests = new Map();
    const text = fs.existsSync(xml) ? fs.readFileSync(xml, 'utf8') : '';
    const re = /<testcase\b([^>]*?)(\/>|>([\s\S]*?)<\/testcase>)/g;
    let m;
    while ((m = re.exec(text))) {
      const attr = (name) => { const a = new RegExp(`(?:^|\\s)${name}="([^"]*)"`).exec(m[1]); return a ? unescapeXml(a[1]) : ''; };
      const body = m[3] || '';
      const title = `${attr('classname').replace(/^.*?\./, '')}.${attr('name')}`;
      let status = 'pass';
      let error;
      if (/<skipped\b/.test(body)) status = 'skip';
      else if (/<(failure|error)\b/.test(body)) {
        status = 'fail';
        // nose2's message is "test failure"; the traceback's last line says what.
        const text = /<(?:failure|error)\b[^>]*>([\s\S]*?)<\/(?:failure|error)>/.exec(body);
        const lines = text ? unescapeXml(text[1]).split('\n').map((l) => l.trim()).filter(Boolean) : [];
        error = (lines[lines.length - 1] || 'failed').slice(0, 500);
      }
      const t = tests.get(title);
      if (!t || status === 'fail') tests.set(title, { status, count: 1, error });
    }
    let note = '';
    if (tests.size === 0) {
      tests.set('(the file)', { status: 'fail', count: 1, error: `nose2 ran nothing: ${result.output.slice(-2000)}` });
    }
    byFile.set(f, { tests, note, ms: Date.now() - started });
  }
  fs.rmSync(work, { recursive: true, force: true });
  return byFile;
}

function unescapeXml(s) {
  return s.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"').replace(/&apos;/g, "'").replace(/&#(\d+);/g, (_, n) => String.fromCharCode(+n)).replace(/&amp;/g, '&');
}

// --- known failures -------------------------------------------------------

// One file per suite: `FILE<TAB>TEST<TAB>REASON` a line; `#` starts a comment.
// A reason that starts with `flaky:` accepts the test passing as well. A
// TEST of `*` stands for every test and hook of FILE (only with `flaky:`:
// for a file that never reaches the server under test).
function readKnown(suite) {
  const file = path.join(HERE, `known-failures-${suite}.txt`);
  const known = new Map();
  if (!fs.existsSync(file)) return known;
  fs.readFileSync(file, 'utf8').split('\n').forEach((line, i) => {
    if (!line.trim() || line.startsWith('#')) return;
    const [f, title, reason] = line.split('\t');
    if (!f || !title || !reason || !reason.trim()) {
      throw new Error(`${file}:${i + 1}: expected FILE<TAB>TEST<TAB>REASON`);
    }
    if (title === '*' && !reason.trim().startsWith('flaky:')) {
      throw new Error(`${file}:${i + 1}: a whole file (TEST *) may only be listed as flaky:`);
    }
    known.set(`${f}\t${title}`, reason.trim());
  });
  return known;
}

// --- main -------------------------------------------------------------------

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const checkKnown = !args.couch;
  let server = null;
  let down = null;
  const cleanup = async () => {
    if (server) await server.stop();
    if (down) down.close();
  };
  const interrupted = (status) => () => {
    if (server) server.kill();
    if (down) down.close();
    process.exit(status);
  };
  process.on('SIGINT', interrupted(130));
  process.on('SIGTERM', interrupted(143));
  recordFile = args.record;
  let passed = 0;
  let failed = 0;
  const problems = [];
  try {
    let couchUrl = args.couch;
    if (!couchUrl) {
      server = await startRhizome();
      couchUrl = server.url;
    }
    console.log(`couch-suites: against ${couchUrl.replace(/\/\/[^@]*@/, '//')}`);
    for (const suite of args.suites) {
      const started = Date.now();
      const known = checkKnown ? readKnown(suite) : new Map();
      const seen = new Set();
      const counts = { pass: 0, fail: 0, known: 0, skip: 0 };
      const suiteRecord = record[suite] = {};
      let byFile;
      if (suite === 'mango') {
        byFile = await runMango(couchUrl, args.files);
      } else {
        const root = env('POUCHDB_SUITE');
        if (suite === 'integration' && !down) down = await startDownServer();
        byFile = new Map();
        for (const file of pouchdbFiles(root, suite)) {
          if (args.files.length && !args.files.some((o) => file.name.includes(o))) continue;
          const t0 = Date.now();
          const r = await runPouchdbFile(root, suite, file, couchUrl);
          r.ms = Date.now() - t0;
          byFile.set(file.name, r);
          printFile(suite, file.name, r, known, counts, seen, problems, suiteRecord);
        }
      }
      if (suite === 'mango') {
        for (const [name, r] of byFile) printFile(suite, name, r, known, counts, seen, problems, suiteRecord);
      }
      // A listed test the run never saw is stale (renamed, removed, or in a
      // file this run skipped with --file).
      if (checkKnown && args.files.length === 0) {
        for (const [key, reason] of known) {
          if (!seen.has(key)) {
            problems.push(`${suite}: listed but not in the suite: ${key.replace('\t', ' :: ')} (${reason})`);
            counts.fail++;
          }
        }
      }
      passed += counts.pass;
      failed += counts.fail;
      console.log(`${suite}: ${counts.pass} passed, ${counts.known} known failures, ${counts.fail} failed unexpectedly, ${counts.skip} skipped (${((Date.now() - started) / 1000).toFixed(0)} s)`);
    }
  } finally {
    await cleanup();
  }
  if (args.record) fs.writeFileSync(args.record, JSON.stringify(record, null, 1));
  for (const p of problems) console.log(`FAIL ${p}`);
  console.log(`couch-suites: ${passed} passed, ${failed} failed`);
  process.exit(failed === 0 ? 0 : 1);
}

// Every result so far, written after each file when --record is given.
const record = {};
let recordFile = null;

function printFile(suite, name, r, known, counts, seen, problems, suiteRecord) {
  const c = { pass: 0, fail: 0, known: 0, skip: 0 };
  let notRun = 0;
  const wholeFile = known.get(`${name}\t*`);
  if (wholeFile !== undefined) seen.add(`${name}\t*`);
  for (const [title, t] of r.tests) {
    const key = `${name}\t${title}`;
    seen.add(key);
    suiteRecord[key] = { status: t.status, error: t.error };
    const listed = known.get(key) ?? wholeFile;
    // A reason starting `flaky:` lists a test that fails only sometimes (a
    // race, a timing window): either outcome is accepted, and counted.
    const flaky = listed !== undefined && listed.startsWith('flaky:');
    if (t.status === 'pass') {
      if (listed !== undefined && !flaky) {
        c.fail++;
        problems.push(`${suite}: listed as failing but passes now: ${name} :: ${title} (${listed})`);
      } else {
        c.pass++;
      }
    } else if (t.status === 'skip') {
      c.skip++;
    } else if (listed !== undefined) {
      c.known++;
    } else {
      c.fail++;
      if (t.status === 'notrun') notRun++;
      else problems.push(`${suite}: ${name} :: ${title}: ${t.error || t.status}`);
    }
  }
  // Tests a stopped run never reached are counted, and named together.
  if (notRun > 0) problems.push(`${suite}: ${name}: ${notRun} tests not run after the failures above (${r.note || 'the run stopped'}); --record FILE lists them`);
  for (const k of Object.keys(c)) counts[k] += c[k];
  if (recordFile) fs.writeFileSync(recordFile, JSON.stringify(record, null, 1));
  const note = r.note ? `; ${r.note}` : '';
  console.log(`  ${suite} ${name}: ${c.pass} passed, ${c.known} known failures, ${c.fail} failed, ${c.skip} skipped (${(r.ms / 1000).toFixed(1)} s${note})`);
}

main().catch((e) => {
  console.error(`couch-suites: ${e.stack || e}`);
  console.log('couch-suites: 0 passed, 1 failed');
  process.exit(1);
});
