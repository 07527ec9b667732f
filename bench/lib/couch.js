// Shared by the Node benchmarks (bench/documents, bench/views): a CouchDB
// server as a base URL and headers, one JSON request to it, and the
// rewriting of a benchmark's section of BENCHMARKS.md. Built-ins only.
'use strict';
const fs = require('fs');

// NAME=URL's URL, whose user:pass@ becomes a Basic authorization header.
function split(url) {
  const u = new URL(url);
  const headers = { 'content-type': 'application/json' };
  if (u.username) headers.authorization = 'Basic ' + Buffer.from(`${decodeURIComponent(u.username)}:${decodeURIComponent(u.password)}`).toString('base64');
  u.username = '';
  u.password = '';
  return { base: u.toString().replace(/\/$/, ''), headers };
}

// One request; the parsed JSON answer. A body that is not a string is sent
// as JSON. Fails on a status of 300 or more (but a DELETE's 404).
async function http(server, method, p, body, headers) {
  const init = { method, headers: { ...server.headers, ...(headers || {}) }, body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body) };
  let r;
  try {
    r = await fetch(server.base + p, init);
  } catch (e) {
    // A pooled keep-alive connection the server closed while idle (node's
    // http server drops them after 5 s): fetch does not retry a POST, so
    // try once more on a new connection.
    r = await fetch(server.base + p, init);
  }
  const text = await r.text();
  if (r.status >= 300 && !(method === 'DELETE' && r.status === 404)) throw new Error(`${method} ${p}: ${r.status} ${text.slice(0, 300)}`);
  return text ? JSON.parse(text) : null;
}

// Replaces the text between `<!-- NAME:begin -->` and `<!-- NAME:end -->`
// in BENCHMARKS (a path) with `md`, or appends `intro` and a new section.
function writeSection(benchmarks, name, intro, md) {
  if (!benchmarks || !fs.existsSync(benchmarks)) return;
  const begin = `<!-- ${name}:begin -->`;
  const end = `<!-- ${name}:end -->`;
  let text = fs.readFileSync(benchmarks, 'utf8');
  const section = `${begin}\n${md}${end}`;
  if (text.includes(begin)) {
    text = text.slice(0, text.indexOf(begin)) + section + text.slice(text.indexOf(end) + end.length);
  } else {
    text += `\n${intro}\n\n${section}\n`;
  }
  fs.writeFileSync(benchmarks, text);
}

// The table of a benchmark: one row per measure, a column per server
// (Rhizome first), then Rhizome's ratio to each peer and the target, a
// ratio to the first peer (the reference, Apache CouchDB when it ran).
// rows: [label, f(result) -> rate, unit, target ratio or null].
function ratioTable(servers, rows, fmt) {
  const [us, ...peers] = servers;
  const head = `| benchmark | ${servers.map((r) => r.name).join(' | ')} | ${peers.map((p) => `vs ${p.name}`).join(' | ')} | target |`;
  let md = `${head}\n|---|${servers.map(() => '---:').join('|')}|${peers.map(() => '---:').join('|')}${peers.length ? '|' : ''}---|\n`;
  for (const [label, f, unit, target] of rows) {
    const ours = f(us);
    const ratios = peers.map((p) => (f(p) > 0 ? ours / f(p) : 0));
    const met = target === null || !peers.length ? '' : `${target}x ${peers[0].name}: ${ratios[0] >= target ? 'met' : '**missed**'}`;
    md += `| ${label} (${unit}) | ${servers.map((r) => fmt(f(r))).join(' | ')} | ${ratios.map((x) => (x ? x.toFixed(1) + 'x' : '')).join(' | ')} | ${met} |\n`;
  }
  return md;
}

module.exports = { split, http, writeSection, ratioTable };
