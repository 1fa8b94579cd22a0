// Browser tests of the gpuplan web page, in real headless Chromium driven by playwright-core.
//
//   GPUPLAN_URL=http://127.0.0.1:18080 node web-tests/page.test.mjs
//
// GPUPLAN_URL          the running `gpuplan serve` (the online tests are skipped without it)
// GPUPLAN_REPORT_HTML  a report written by `gpuplan plan W --html FILE` (the offline test is skipped without it)
// GPUPLAN_ARTIFACTS    where screenshots go (default: web-tests/artifacts/)
// CHROMIUM             the browser (default: /usr/bin/chromium)
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { chromium } from 'playwright-core';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const BASE = (process.env.GPUPLAN_URL || '').replace(/\/+$/, '');
const REPORT_HTML = process.env.GPUPLAN_REPORT_HTML || '';
const ARTIFACTS = path.resolve(process.env.GPUPLAN_ARTIFACTS || path.join(HERE, 'artifacts'));
const EXECUTABLE = process.env.CHROMIUM || '/usr/bin/chromium';
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const VIEWPORT = { width: 1366, height: 768 };
const TIMEOUT = 60_000;

let browser;
before(async () => {
  if (!BASE && !REPORT_HTML) return;
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  browser = await chromium.launch({ executablePath: EXECUTABLE, args: ARGS, headless: true });
});
after(async () => { if (browser) await browser.close(); });

// ---------------------------------------------------------------- helpers

async function api(method, p, body) {
  const res = await fetch(BASE + p, {
    method,
    headers: body === undefined ? {} : { 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  let data = null;
  try { data = JSON.parse(text); } catch { /* not JSON */ }
  return { status: res.status, data, text };
}

// A page that records what goes wrong in it.
async function newPage(context) {
  const page = await context.newPage();
  page.problems = [];
  page.on('pageerror', (e) => page.problems.push('pageerror: ' + e.message));
  page.on('console', (m) => {
    // A 4xx the page asked for on purpose (bad input) is logged by Chromium as a failed resource.
    if (m.type() === 'error' && !/status of 4\d\d/.test(m.text())) page.problems.push('console: ' + m.text());
  });
  return page;
}

// The page has a result, and (online) its form is filled from the catalog.
async function waitSettled(page) {
  await page.waitForFunction(() => ['ready', 'infeasible', 'error'].includes(document.body.dataset.status)
    && (document.body.classList.contains('offline') || document.body.dataset.form === 'ready'), null, { timeout: TIMEOUT });
}

// Runs `action` (which starts a plan) and waits for that run's result.
async function runAndWait(page, action) {
  const prev = Number(await page.evaluate(() => document.body.dataset.run || '0'));
  await action();
  await page.waitForFunction(
    (p) => Number(document.body.dataset.run) > p && ['ready', 'infeasible', 'error'].includes(document.body.dataset.status),
    prev, { timeout: TIMEOUT });
  return page.evaluate(() => document.body.dataset.status);
}

async function waitCurves(page) {
  await page.waitForFunction(() => {
    const s = document.querySelector('#load-chart').dataset.status;
    return s === 'ready' || s === 'error';
  }, null, { timeout: TIMEOUT });
}

async function rows(page) {
  return page.$$eval('#plans-table tbody tr', (trs) => trs.filter((tr) => tr.dataset.rank).map((tr) => ({
    rank: tr.cells[0].textContent.trim(),
    provider: tr.querySelector('.col-provider').textContent.trim(),
    region: tr.querySelector('.col-region .region').textContent.trim(),
    instance: tr.querySelector('.col-instance').textContent.trim(),
    data: { ...tr.dataset },
  })));
}

function assertSameFirstPlan(row, plan, what) {
  assert.ok(row, `${what}: the plans table has a first row`);
  assert.equal(row.rank, '1', `${what}: first cell is the rank`);
  assert.equal(row.provider, plan.provider, `${what}: provider`);
  assert.equal(row.region, plan.region, `${what}: region`);
  assert.equal(row.instance, plan.instance_type, `${what}: instance`);
}

async function paretoRanks(page) {
  return page.$$eval('#pareto-chart .plan-point', (ps) => ps.map((p) => p.getAttribute('data-rank')));
}

// Screenshots start at the top of the page, so the sticky header and form sit where they belong.
async function shot(page, name, fullPage = true) {
  await page.evaluate(() => { window.scrollTo(0, 0); document.activeElement && document.activeElement.blur && document.activeElement.blur(); });
  const form = await page.$('#workload-form');
  if (form) await form.evaluate((f) => { f.scrollTop = 0; });
  await page.mouse.move(0, 0);
  await page.screenshot({ path: path.join(ARTIFACTS, name), fullPage });
}

function workloadFromUrl(url) {
  const m = /#w=([A-Za-z0-9_-]+)/.exec(url);
  assert.ok(m, `the page URL carries the workload: ${url}`);
  return JSON.parse(Buffer.from(m[1], 'base64url').toString('utf8'));
}

async function assertCharts(page, plans, curves, what) {
  // Pareto: one point per plan, with the plans' ranks; the frontier as a line.
  const ranks = await paretoRanks(page);
  assert.equal(ranks.length, plans.length, `${what}: one .plan-point per plan`);
  assert.deepEqual(ranks.map(Number).sort((a, b) => a - b), plans.map((p) => p.rank).sort((a, b) => a - b), `${what}: plan points carry the plans' ranks`);
  assert.ok(await page.locator('#pareto-chart svg .axis-x .tick-label').count() >= 2, `${what}: Pareto x axis has tick labels`);
  assert.ok(await page.locator('#pareto-chart svg .axis-y .tick-label').count() >= 2, `${what}: Pareto y axis has tick labels`);
  // Memory: one stacked bar per plan, weights + KV cache at least, against the GPU's memory.
  assert.equal(await page.locator('#memory-chart .mem-row').count(), plans.length, `${what}: one memory bar per plan`);
  assert.ok(await page.locator('#memory-chart .mem-seg').count() >= 2 * plans.length, `${what}: memory bars are stacked`);
  assert.ok(await page.locator('#memory-chart .mem-capacity').count() >= 1, `${what}: GPU memory drawn`);
  // Latency vs load: two panels (TTFT, TPOT), one curve per plan curve in each.
  if (curves.length) {
    assert.equal(await page.locator('#load-chart svg').count(), 2, `${what}: TTFT and TPOT panels`);
    assert.equal(await page.locator('#load-chart path.curve').count(), 2 * curves.length, `${what}: one curve per plan per panel`);
    const slos = curves.some((c) => c.slo && (c.slo.ttft_ms_p99 != null || c.slo.tpot_ms_p99 != null));
    if (slos) assert.ok(await page.locator('#load-chart .slo-line').count() >= 1, `${what}: SLO drawn as a line`);
  } else {
    assert.ok((await page.locator('#load-chart').textContent()).trim().length > 0, `${what}: load chart says why it is empty`);
  }
}

// ---------------------------------------------------------------- online

test('web page against gpuplan serve', { skip: !BASE && 'GPUPLAN_URL is not set' }, async (t) => {
  const context = await browser.newContext({ viewport: VIEWPORT });
  const page = await newPage(context);
  const examples = (await api('GET', '/v1/examples')).data;
  assert.ok(Array.isArray(examples), 'GET /v1/examples is a list');
  const chat = examples.find((e) => e.name === 'chat-70b');
  assert.ok(chat, 'the examples include chat-70b');
  const regions = (await api('GET', '/v1/catalog/regions')).data;
  assert.ok(Array.isArray(regions) && regions.length, 'GET /v1/catalog/regions is a non-empty list');
  // EU membership: the catalog's `eu` flag where present, else a `geo` of "EU".
  const isEu = (r) => (typeof r.eu === 'boolean' ? r.eu : Array.isArray(r.geo) ? r.geo.includes('EU') : r.geo === 'EU');
  const euRegions = new Set(regions.filter(isEu).map((r) => `${r.provider}/${r.region}`));
  assert.ok(euRegions.size > 0, 'the catalog has EU regions');

  let chatRows;
  await t.test('loads and submits the chat-70b example', async () => {
    const t0 = Date.now();
    await page.goto(BASE + '/', { waitUntil: 'domcontentloaded' });
    await waitSettled(page);
    t.diagnostic(`first result ${Date.now() - t0} ms after navigation`);
    await page.waitForSelector('#workload-form');
    await page.waitForSelector('#example option[value="chat-70b"]', { state: 'attached' });
    await runAndWait(page, () => page.selectOption('#example', 'chat-70b'));
    const status = await runAndWait(page, () => page.click('#submit'));
    assert.equal(status, 'ready', 'the plan request succeeded');
    await page.waitForSelector('#plans-table tbody tr[data-rank]');

    const expected = await api('POST', '/v1/plan', chat.workload);
    assert.equal(expected.status, 200, 'POST /v1/plan chat-70b');
    const plans = expected.data.plans;
    assert.ok(plans.length > 0, 'chat-70b has plans');
    chatRows = await rows(page);
    assert.equal(chatRows.length, plans.length, 'one table row per plan');
    assertSameFirstPlan(chatRows[0], plans[0], 'chat-70b');
    assert.deepEqual(chatRows.map((r) => r.rank), plans.map((p) => String(p.rank)), 'ranks in order');
    // The page sent the example unchanged (the form keeps every field).
    const sent = workloadFromUrl(page.url());
    assert.deepEqual(sent, chat.workload, 'the form round-trips the example unchanged');
    const again = await api('POST', '/v1/plan', sent);
    assert.equal(again.status, 200);
    assert.deepEqual(again.data.plans.map((p) => [p.provider, p.region, p.instance_type]),
      plans.map((p) => [p.provider, p.region, p.instance_type]), 'the workload the page sent plans like the example');

    const curves = (await api('POST', '/v1/plan/curves?top=3', chat.workload)).data;
    assert.ok(curves && Array.isArray(curves.curves), 'POST /v1/plan/curves returns {curves: [...]}');
    await waitCurves(page);
    await assertCharts(page, plans, curves.curves, 'chat-70b');
    assert.equal(await page.locator('#rejections-table tbody tr[data-reason]').count(), Object.keys(expected.data.rejected).length,
      'one rejection row per reason');

    // Explain: the first plan's derivation and launch command.
    await page.waitForSelector('#explain pre.explain-text', { timeout: TIMEOUT });
    assert.match(await page.locator('#explain pre.explain-text').textContent(), /^Plan 1:/);
    assert.equal((await page.locator('#launch-command').textContent()).trim(), plans[0].launch_command);
    assert.equal(await page.locator('#copy-command').count(), 1, 'a copy button');
    await shot(page, 'page.png');
    await shot(page, 'page-viewport.png', false);
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: new URL(BASE).origin });
    await page.click('#copy-command');
    await page.waitForFunction(() => /Copied/.test(document.querySelector('#copy-command').textContent), null, { timeout: 5000 });
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), plans[0].launch_command, 'the copy button copies the command');

  });

  await t.test('clicking a row explains that plan', async () => {
    if (chatRows.length < 2) return;
    await page.click('#plans-table tbody tr[data-rank="2"]');
    await page.waitForFunction(() => /^Plan 2:/.test((document.querySelector('#explain pre.explain-text') || {}).textContent || ''), null, { timeout: TIMEOUT });
    assert.equal(await page.locator('#plans-table tbody tr.selected').getAttribute('data-rank'), '2');
    await page.click('#plans-table tbody tr[data-rank="1"]');
  });

  let euFirst;
  await t.test('geo EU moves every plan to an EU region', async () => {
    await page.selectOption('select#geo', 'EU');
    const status = await runAndWait(page, () => page.click('#submit'));
    assert.equal(status, 'ready', 'the EU workload has plans');
    const euRows = await rows(page);
    assert.ok(euRows.length > 0);
    for (const r of euRows) {
      assert.ok(euRegions.has(`${r.provider}/${r.region}`), `rank ${r.rank}: ${r.provider} ${r.region} is in the EU`);
    }
    assert.ok(chatRows.some((r) => !euRegions.has(`${r.provider}/${r.region}`)), 'without geo, some plans were outside the EU');
    assert.notDeepEqual(euRows.map((r) => r.region), chatRows.map((r) => r.region), 'the region cells changed');
    const sent = workloadFromUrl(page.url());
    assert.deepEqual(sent.constraints.geo, ['EU'], 'the URL carries geo = ["EU"]');
    const expected = await api('POST', '/v1/plan', sent);
    assert.equal(expected.status, 200);
    assertSameFirstPlan(euRows[0], expected.data.plans[0], 'EU');
    assert.equal((await paretoRanks(page)).length, euRows.length, 'EU: one .plan-point per plan');
    euFirst = euRows[0];
    await waitCurves(page);
    await page.waitForFunction(() => /^Plan 1:/.test((document.querySelector('#explain pre.explain-text') || {}).textContent || ''), null, { timeout: TIMEOUT });
    await shot(page, 'page-eu.png');
  });

  await t.test('the share URL reopens and reruns the workload', async () => {
    await page.click('#share');
    await page.waitForFunction(() => /copied|address bar/i.test(document.querySelector('#share').textContent), null, { timeout: 5000 });
    const url = page.url();
    assert.deepEqual(workloadFromUrl(url).constraints.geo, ['EU'], 'the share button puts the form in the URL');
    assert.match(url, /#w=[A-Za-z0-9_-]+$/);
    const other = await newPage(context);
    await other.goto(url, { waitUntil: 'domcontentloaded' });
    await waitSettled(other);
    assert.equal(await other.evaluate(() => document.body.dataset.status), 'ready');
    const first = (await rows(other))[0];
    assert.deepEqual([first.provider, first.region, first.instance], [euFirst.provider, euFirst.region, euFirst.instance], 'same first plan');
    assert.equal(await other.inputValue('select#geo'), 'EU', 'the form is restored');
    assert.equal(await other.inputValue('#f-model'), chat.workload.model.id);
    assert.deepEqual(other.problems, [], 'no errors in the shared page');
    await other.close();
  });

  await t.test('comparing engines names each plan\'s engine', async () => {
    await page.selectOption('#f-engine', 'vllm,sglang,trtllm');
    const status = await runAndWait(page, () => page.click('#submit'));
    assert.equal(status, 'ready');
    const sent = workloadFromUrl(page.url());
    assert.deepEqual(sent.engines, ['vllm', 'sglang', 'trtllm'], 'the URL carries engines');
    assert.equal(sent.engine, undefined);
    const expected = await api('POST', '/v1/plan', sent);
    assert.equal(expected.status, 200);
    const engines = new Set(expected.data.plans.map((p) => p.engine));
    assert.ok(engines.size >= 2, `plans on several engines: ${[...engines]}`);
    const table = await page.locator('#plans-table tbody').textContent();
    for (const e of engines) assert.ok(table.includes(e), `the table names ${e}`);
    await page.selectOption('#f-engine', 'vllm');
  });

  await t.test('bad input shows the message next to the form and marks the field', async () => {
    await page.fill('#f-rps', '-1');
    const status = await runAndWait(page, () => page.click('#submit'));
    assert.equal(status, 'error');
    const err = page.locator('#error');
    assert.ok(await err.isVisible(), '#error is shown');
    assert.match(await err.textContent(), /requests_per_s/);
    const expected = await api('POST', '/v1/plan', workloadFromUrl(page.url()));
    assert.equal(expected.status, 400);
    if (expected.data.error.field === 'traffic.requests_per_s') {
      assert.ok(await page.locator('#f-rps.invalid').count() === 1, 'the named field is highlighted');
    }
  });

  await t.test('an infeasible workload shows why', async () => {
    await page.fill('#f-rps', '20');
    await page.fill('#f-budget', '0.5');
    const status = await runAndWait(page, () => page.click('#submit'));
    assert.equal(status, 'infeasible');
    assert.ok(await page.locator('#error').isVisible());
    assert.equal(await page.locator('#plans-table tbody tr[data-rank]').count(), 0);
    assert.ok(await page.locator('#rejections-table tbody tr[data-reason]').count() > 0, 'rejections listed');
  });

  assert.deepEqual(page.problems, [], 'no script errors on the page');
  await context.close();
});

// ---------------------------------------------------------------- offline

test('offline report renders without network', { skip: !REPORT_HTML && 'GPUPLAN_REPORT_HTML is not set' }, async () => {
  const file = path.resolve(REPORT_HTML);
  const html = fs.readFileSync(file, 'utf8');
  assert.ok(!html.includes('src="/assets/app.js"') && !html.includes('href="/assets/style.css"'), 'assets are inlined');
  const m = /<script id="gpuplan-data" type="application\/json">([\s\S]*?)<\/script>/.exec(html);
  assert.ok(m, 'the report carries its data');
  const data = JSON.parse(m[1]);
  assert.ok(data && data.report, 'the data has a report');
  const plans = data.report.plans || [];
  const curves = Array.isArray(data.curves) ? data.curves : (data.curves && data.curves.curves) || [];

  const context = await browser.newContext({ viewport: VIEWPORT, offline: true });
  const requests = [];
  await context.route('**/*', (route) => {
    const u = route.request().url();
    if (u.startsWith('file:') || u.startsWith('data:')) return route.continue();
    requests.push(u);
    return route.abort();
  });
  const page = await newPage(context);
  await page.goto(pathToFileURL(file).href);
  await page.waitForFunction(() => ['ready', 'infeasible'].includes(document.body.dataset.status), null, { timeout: TIMEOUT });
  assert.deepEqual(requests, [], 'no network requests');
  assert.ok(await page.evaluate(() => document.body.classList.contains('offline')), 'offline mode');
  assert.equal(await page.locator('#workload-form').isVisible(), false, 'the form is hidden');
  const r = await rows(page);
  assert.equal(r.length, plans.length, 'one row per plan');
  if (plans.length) {
    assertSameFirstPlan(r[0], plans[0], 'offline');
    await assertCharts(page, plans, curves, 'offline');
    if ((data.explain || []).some((e) => e.rank === 1)) {
      assert.match(await page.locator('#explain pre.explain-text').textContent(), /^Plan 1:/);
    }
  }
  assert.ok(await page.locator('#rejections-table tbody tr[data-reason]').count() > 0 || !Object.keys(data.report.rejected || {}).length, 'rejections listed');
  await shot(page, 'report.png');
  assert.deepEqual(page.problems, [], 'no script errors in the report');
  await context.close();
});
