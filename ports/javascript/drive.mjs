#!/usr/bin/env node
// Drives fair_share.mjs against a URL: P processes (child_process.fork) x T concurrent loops,
// each process with one FairShare shared by its loops, each loop with its own keep-alive
// connection. Prints one JSON line of counts; exits 0 only if at least one request was answered.
//
//   node ports/javascript/drive.mjs --url http://127.0.0.1:9292/ --processes 5 --threads 5 --seconds 40
//        [--quota Q --period SECS] [--group NAME] [--param name=value ...]
//   node ports/javascript/drive.mjs --via fetch --url ...   # the same through fetch.mjs's wrapper
//   node ports/javascript/drive.mjs --replay ports/scripts/X.json    # {"waits":[...]} in nanoseconds
//   node ports/javascript/drive.mjs --answers ports/answers.json     # {"readings":[...]}: each answer as read
import { fork } from 'node:child_process';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import { fileURLToPath } from 'node:url';
import { FairShare, FOLLOWS, readAnswer, readAnswerExact } from './fair_share.mjs';
import { fairShareFetch } from './fetch.mjs';

const USAGE = 'usage: drive.mjs [--via fetch] --url URL --processes P --threads T --seconds S [--quota Q --period SECS] '
  + '[--group NAME] [--param name=value ...] | drive.mjs --replay SCRIPT.json | drive.mjs --answers FIXTURE.json';
const COUNTS = ['requests', 'ok', 'limited', 'errors', 'transport_errors'];
const MAX = 10000; // processes, and threads per process

function failWith(message) {
  console.error(`drive.mjs: ${message}\n${USAGE}`);
  process.exit(2);
}

function number(flag, text, integer = false) {
  const v = Number(text);
  if (text === '' || !Number.isFinite(v) || (integer && !Number.isInteger(v))) {
    failWith(`${flag} must be a ${integer ? 'whole ' : ''}number (got ${JSON.stringify(text)})`);
  }
  if (!(v > 0)) failWith(`${flag} must be above 0 (got ${text})`);
  return v;
}

function parse(argv) {
  const o = { processes: 1, threads: 1, seconds: 10, params: {}, child: null };
  for (let i = 0; i < argv.length; i += 2) {
    const [flag, value] = [argv[i], argv[i + 1]];
    if (value === undefined) failWith(`${flag} needs a value`);
    if (flag === '--url') o.url = value;
    else if (flag === '--processes' || flag === '--threads') {
      o[flag.slice(2)] = number(flag, value, true);
      if (o[flag.slice(2)] > MAX) failWith(`${flag} must be at most ${MAX} (got ${value})`);
    }
    else if (flag === '--seconds') o.seconds = number(flag, value);
    else if (flag === '--quota' || flag === '--period') o.params[flag.slice(2)] = number(flag, value);
    else if (flag === '--group') o.group = value;
    else if (flag === '--via') {
      if (value !== 'fetch') failWith(`--via takes fetch (got ${JSON.stringify(value)})`);
      o.via = value;
    }
    else if (flag === '--replay') o.replay = value;
    else if (flag === '--answers') o.answers = value;
    else if (flag === '--child') [o.child, o.started] = value.split('@').map(Number);
    else if (flag === '--param') {
      const at = value.indexOf('=');
      if (at < 1) failWith(`--param wants name=value (got ${JSON.stringify(value)})`);
      o.params[value.slice(0, at)] = Number(value.slice(at + 1));
    } else failWith(`unknown flag ${flag}`);
  }
  o.port = o.via ? `javascript-${o.via}` : 'javascript';
  o.group ??= o.port;
  return o;
}

function replay(path) {
  let script;
  try {
    script = JSON.parse(readFileSync(path, 'utf8'));
  } catch (e) {
    failWith(`${path}: ${e.message}`);
  }
  if (!(Number.isInteger(script.threads) && script.threads >= 1 && script.threads <= 1e6)) {
    failWith(`${path}: threads must be a whole number from 1 to 1000000 (got ${JSON.stringify(script.threads)})`);
  }
  // One number every draw returns, or a list the draws go round in order.
  const units = [script.random].flat().map(Number);
  if (units.length === 0 || !units.every(Number.isFinite)) {
    failWith(`${path}: random must be a number or a list of numbers (got ${JSON.stringify(script.random)})`);
  }
  let drawn = 0;
  const draw = () => units[drawn++ % units.length];
  let law;
  try {
    law = new FairShare(script.threads, script.params ?? {}, { random: draw });
  } catch (e) {
    failWith(`${path}: ${e.message}`);
  }
  const waits = [];
  const uint = (e, k) => (Number.isSafeInteger(e[k]) && e[k] >= 0 ? e[k]
    : failWith(`${path}: ${k} is not a whole number: ${JSON.stringify(e)}`));
  for (const e of script.events ?? []) {
    if (e.do === 'wait') waits.push(law.waitNs(uint(e, 'thread'), uint(e, 'at')));
    else if (e.do === 'answer') {
      law.observeNs(uint(e, 'thread'), uint(e, 'at'), uint(e, 'status'), e.headers ?? [], uint(e, 'latency'), uint(e, 'unix'));
    } else failWith(`${path}: an event does ${JSON.stringify(e.do)}, not wait or answer`);
  }
  console.log(JSON.stringify({ waits }));
}

// Every answer of a fixture (ports/answers.json) as the port reads it: one JSON line. The wall
// clock, Unix nanoseconds past what a Number holds exactly, is read as a BigInt from the text.
function answers(path) {
  let cases;
  try {
    cases = JSON.parse(readFileSync(path, 'utf8').replace(/"wall"\s*:\s*(\d+)/g, '"wall":"$1"')).answers;
  } catch (e) {
    failWith(`${path}: ${e.message}`);
  }
  if (!Array.isArray(cases)) failWith(`${path}: no list of answers`);
  const big = (v) => (v === null ? 'null' : String(v));
  const readings = cases.map((c) => {
    const a = readAnswerExact(c.status, c.headers, BigInt(c.wall));
    const policy = a.quota === null ? 'null' : `{"limit":${a.quota[0]},"window":${a.quota[1]}}`;
    return `{"status":${JSON.stringify(a.status)},"remaining":${big(a.remaining)},"limit":${big(a.limit)},`
      + `"retry_after":${big(a.retryAfter)},"policy":${policy},"reset":${big(a.reset)}}`;
  });
  console.log(`{"readings":[${readings.join(',')}]}`);
}

const mono = () => Number(process.hrtime.bigint());
const sleep = (ns) => new Promise((done) => { setTimeout(done, ns / 1e6); });

// One request: [status, [name, value] pairs], or null when no answer came.
function get(url, agent, headers) {
  const lib = url.protocol === 'https:' ? https : http;
  return new Promise((done) => {
    const req = lib.get(url, { agent, headers, timeout: 30000 }, (res) => {
      const pairs = [];
      for (let i = 0; i < res.rawHeaders.length; i += 2) pairs.push([res.rawHeaders[i], res.rawHeaders[i + 1]]);
      res.on('data', () => {});
      res.on('end', () => done([res.statusCode, pairs]));
      res.on('error', () => done(null));
    });
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.on('error', () => done(null));
  });
}

// One loop until the deadline; its counts.
async function runThread(o, url, law, proc, thread, epoch, stop) {
  const counts = Object.fromEntries(COUNTS.map((k) => [k, 0]));
  const agent = new (url.protocol === 'https:' ? https : http).Agent({ keepAlive: true, maxSockets: 1 });
  const headers = { 'X-Client-Id': `${o.group}/p${proc}/t${thread}` };
  for (let now = mono() - epoch; now < stop; now = mono() - epoch) {
    const d = law.waitNs(thread, now);
    if (d > 0) {
      await sleep(Math.min(d, stop - now));
      continue;
    }
    const sent = mono();
    const got = await get(url, agent, headers);
    const answered = mono();
    if (got === null) {
      counts.transport_errors += 1;
      law.observeNs(thread, answered - epoch, null, [], answered - sent);
      continue;
    }
    const status = law.observeNs(thread, answered - epoch, got[0], got[1], answered - sent);
    counts.requests += 1;
    counts[status === 'ok' ? 'ok' : status === 'limited' ? 'limited' : 'errors'] += 1;
  }
  agent.destroy();
  return counts;
}

// One loop through fetch.mjs's wrapper, which picks the law's thread and waits itself: the loop
// only sends (on fetch's own keep-alive connections) until the deadline.
async function runFetchThread(o, url, get, proc, thread, epoch, stop) {
  const counts = Object.fromEntries(COUNTS.map((k) => [k, 0]));
  const headers = { 'X-Client-Id': `${o.group}/p${proc}/t${thread}` };
  while (mono() - epoch < stop) {
    let res;
    try {
      res = await get(url, { headers, signal: AbortSignal.timeout(30000) });
    } catch {
      counts.transport_errors += 1;
      continue;
    }
    counts.requests += 1;
    const status = readAnswer(res.status, res.headers, 0).status;
    counts[status === 'ok' ? 'ok' : status === 'limited' ? 'limited' : 'errors'] += 1;
    await res.arrayBuffer().catch(() => {});
  }
  return counts;
}

async function runProcess(o) {
  const url = new URL(o.url);
  const law = new FairShare(o.threads, o.params);
  const epoch = mono();
  // The seconds count from the parent's start: a child of Node takes a few tenths to start.
  const stop = Math.round(o.seconds * 1e9) - (Date.now() - o.started) * 1e6;
  const loop = o.via ? (t) => runFetchThread(o, url, fairShareFetch(law), o.child, t, epoch, stop)
    : (t) => runThread(o, url, law, o.child, t, epoch, stop);
  const all = await Promise.all(Array.from({ length: o.threads }, (_, t) => loop(t)));
  return Object.fromEntries(COUNTS.map((k) => [k, all.reduce((sum, c) => sum + c[k], 0)]));
}

const o = parse(process.argv.slice(2));
if (o.replay) {
  replay(o.replay);
} else if (o.answers) {
  answers(o.answers);
} else if (o.child !== null) {
  process.send(await runProcess(o), () => process.disconnect());
} else {
  if (!o.url) failWith('--url is required');
  try {
    if (!['http:', 'https:'].includes(new URL(o.url).protocol)) failWith(`--url must be http:// or https:// (got ${o.url})`);
    new FairShare(o.threads, o.params); // eslint-disable-line no-new
  } catch (e) {
    failWith(e.message);
  }
  const self = fileURLToPath(import.meta.url);
  const started = Date.now();
  const total = Object.fromEntries(COUNTS.map((k) => [k, 0]));
  await Promise.all(Array.from({ length: o.processes }, (_, p) => new Promise((done) => {
    const child = fork(self, [...process.argv.slice(2), '--child', `${p}@${started}`]);
    child.on('message', (counts) => { for (const k of COUNTS) total[k] += counts[k] ?? 0; });
    child.on('exit', done);
  })));
  console.log(JSON.stringify({ port: o.port, follows: FOLLOWS, processes: o.processes, threads: o.threads, ...total }));
  process.exit(total.requests > 0 ? 0 : 1);
}
