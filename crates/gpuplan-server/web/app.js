// gpuplan web page: workload form, ranked plans, charts (hand-drawn SVG), explain.
// Plain ES2020, no dependencies, nothing fetched from outside the server that serves it.
// Two modes:
//   online  — talks to the /v1 API of `gpuplan serve` (same origin);
//   offline — `gpuplan plan W --html report.html` inlines this file and fills the
//             #gpuplan-data script with {workload, report, curves, gpus, explain}; no fetches.
// (This file may be inlined into an HTML script element: never write the closing script tag in it.)
'use strict';

(function () {
  const SVG_NS = 'http://www.w3.org/2000/svg';
  const PRECISIONS = ['fp32', 'bf16', 'fp16', 'fp8', 'int8', 'int4', 'fp4'];
  const PRECISION_SYNONYMS = {
    bfloat16: 'bf16', float16: 'fp16', half: 'fp16', float8: 'fp8', w8a8: 'int8', w8a16: 'int8',
    w4a16: 'int4', awq: 'int4', gptq: 'int4', nvfp4: 'fp4', mxfp4: 'fp4', float32: 'fp32',
  };
  const SERIES = ['#2563eb', '#d97706', '#059669', '#7c3aed', '#db2777', '#0891b2'];
  const MEM_PARTS = [
    { key: 'weights_gib', label: 'Weights', color: '#4f46e5' },
    { key: 'kv_cache_gib', label: 'KV cache', color: '#0ea5e9' },
    { key: 'activations_gib', label: 'Activations', color: '#f59e0b' },
    { key: 'overhead_gib', label: 'Overhead', color: '#94a3b8' },
  ];
  const DEFAULT_EXAMPLE = 'chat-70b';

  const $ = (sel, root = document) => root.querySelector(sel);
  const $$ = (sel, root = document) => Array.from(root.querySelectorAll(sel));

  const state = {
    offline: null,        // the inlined data in offline mode
    examples: [],
    models: [],
    gpus: null,           // Map name -> gpu
    gpusPromise: null,
    providers: [],
    base: null,           // workload the form edits (keeps fields the form does not show)
    workload: null,       // last submitted workload
    report: null,
    curves: null,
    selectedRank: null,
    run: 0,
    controller: null,
    explained: new Map(), // rank -> {run, text}: derivations already fetched for this run
  };

  // ---------------------------------------------------------------- helpers

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    setAttrs(node, attrs);
    appendAll(node, children);
    return node;
  }
  function svg(tag, attrs, ...children) {
    const node = document.createElementNS(SVG_NS, tag);
    setAttrs(node, attrs);
    appendAll(node, children);
    return node;
  }
  function setAttrs(node, attrs) {
    if (!attrs) return;
    for (const [k, v] of Object.entries(attrs)) {
      if (v === null || v === undefined || v === false) continue;
      if (k === 'text') node.textContent = v;
      else if (k === 'class') node.setAttribute('class', v);
      else if (k === 'style') node.style.cssText = v;   // CSSOM: allowed under a strict CSP
      else if (k.startsWith('on') && typeof v === 'function') node.addEventListener(k.slice(2), v);
      else if (k === 'dataset') Object.assign(node.dataset, v);
      else node.setAttribute(k, v === true ? '' : String(v));
    }
  }
  function appendAll(node, children) {
    for (const c of children.flat()) {
      if (c === null || c === undefined || c === false) continue;
      node.appendChild(typeof c === 'string' || typeof c === 'number' ? document.createTextNode(String(c)) : c);
    }
  }
  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); return node; }
  const clone = (x) => (x === undefined ? undefined : JSON.parse(JSON.stringify(x)));
  const isNum = (x) => typeof x === 'number' && Number.isFinite(x);

  function fmtUsd(x) {
    if (!isNum(x)) return '—';
    if (x >= 1000) return '$' + x.toLocaleString('en-US', { maximumFractionDigits: 0 });
    return '$' + x.toFixed(2);
  }
  function fmtMs(x) {
    if (!isNum(x)) return '—';
    if (x >= 10000) return (x / 1000).toFixed(1) + ' s';
    if (x >= 100) return Math.round(x).toLocaleString('en-US') + ' ms';
    return x.toFixed(1) + ' ms';
  }
  function fmtNum(x, digits = 2) {
    if (!isNum(x)) return '—';
    if (Math.abs(x) >= 1000) return x.toLocaleString('en-US', { maximumFractionDigits: 0 });
    return String(+x.toFixed(digits));
  }
  const fmtPct = (x) => (isNum(x) ? Math.round(x * 100) + '%' : '—');
  const fmtGib = (x) => (isNum(x) ? x.toFixed(1) + ' GiB' : '—');

  function b64urlEncode(str) {
    const bytes = new TextEncoder().encode(str);
    let bin = '';
    for (let i = 0; i < bytes.length; i += 0x8000) bin += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
    return btoa(bin).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
  }
  function b64urlDecode(s) {
    let b = s.replace(/-/g, '+').replace(/_/g, '/');
    while (b.length % 4) b += '=';
    const bin = atob(b);
    const bytes = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    return new TextDecoder().decode(bytes);
  }
  function workloadFromHash() {
    const m = /(?:^#|&)w=([A-Za-z0-9_-]+)/.exec(location.hash);
    if (!m) return null;
    try {
      const w = JSON.parse(b64urlDecode(m[1]));
      return w && typeof w === 'object' && !Array.isArray(w) ? w : null;
    } catch (e) {
      return null;
    }
  }
  function shareUrl(workload) {
    return location.origin + location.pathname + location.search + '#w=' + b64urlEncode(JSON.stringify(workload));
  }

  async function copyText(text) {
    try {
      if (navigator.clipboard && window.isSecureContext) {
        await navigator.clipboard.writeText(text);
        return true;
      }
    } catch (e) { /* fall back below */ }
    const ta = el('textarea', { style: 'position:fixed;left:-9999px;top:0', readonly: true });
    ta.value = text;
    document.body.appendChild(ta);
    ta.select();
    let ok = false;
    try { ok = document.execCommand('copy'); } catch (e) { ok = false; }
    ta.remove();
    return ok;
  }
  function flash(button, text) {
    const old = button.dataset.label || button.textContent;
    button.dataset.label = old;
    button.textContent = text;
    clearTimeout(button._t);
    button._t = setTimeout(() => { button.textContent = old; }, 1500);
  }

  async function api(method, path, body, signal) {
    const opts = { method, signal, headers: {} };
    if (body !== undefined) {
      opts.headers['Content-Type'] = 'application/json';
      opts.body = JSON.stringify(body);
    }
    const res = await fetch(path, opts);
    let data = null;
    const text = await res.text();
    try { data = text ? JSON.parse(text) : null; } catch (e) { data = null; }
    return { status: res.status, ok: res.ok, data, text };
  }

  // ---------------------------------------------------------------- tooltip

  const tooltip = () => $('#tooltip');
  function showTip(evt, lines) {
    const tip = tooltip();
    clear(tip);
    lines.forEach((line, i) => tip.appendChild(el(i === 0 ? 'strong' : 'div', { text: line })));
    tip.hidden = false;
    moveTip(evt);
  }
  function moveTip(evt) {
    const tip = tooltip();
    if (tip.hidden) return;
    const pad = 14;
    const w = tip.offsetWidth, h = tip.offsetHeight;
    let x = evt.clientX + pad, y = evt.clientY + pad;
    if (x + w > window.innerWidth - 4) x = evt.clientX - w - pad;
    if (y + h > window.innerHeight - 4) y = evt.clientY - h - pad;
    tip.style.left = Math.max(4, x) + 'px';
    tip.style.top = Math.max(4, y) + 'px';
  }
  function hideTip() { tooltip().hidden = true; }
  function hover(node, linesFn) {
    node.addEventListener('mouseenter', (e) => showTip(e, linesFn()));
    node.addEventListener('mousemove', moveTip);
    node.addEventListener('mouseleave', hideTip);
  }

  // ---------------------------------------------------------------- scales & axes

  function niceStep(span, count) {
    const raw = span / Math.max(1, count);
    const mag = Math.pow(10, Math.floor(Math.log10(raw)));
    const norm = raw / mag;
    const step = norm >= 7.5 ? 10 : norm >= 3.5 ? 5 : norm >= 1.5 ? 2 : 1;
    return step * mag;
  }
  // A linear scale over [lo, hi] widened to nice tick boundaries.
  function linear(lo, hi, r0, r1, ticks = 5, opts = {}) {
    if (!isNum(lo) || !isNum(hi)) { lo = 0; hi = 1; }
    if (hi === lo) { const d = Math.abs(hi) * 0.1 || 1; lo -= d; hi += d; }
    const step = niceStep(hi - lo, ticks);
    const d0 = opts.exactLo ? lo : Math.floor(lo / step) * step;
    const d1 = opts.exactHi ? hi : Math.ceil(hi / step) * step;
    const f = (v) => r0 + ((v - d0) / (d1 - d0)) * (r1 - r0);
    f.domain = [d0, d1];
    f.ticks = [];
    for (let v = Math.ceil(d0 / step) * step; v <= d1 + step * 1e-9; v += step) f.ticks.push(+v.toPrecision(12));
    f.step = step;
    return f;
  }
  // A log scale over [lo, hi] (both > 0), ticks at 1-2-5 steps of each decade.
  function logScale(lo, hi, r0, r1) {
    const l0 = Math.log10(lo), l1 = Math.log10(hi);
    const f = (v) => r0 + ((Math.log10(Math.max(v, lo * 1e-3)) - l0) / (l1 - l0)) * (r1 - r0);
    f.domain = [lo, hi];
    f.log = true;
    const pick = (mults) => {
      const out = [];
      for (let k = Math.floor(l0); k <= Math.ceil(l1); k++) {
        for (const mu of mults) {
          const v = +(mu * Math.pow(10, k)).toPrecision(12);
          if (v >= lo * 0.9999 && v <= hi * 1.0001) out.push(v);
        }
      }
      return out;
    };
    f.ticks = pick([1, 2, 5]);
    if (f.ticks.length < 3) f.ticks = pick([1, 1.5, 2, 3, 4, 5, 6, 7, 8, 9]);
    if (f.ticks.length > 9) f.ticks = pick([1]);
    return f;
  }
  // Linear, or log when the values span more than `ratio`× (a few cheap plans and one huge one).
  function autoScale(values, r0, r1, ticks, ratio = 8) {
    const lo = Math.min(...values), hi = Math.max(...values);
    if (lo > 0 && hi / lo > ratio) return logScale(lo / 1.15, hi * 1.15, r0, r1);
    const pad = (hi - lo) * 0.06 || Math.abs(hi) * 0.1 || 1;
    return linear(Math.max(0, lo - pad), hi + pad, r0, r1, ticks);
  }

  function axisBottom(g, x, y0, fmt, label, width) {
    const axis = svg('g', { class: 'axis axis-x' });
    axis.appendChild(svg('line', { x1: x(x.domain[0]), x2: x(x.domain[1]), y1: y0, y2: y0, class: 'axis-line' }));
    for (const t of x.ticks) {
      axis.appendChild(svg('line', { x1: x(t), x2: x(t), y1: y0, y2: y0 + 4, class: 'tick' }));
      axis.appendChild(svg('text', { x: x(t), y: y0 + 16, 'text-anchor': 'middle', class: 'tick-label', text: fmt(t) }));
    }
    if (label) axis.appendChild(svg('text', { x: x.domain ? (x(x.domain[0]) + x(x.domain[1])) / 2 : width / 2, y: y0 + 32, 'text-anchor': 'middle', class: 'axis-label', text: label }));
    g.appendChild(axis);
  }
  function axisLeft(g, y, x0, x1, fmt, label) {
    const axis = svg('g', { class: 'axis axis-y' });
    for (const t of y.ticks) {
      axis.appendChild(svg('line', { x1: x0, x2: x1, y1: y(t), y2: y(t), class: 'grid' }));
      axis.appendChild(svg('text', { x: x0 - 6, y: y(t) + 4, 'text-anchor': 'end', class: 'tick-label', text: fmt(t) }));
    }
    axis.appendChild(svg('line', { x1: x0, x2: x0, y1: y(y.domain[0]), y2: y(y.domain[1]), class: 'axis-line' }));
    if (label) {
      const cy = (y(y.domain[0]) + y(y.domain[1])) / 2;
      axis.appendChild(svg('text', { x: 14, y: cy, transform: `rotate(-90 14 ${cy})`, 'text-anchor': 'middle', class: 'axis-label', text: label }));
    }
    g.appendChild(axis);
  }
  function chartSvg(width, height, label) {
    return svg('svg', { viewBox: `0 0 ${width} ${height}`, width: '100%', role: 'img', 'aria-label': label, preserveAspectRatio: 'xMidYMid meet', class: 'chart-svg' });
  }
  function emptyChart(container, message) {
    clear(container).appendChild(el('p', { class: 'placeholder', text: message }));
  }
  const msTick = (v) => (v >= 1000 ? +(v / 1000).toFixed(2) + ' s' : +v.toFixed(1) + ' ms');

  function planLabel(p) {
    return `${p.provider} ${p.region} · ${p.instances} × ${p.instance_type}`;
  }
  function planLines(p) {
    const lines = [
      (p.rank ? `#${p.rank} ` : 'Frontier (not in the top list): ') + planLabel(p),
      `${p.replicas} replica(s) of ${p.gpus_per_replica} × ${p.gpu} (TP${p.tp} PP${p.pp}), ${p.precision}${p.engine ? ' on ' + p.engine : ''}${p.spot ? ', spot' : ''}`,
      `${fmtUsd(p.usd_per_hour)}/hour · e2e p99 ${fmtMs(p.e2e_ms_p99)}`,
      `TTFT p99 ${fmtMs(p.ttft_ms_p99)} · TPOT p99 ${fmtMs(p.tpot_ms_p99)} · util ${fmtPct(p.utilization)}`,
    ];
    if (p.location) lines.splice(1, 0, p.location);
    return lines;
  }

  // ---------------------------------------------------------------- form

  function normPrecision(p) {
    const k = String(p).toLowerCase();
    return PRECISION_SYNONYMS[k] || k;
  }
  function listText(v) { return Array.isArray(v) ? v.join(', ') : v ? String(v) : ''; }
  function parseList(s) { return s.split(/[,\s]+/).map((x) => x.trim()).filter(Boolean); }
  function numOrRaw(input) {
    const v = input.value.trim();
    if (v === '') return undefined;
    const n = Number(v);
    return Number.isFinite(n) ? n : v;   // a non-number goes to the server, which names the field
  }
  function setVal(id, v) { const i = $(id); i.value = v === undefined || v === null ? '' : String(v); }

  function buildPrecisionChecks() {
    const box = clear($('#f-precisions'));
    for (const p of PRECISIONS) {
      box.appendChild(el('label', { class: 'check' }, el('input', { type: 'checkbox', value: p, name: 'precision' }), ' ' + p));
    }
  }
  function buildProviderChecks(providers) {
    const box = clear($('#f-providers'));
    for (const p of providers) {
      box.appendChild(el('label', { class: 'check' }, el('input', { type: 'checkbox', value: p, name: 'provider' }), ' ' + p));
    }
  }

  function fillForm(w) {
    state.base = clone(w) || {};
    const m = w.model || {}, t = w.traffic || {}, s = w.slo || {}, c = w.constraints || {};
    setVal('#f-name', w.name);
    setVal('#f-model', m.id);
    updateModelInfo();
    const precs = (m.precisions || ['bf16', 'fp8']).map(normPrecision);
    $$('#f-precisions input').forEach((i) => { i.checked = precs.includes(i.value); });
    fillEngine(w);
    setVal('#f-rps', t.requests_per_s);
    setVal('#f-mean-rps', t.mean_requests_per_s);
    for (const [key, pre] of [['input_tokens', 'in'], ['output_tokens', 'out']]) {
      const d = t[key] || {};
      const hist = Array.isArray(d.histogram);
      setVal(`#f-${pre}-mean`, hist ? '' : d.mean);
      setVal(`#f-${pre}-p99`, hist ? '' : d.p99);
      $(`#f-${pre}-mean`).placeholder = hist ? 'histogram' : '';
    }
    const arr = t.arrival;
    const gamma = arr && typeof arr === 'object' && String(arr.kind).toLowerCase() === 'gamma';
    $('#f-arrival').value = gamma ? 'gamma' : 'poisson';
    setVal('#f-cv', gamma ? arr.cv : '');
    $('#f-cv').disabled = !gamma;
    setVal('#f-ttft', s.ttft_ms_p99);
    setVal('#f-tpot', s.tpot_ms_p99);
    setVal('#f-e2e', s.e2e_ms_p99);
    const provs = (c.providers || []).map((p) => String(p).toLowerCase());
    for (const p of provs) {
      if (!$$('#f-providers input').some((i) => i.value === p)) {
        $('#f-providers').appendChild(el('label', { class: 'check' }, el('input', { type: 'checkbox', value: p, name: 'provider' }), ' ' + p));
      }
    }
    $$('#f-providers input').forEach((i) => { i.checked = provs.includes(i.value); });
    const geo = (c.geo || []).map((g) => String(g).toUpperCase());
    const geoSel = $('#geo');
    $$('option[data-custom]', geoSel).forEach((o) => o.remove());
    const geoValue = geo.join(',');
    if (geoValue && !$$('option', geoSel).some((o) => o.value === geoValue)) {
      geoSel.appendChild(el('option', { value: geoValue, 'data-custom': true, text: geo.join(' + ') }));
    }
    geoSel.value = geoValue;
    setVal('#f-countries', listText(c.countries));
    setVal('#f-gpus', listText(c.gpus));
    setVal('#f-budget', c.max_usd_per_hour);
    setVal('#f-min-replicas', c.min_replicas);
    $('#f-spot').checked = c.spot === true;
    clearFieldErrors();
    $('#workload-json').textContent = JSON.stringify(w, null, 2);
  }

  // The engine select from `engine` (a name or a table with `name`) or `engines`.
  function fillEngine(w) {
    const e = w.engine;
    const named = typeof e === 'string' ? e : (e && typeof e === 'object' ? e.name : undefined);
    const list = Array.isArray(w.engines) ? w.engines : (named ? [named] : ['vllm']);
    const value = list.map((x) => String(x).toLowerCase()).join(',');
    const sel = $('#f-engine');
    $$('option[data-custom]', sel).forEach((o) => o.remove());
    if (!$$('option', sel).some((o) => o.value === value)) {
      sel.appendChild(el('option', { value, 'data-custom': true, text: list.join(' + ') }));
    }
    sel.value = value;
  }

  // The workload's engine fields from the select; vLLM alone stays implicit.
  function readEngine(w) {
    const value = $('#f-engine').value;
    const table = w.engine && typeof w.engine === 'object' ? w.engine : undefined;
    delete w.engines;
    if (table) delete table.name;
    else delete w.engine;
    if (value.includes(',')) {
      w.engines = value.split(',');
    } else if (value !== 'vllm') {
      if (table) table.name = value;
      else w.engine = value;
    }
    if (table && Object.keys(table).length === 0) delete w.engine;
  }

  // Set obj[path] = value, or delete it when value is undefined; drops emptied tables.
  function setPath(obj, path, value) {
    const keys = path.split('.');
    let o = obj;
    for (let i = 0; i < keys.length - 1; i++) {
      if (o[keys[i]] === undefined || o[keys[i]] === null || typeof o[keys[i]] !== 'object') {
        if (value === undefined) return;
        o[keys[i]] = {};
      }
      o = o[keys[i]];
    }
    const last = keys[keys.length - 1];
    if (value === undefined) delete o[last];
    else o[last] = value;
  }
  function dropEmpty(obj, key) {
    if (obj[key] && typeof obj[key] === 'object' && !Array.isArray(obj[key]) && Object.keys(obj[key]).length === 0) delete obj[key];
  }

  function readForm() {
    const w = clone(state.base) || {};
    if (!w.kind) w.kind = 'inference';
    setPath(w, 'name', $('#f-name').value.trim() || undefined);
    setPath(w, 'model.id', $('#f-model').value.trim() || undefined);
    const precs = $$('#f-precisions input:checked').map((i) => i.value);
    // Keep the original spelling of precisions that are still ticked.
    const old = ((state.base && state.base.model && state.base.model.precisions) || []);
    const kept = old.filter((p) => precs.includes(normPrecision(p)));
    const added = precs.filter((p) => !kept.map(normPrecision).includes(p));
    setPath(w, 'model.precisions', kept.concat(added));
    readEngine(w);
    setPath(w, 'traffic.requests_per_s', numOrRaw($('#f-rps')));
    setPath(w, 'traffic.mean_requests_per_s', numOrRaw($('#f-mean-rps')));
    for (const [key, pre] of [['input_tokens', 'in'], ['output_tokens', 'out']]) {
      const mean = numOrRaw($(`#f-${pre}-mean`));
      const p99 = numOrRaw($(`#f-${pre}-p99`));
      const cur = (w.traffic && w.traffic[key]) || {};
      if (Array.isArray(cur.histogram) && mean === undefined && p99 === undefined) continue; // keep the histogram
      const d = {};
      if (mean !== undefined) d.mean = mean;
      if (p99 !== undefined) d.p99 = p99;
      setPath(w, `traffic.${key}`, d);
    }
    if ($('#f-arrival').value === 'gamma') {
      const cv = numOrRaw($('#f-cv'));
      setPath(w, 'traffic.arrival', cv === undefined ? { kind: 'gamma', cv: 1 } : { kind: 'gamma', cv });
    } else {
      const cur = w.traffic && w.traffic.arrival;
      const isPoisson = cur === 'poisson' || (cur && typeof cur === 'object' && String(cur.kind).toLowerCase() === 'poisson');
      if (cur !== undefined && !isPoisson) setPath(w, 'traffic.arrival', 'poisson');
    }
    setPath(w, 'slo.ttft_ms_p99', numOrRaw($('#f-ttft')));
    setPath(w, 'slo.tpot_ms_p99', numOrRaw($('#f-tpot')));
    setPath(w, 'slo.e2e_ms_p99', numOrRaw($('#f-e2e')));
    const ticked = $$('#f-providers input:checked').map((i) => i.value);
    const oldProvs = ((state.base && state.base.constraints && state.base.constraints.providers) || []);
    const keptProvs = oldProvs.filter((p) => ticked.includes(String(p).toLowerCase()));
    const provs = keptProvs.concat(ticked.filter((p) => !keptProvs.map((q) => String(q).toLowerCase()).includes(p)));
    // Every catalog provider ticked is the same as none: no restriction.
    const all = state.providers.length > 0 && state.providers.every((p) => ticked.includes(p));
    setPath(w, 'constraints.providers', provs.length && !all ? provs : undefined);
    const geo = $('#geo').value;
    setPath(w, 'constraints.geo', geo ? geo.split(',') : undefined);
    const countries = parseList($('#f-countries').value).map((c) => c.toUpperCase());
    setPath(w, 'constraints.countries', countries.length ? countries : undefined);
    const gpus = $('#f-gpus').value.split(',').map((g) => g.trim()).filter(Boolean);
    setPath(w, 'constraints.gpus', gpus.length ? gpus : undefined);
    setPath(w, 'constraints.max_usd_per_hour', numOrRaw($('#f-budget')));
    setPath(w, 'constraints.min_replicas', numOrRaw($('#f-min-replicas')));
    const spot = $('#f-spot').checked;
    const hadSpot = state.base && state.base.constraints && state.base.constraints.spot !== undefined;
    setPath(w, 'constraints.spot', spot ? true : hadSpot ? false : undefined);
    dropEmpty(w, 'slo');
    dropEmpty(w, 'constraints');
    return w;
  }

  function updateModelInfo() {
    const box = $('#model-info');
    if (!box) return;
    const q = $('#f-model').value.trim().toLowerCase().replace(/[_ ]/g, '-');
    const m = state.models.find((x) => x.id === q || (x.hf_repo || '').toLowerCase() === q ||
      (x.aliases || []).some((a) => a.toLowerCase().replace(/[_ ]/g, '-') === q));
    if (!m) { box.textContent = q && state.models.length ? 'Not a catalog id: a parametric gpt-h…-l…-a… id, or check the spelling.' : ''; return; }
    const params = m.total_params ? (m.total_params / 1e9).toFixed(1) + 'B params' : '';
    const moe = m.active_params && m.total_params && m.active_params !== m.total_params ? ` (${(m.active_params / 1e9).toFixed(1)}B active)` : '';
    box.textContent = [m.hf_repo, params + moe, 'context ' + (m.max_position_embeddings || '?').toLocaleString('en-US')].filter(Boolean).join(' · ');
  }

  function clearFieldErrors() {
    $$('.invalid, .suspect').forEach((n) => n.classList.remove('invalid', 'suspect'));
  }
  function fieldInput(field) {
    if (!field) return null;
    let f = String(field).replace(/\[\d+\]/g, '');
    while (f) {
      const node = $(`[data-field="${CSS.escape(f)}"]`);
      if (node) return node;
      const dot = f.lastIndexOf('.');
      if (dot < 0) break;
      f = f.slice(0, dot);
    }
    return null;
  }
  function showError(kind, message, field) {
    const box = $('#error');
    clear(box);
    box.className = kind === 'infeasible' ? 'warn' : 'err';
    box.dataset.kind = kind;
    box.appendChild(el('strong', { text: kind === 'infeasible' ? 'No feasible plan. ' : kind === 'bad_input' ? 'Invalid workload. ' : 'Error. ' }));
    box.appendChild(document.createTextNode(message || ''));
    if (field) box.appendChild(el('div', { class: 'err-field', text: 'Field: ' + field }));
    box.hidden = false;
    clearFieldErrors();
    let input = fieldInput(field);
    if (!input && kind === 'infeasible' && message) {
      // The hint names the setting to relax ("raise constraints.max_usd_per_hour: ..."): point at it.
      const m = /\b((?:slo|constraints|traffic|model|engine|pricing)\.[a-z_0-9.]+)/.exec(message);
      const suspect = m ? fieldInput(m[1].replace(/\.$/, '')) : null;
      if (suspect) { suspect.classList.add('suspect'); if (suspect.scrollIntoView) suspect.scrollIntoView({ block: 'nearest' }); }
    }
    if (input) {
      input.classList.add('invalid');
      const fs = input.closest('fieldset');
      if (input.scrollIntoView && fs) input.scrollIntoView({ block: 'nearest' });
    }
  }
  function hideError() {
    const box = $('#error');
    box.hidden = true;
    clear(box);
    clearFieldErrors();
  }

  // ---------------------------------------------------------------- rendering: summary & tables

  function renderSummary(report, workload) {
    const box = clear($('#summary'));
    if (!report) return;
    const t = (workload && workload.traffic) || {};
    const s = (workload && workload.slo) || {};
    const head = el('div', { class: 'summary-main' },
      el('h1', { text: report.workload || (workload && workload.name) || 'workload' }),
      el('span', { class: 'model-chip', text: report.model || '' }));
    const facts = [];
    if (isNum(t.requests_per_s)) facts.push(`peak ${fmtNum(t.requests_per_s)} req/s`);
    const tok = (d) => (d && isNum(d.mean) ? `${fmtNum(d.mean, 0)}${isNum(d.p99) ? '/' + fmtNum(d.p99, 0) : ''}` : d && d.histogram ? 'histogram' : '');
    if (t.input_tokens) facts.push(`in ${tok(t.input_tokens)} tok`);
    if (t.output_tokens) facts.push(`out ${tok(t.output_tokens)} tok`);
    const slos = [['TTFT', s.ttft_ms_p99], ['TPOT', s.tpot_ms_p99], ['e2e', s.e2e_ms_p99]].filter(([, v]) => isNum(v)).map(([k, v]) => `${k} ≤ ${fmtNum(v)} ms`);
    facts.push(slos.length ? 'p99 ' + slos.join(', ') : 'no SLO (batch)');
    const stats = [];
    if (isNum(report.feasible)) stats.push(`${report.feasible.toLocaleString('en-US')} feasible`);
    if (isNum(report.candidates_evaluated)) stats.push(`of ${report.candidates_evaluated.toLocaleString('en-US')} candidates`);
    const v = report.verification;
    if (v && isNum(v.simulated)) stats.push(`${v.simulated} simulated${isNum(v.missed) ? `, ${v.missed} missed an SLO` : ''}`);
    const best = report.plans && report.plans[0];
    box.appendChild(head);
    box.appendChild(el('div', { class: 'summary-facts', text: facts.join(' · ') }));
    if (best) {
      box.appendChild(el('div', { class: 'kpis' },
        kpi('Cheapest', fmtUsd(best.usd_per_hour) + '/h'),
        kpi('Deployment', `${best.instances} × ${best.instance_type}`),
        kpi('Where', `${best.provider} ${best.region}`),
        kpi('TTFT / TPOT p99', `${fmtMs(best.ttft_ms_p99)} / ${fmtMs(best.tpot_ms_p99)}`),
        kpi('Search', isNum(report.feasible) ? `${report.feasible.toLocaleString('en-US')} feasible` : '—', stats.slice(1).join(' · '))));
    } else {
      box.appendChild(el('div', { class: 'summary-facts', text: stats.join(' ') }));
    }
    if (report.hint) box.appendChild(el('div', { class: 'hint', text: 'Hint: ' + report.hint }));
  }
  function kpi(label, value, sub) {
    return el('div', { class: 'kpi' }, el('div', { class: 'kpi-label', text: label }),
      el('div', { class: 'kpi-value', text: value, title: sub ? `${value} ${sub}` : value }),
      sub ? el('div', { class: 'kpi-sub', text: sub, title: sub }) : null);
  }

  function renderPlansTable(report) {
    const tbody = clear($('#plans-table tbody'));
    const plans = (report && report.plans) || [];
    if (!plans.length) {
      tbody.appendChild(el('tr', { class: 'empty' }, el('td', { colspan: 13, text: report ? 'No plan meets the workload — see the rejected candidates below.' : '' })));
      return;
    }
    for (const p of plans) {
      const sim = p.simulated;
      let simCell;
      if (!sim) simCell = el('span', { class: 'sim-none', title: 'not simulated', text: '—' });
      else if (sim.meets_slo) simCell = el('span', { class: 'sim-ok', title: `simulated ${sim.requests} requests: TTFT p99 ${fmtMs(sim.ttft_ms_p99)}, TPOT p99 ${fmtMs(sim.tpot_ms_p99)}, e2e p99 ${fmtMs(sim.e2e_ms_p99)}, goodput ${fmtPct(sim.goodput)}`, text: '✓' });
      else simCell = el('span', { class: 'sim-bad', title: `simulation missed an SLO: TTFT p99 ${fmtMs(sim.ttft_ms_p99)}, TPOT p99 ${fmtMs(sim.tpot_ms_p99)}, e2e p99 ${fmtMs(sim.e2e_ms_p99)}`, text: '✗' });
      const also = (p.also_in_regions || []).length;
      const tr = el('tr', {
        tabindex: 0,
        dataset: { rank: p.rank, provider: p.provider, region: p.region, instance: p.instance_type },
        class: p.rank === state.selectedRank ? 'selected' : null,
        onclick: () => selectPlan(p.rank, true),
        onkeydown: (e) => { if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); selectPlan(p.rank, true); } },
      },
      el('td', { class: 'num rank', text: String(p.rank) }),
      el('td', { class: 'col-provider', text: p.provider }),
      el('td', { class: 'col-region', title: p.location + (also ? ` — same price in ${also} more region(s): ${p.also_in_regions.join(', ')}` : '') },
        el('span', { class: 'region', text: p.region }),
        el('span', { class: 'sub', text: (p.location || '') + (also ? ` +${also}` : '') })),
      el('td', { class: 'col-instance mono', text: p.instance_type }),
      el('td', { class: 'col-gpu', title: `${p.gpus_per_replica} × ${p.gpu} per replica, ${p.gpus_per_instance || '?'} per instance` }, `${p.gpu} ×${p.gpus_per_replica}`),
      el('td', { class: 'col-tppp', text: `TP${p.tp}/PP${p.pp}` }),
      el('td', { class: 'col-precision' }, p.precision, p.spot ? el('span', { class: 'tag spot', text: 'spot' }) : null,
        p.kv_precision && p.kv_precision !== p.precision ? el('span', { class: 'sub', text: `KV ${p.kv_precision}` }) : null,
        p.engine ? el('span', { class: 'sub', text: p.engine }) : null),
      el('td', { class: 'num', text: `${p.replicas} / ${p.instances}` }),
      el('td', { class: 'num strong', text: fmtUsd(p.usd_per_hour) }),
      el('td', { class: 'num', text: fmtMs(p.ttft_ms_p99) }),
      el('td', { class: 'num', text: fmtMs(p.tpot_ms_p99) }),
      el('td', { class: 'num', text: fmtPct(p.utilization) }),
      el('td', { class: 'center' }, simCell));
      tbody.appendChild(tr);
    }
  }

  function renderRejections(report) {
    const tbody = clear($('#rejections-table tbody'));
    const rej = (report && report.rejected) || {};
    const rows = Object.entries(rej).map(([k, v]) => Object.assign({ reason: k }, v)).sort((a, b) => (b.count || 0) - (a.count || 0));
    if (!rows.length) {
      tbody.appendChild(el('tr', { class: 'empty' }, el('td', { colspan: 3, text: report ? 'Nothing was rejected.' : '' })));
      return;
    }
    for (const r of rows) {
      tbody.appendChild(el('tr', { dataset: { reason: r.reason } },
        el('td', {}, el('div', { class: 'reason-desc', text: r.description || r.reason }), el('div', { class: 'sub mono', text: r.reason })),
        el('td', { class: 'num', text: isNum(r.count) ? r.count.toLocaleString('en-US') : '' }),
        el('td', { class: 'example', text: r.example || '' })));
    }
  }

  // ---------------------------------------------------------------- Pareto chart

  function renderPareto(report) {
    const box = $('#pareto-chart');
    const plans = (report && report.plans) || [];
    const frontier = ((report && report.pareto) || []).filter((p) => isNum(p.usd_per_hour) && isNum(p.e2e_ms_p99));
    if (!plans.length && !frontier.length) { emptyChart(box, 'No plans to chart.'); return; }
    const W = 560, H = 330, m = { l: 62, r: 16, t: 14, b: 58 };
    const all = plans.concat(frontier).filter((p) => isNum(p.usd_per_hour) && isNum(p.e2e_ms_p99));
    const xs = all.map((p) => p.usd_per_hour), ys = all.map((p) => p.e2e_ms_p99);
    const x = autoScale(xs, m.l, W - m.r, 6);
    const y = autoScale(ys, H - m.b, m.t, 5);
    const root = chartSvg(W, H, 'Cost per hour against p99 end-to-end latency');
    const g = svg('g');
    root.appendChild(g);
    axisLeft(g, y, m.l, W - m.r, msTick, 'p99 end-to-end latency' + (y.log ? ' (log)' : ''));
    axisBottom(g, x, H - m.b, (v) => '$' + fmtNum(v, 2), 'cost, $ per hour (whole deployment)' + (x.log ? ', log scale' : ''));

    const sorted = frontier.slice().sort((a, b) => a.usd_per_hour - b.usd_per_hour);
    if (sorted.length > 1) {
      // A step line: the best latency available at each budget.
      let d = '';
      sorted.forEach((p, i) => {
        const px = x(p.usd_per_hour), py = y(p.e2e_ms_p99);
        if (i === 0) d += `M${px},${py}`;
        else d += `H${px}V${py}`;
      });
      g.appendChild(svg('path', { d, class: 'frontier-line' }));
    }
    for (const p of sorted) {
      if (p.rank && plans.some((q) => q.rank === p.rank)) continue; // drawn as a plan point below
      const px = x(p.usd_per_hour), py = y(p.e2e_ms_p99);
      const node = svg('path', { d: `M${px},${py - 5}L${px + 5},${py}L${px},${py + 5}L${px - 5},${py}Z`, class: 'frontier-point', 'aria-label': planLines(p).join('; ') });
      hover(node, () => planLines(p));
      g.appendChild(node);
    }
    const onFrontier = new Set(sorted.filter((p) => p.rank).map((p) => p.rank));
    const labels = [];
    // Draw higher ranks first so #1 sits on top.
    for (const p of plans.slice().reverse()) {
      if (!isNum(p.usd_per_hour) || !isNum(p.e2e_ms_p99)) continue;
      const px = x(p.usd_per_hour), py = y(p.e2e_ms_p99);
      const cls = ['plan-point'];
      if (onFrontier.has(p.rank)) cls.push('on-frontier');
      if (p.simulated && p.simulated.meets_slo === false) cls.push('sim-missed');
      if (p.rank === state.selectedRank) cls.push('selected');
      const node = svg('circle', { cx: px, cy: py, r: p.rank === 1 ? 7 : 5.5, class: cls.join(' '), 'data-rank': p.rank, tabindex: 0, 'aria-label': planLines(p).join('; ') });
      node.addEventListener('click', () => selectPlan(p.rank, false));
      node.addEventListener('keydown', (e) => { if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); selectPlan(p.rank, false); } });
      hover(node, () => planLines(p));
      g.appendChild(node);
      if (p.rank <= 3) labels.push({ x: px + 8, y: py - 7, rank: p.rank });
    }
    // Rank labels for the top 3, merged where points coincide ("#1 #2").
    const placed = [];
    for (const l of labels.sort((a, b) => a.rank - b.rank)) {
      const near = placed.find((q) => Math.abs(q.x - l.x) < 14 && Math.abs(q.y - l.y) < 10);
      if (near) near.text += ' #' + l.rank;
      else placed.push({ x: l.x, y: l.y, text: '#' + l.rank });
    }
    for (const l of placed) g.appendChild(svg('text', { x: l.x, y: l.y, class: 'point-label', text: l.text }));
    // Legend
    const lg = svg('g', { class: 'legend', transform: `translate(${m.l + 4},${H - 14})` });
    lg.appendChild(svg('circle', { cx: 5, cy: -4, r: 5, class: 'legend-point' }));
    lg.appendChild(svg('text', { x: 14, y: 0, text: 'ranked plan' }));
    lg.appendChild(svg('circle', { cx: 105, cy: -4, r: 5, class: 'legend-point sim-missed' }));
    lg.appendChild(svg('text', { x: 114, y: 0, text: 'missed in simulation' }));
    lg.appendChild(svg('path', { d: 'M255,-9L260,-4L255,1L250,-4Z', class: 'frontier-point' }));
    lg.appendChild(svg('text', { x: 265, y: 0, text: 'frontier only' }));
    lg.appendChild(svg('line', { x1: 345, x2: 368, y1: -4, y2: -4, class: 'frontier-line' }));
    lg.appendChild(svg('text', { x: 373, y: 0, text: 'Pareto frontier' }));
    root.appendChild(lg);
    clear(box).appendChild(root);
  }

  // ---------------------------------------------------------------- memory chart

  function renderMemory(report, gpus) {
    const box = $('#memory-chart');
    const plans = ((report && report.plans) || []).filter((p) => p.derivation && p.derivation.memory);
    if (!plans.length) { emptyChart(box, 'No plans to chart.'); return; }
    const gpuMem = (p) => {
      const g = gpus && gpus.get(p.gpu);
      return g && isNum(g.memory_gib) ? g.memory_gib : null;
    };
    const totals = plans.map((p) => Math.max(p.derivation.memory.total_gib || 0,
      MEM_PARTS.reduce((s, part) => s + (p.derivation.memory[part.key] || 0), 0), gpuMem(p) || 0));
    const rowH = 24, gap = 6;
    const W = 560, m = { l: 150, r: 16, t: 8, b: 40 };
    const H = m.t + plans.length * (rowH + gap) + m.b;
    const x = linear(0, Math.max(...totals), m.l, W - m.r, 6);
    const root = chartSvg(W, H, 'Memory per GPU by plan');
    const g = svg('g');
    root.appendChild(g);
    const y0 = H - m.b + 4;
    // vertical grid
    for (const t of x.ticks) g.appendChild(svg('line', { x1: x(t), x2: x(t), y1: m.t, y2: y0, class: 'grid' }));
    axisBottom(g, x, y0, (v) => fmtNum(v, 0), 'GiB per GPU');
    plans.forEach((p, i) => {
      const top = m.t + i * (rowH + gap);
      const mem = p.derivation.memory;
      const cap = gpuMem(p);
      const row = svg('g', { class: 'mem-row' + (p.rank === state.selectedRank ? ' selected' : ''), 'data-rank': p.rank });
      row.appendChild(svg('text', { x: m.l - 8, y: top + rowH / 2 + 4, 'text-anchor': 'end', class: 'row-label' },
        svg('tspan', { class: 'row-rank', text: `#${p.rank} ` }), `${p.gpu} ${p.precision}`));
      if (cap) {
        row.appendChild(svg('rect', { x: x(0), y: top, width: x(cap) - x(0), height: rowH, class: 'mem-capacity' }));
        const mu = p.memory_utilization;
        if (isNum(mu) && mu > 0 && mu < 1) {
          row.appendChild(svg('line', { x1: x(cap * mu), x2: x(cap * mu), y1: top - 2, y2: top + rowH + 2, class: 'mem-budget' }));
        }
      }
      let acc = 0;
      for (const part of MEM_PARTS) {
        const v = mem[part.key] || 0;
        if (v <= 0) continue;
        row.appendChild(svg('rect', { x: x(acc), y: top + 3, width: Math.max(0.5, x(acc + v) - x(acc)), height: rowH - 6, fill: part.color, class: 'mem-seg' }));
        acc += v;
      }
      const lines = [
        `#${p.rank} ${p.gpu} · ${p.precision} weights, ${p.kv_precision || ''} KV · TP${p.tp} PP${p.pp}`,
        ...MEM_PARTS.map((part) => `${part.label}: ${fmtGib(mem[part.key])}`),
        `Total: ${fmtGib(mem.total_gib)}` + (cap ? ` of ${fmtGib(cap)} (${fmtPct((mem.total_gib || acc) / cap)})` : ''),
      ];
      if (cap && isNum(p.memory_utilization)) lines.push(`Engine budget (${fmtPct(p.memory_utilization)}): ${fmtGib(cap * p.memory_utilization)}`);
      row.setAttribute('aria-label', lines.join('; '));
      row.appendChild(svg('rect', { x: 0, y: top, width: W, height: rowH, class: 'hit' }));
      hover(row, () => lines);
      row.addEventListener('click', () => selectPlan(p.rank, false));
      g.appendChild(row);
    });
    const legend = el('div', { class: 'html-legend' });
    for (const part of MEM_PARTS) {
      legend.appendChild(el('span', { class: 'legend-item' }, el('span', { class: 'swatch box', style: `background:${part.color}` }), part.label));
    }
    legend.appendChild(el('span', { class: 'legend-item' }, el('span', { class: 'swatch box capacity' }), 'GPU memory'));
    legend.appendChild(el('span', { class: 'legend-item' }, el('span', { class: 'swatch budget' }), 'engine budget (--gpu-memory-utilization)'));
    clear(box).appendChild(root);
    box.appendChild(legend);
  }

  // ---------------------------------------------------------------- latency vs load chart

  function renderLoad(curvesData, workload, status) {
    const box = $('#load-chart');
    box.dataset.status = status || 'ready';
    if (status === 'loading') { emptyChart(box, 'Computing latency curves…'); return; }
    if (status === 'error') { emptyChart(box, 'Latency curves are not available for this workload.'); return; }
    const curves = (Array.isArray(curvesData) ? curvesData : (curvesData && curvesData.curves) || [])
      .filter((c) => c && Array.isArray(c.points) && c.points.length);
    if (!curves.length) { emptyChart(box, 'No latency curves for this workload.'); return; }
    const peak = workload && workload.traffic && isNum(workload.traffic.requests_per_s) ? workload.traffic.requests_per_s : null;
    const wrap = el('div', { class: 'load-panels' });
    const metrics = [
      { key: 'ttft_ms_p99', title: 'TTFT p99', slo: 'ttft_ms_p99' },
      { key: 'tpot_ms_p99', title: 'TPOT p99', slo: 'tpot_ms_p99' },
    ];
    for (const metric of metrics) wrap.appendChild(loadPanel(curves, metric, peak));
    const legend = el('div', { class: 'html-legend' });
    curves.forEach((c, i) => {
      legend.appendChild(el('span', { class: 'legend-item', 'data-rank': c.rank },
        el('span', { class: 'swatch', style: `background:${SERIES[i % SERIES.length]}` }),
        `#${c.rank} ${c.label || ''}` + (isNum(c.capacity_requests_per_s) ? ` — capacity ${fmtNum(c.capacity_requests_per_s, 1)} req/s` : '')
          + (isNum(c.max_requests_per_s) ? `, saturates at ${fmtNum(c.max_requests_per_s, 1)}` : '')));
    });
    const anySlo = curves.some((c) => c.slo && metrics.some((mt) => isNum(c.slo[mt.slo])));
    if (anySlo) legend.appendChild(el('span', { class: 'legend-item' }, el('span', { class: 'swatch dashed' }), 'SLO (p99 target)'));
    if (peak) legend.appendChild(el('span', { class: 'legend-item' }, el('span', { class: 'swatch dotted' }), `peak ${fmtNum(peak)} req/s`));
    clear(box);
    box.appendChild(wrap);
    box.appendChild(legend);
  }

  function loadPanel(curves, metric, peak) {
    const W = 560, H = 270, m = { l: 62, r: 16, t: 22, b: 44 };
    const sloVals = curves.map((c) => c.slo && c.slo[metric.slo]).filter(isNum);
    const slo = sloVals.length ? Math.min(...sloVals) : null;
    const xsAll = curves.flatMap((c) => c.points.map((p) => p.requests_per_s)).filter(isNum);
    const ysAll = curves.flatMap((c) => c.points.map((p) => p[metric.key])).filter(isNum);
    let xMax = Math.max(...xsAll, ...curves.map((c) => c.capacity_requests_per_s).filter(isNum), peak || 0);
    let yMax = Math.max(...ysAll, slo || 0);
    // Latency explodes close to saturation: keep the SLO region (or, with no SLO,
    // the range up to each plan's capacity) readable; the rest is clipped.
    if (slo) yMax = Math.min(yMax, slo * 2.5);
    else {
      const within = curves.flatMap((c) => c.points.filter((p) => !isNum(c.capacity_requests_per_s) || p.requests_per_s <= c.capacity_requests_per_s * 1.0001)
        .map((p) => p[metric.key])).filter(isNum);
      if (within.length) yMax = Math.min(yMax, Math.max(...within) * 2);
    }
    yMax = Math.max(yMax * 1.05, slo ? slo * 1.15 : 0);
    const x = linear(0, xMax || 1, m.l, W - m.r, 6);
    const y = linear(0, yMax || 1, H - m.b, m.t, 5);
    const root = chartSvg(W, H, `${metric.title} against arrival rate`);
    const g = svg('g');
    root.appendChild(g);
    root.appendChild(svg('text', { x: m.l, y: 14, class: 'panel-title', text: metric.title }));
    axisLeft(g, y, m.l, W - m.r, msTick, metric.title);
    axisBottom(g, x, H - m.b, (v) => fmtNum(v, 1), 'arrival rate, requests/s (all replicas)');
    const clipId = 'clip-' + metric.key + '-' + Math.random().toString(36).slice(2, 8);
    root.appendChild(svg('clipPath', { id: clipId }, svg('rect', { x: m.l, y: m.t, width: W - m.l - m.r, height: H - m.t - m.b })));
    const plot = svg('g', { 'clip-path': `url(#${clipId})` });
    g.appendChild(plot);
    if (peak) {
      plot.appendChild(svg('line', { x1: x(peak), x2: x(peak), y1: m.t, y2: H - m.b, class: 'peak-line' }));
    }
    if (slo) {
      plot.appendChild(svg('line', { x1: m.l, x2: W - m.r, y1: y(slo), y2: y(slo), class: 'slo-line' }, svg('title', { text: `SLO: ${metric.title} ≤ ${fmtMs(slo)}` })));
      g.appendChild(svg('text', { x: W - m.r - 4, y: y(slo) - 5, 'text-anchor': 'end', class: 'slo-label', text: `SLO ${fmtMs(slo)}` }));
    }
    curves.forEach((c, i) => {
      const color = SERIES[i % SERIES.length];
      const pts = c.points.filter((p) => isNum(p.requests_per_s) && isNum(p[metric.key])).sort((a, b) => a.requests_per_s - b.requests_per_s);
      if (!pts.length) return;
      const d = pts.map((p, j) => `${j ? 'L' : 'M'}${x(p.requests_per_s).toFixed(1)},${y(p[metric.key]).toFixed(1)}`).join('');
      plot.appendChild(svg('path', { d, class: 'curve', stroke: color, 'data-rank': c.rank }));
      for (const p of pts) {
        const lines = [`#${c.rank} ${c.label || ''}`, `${fmtNum(p.requests_per_s, 2)} req/s · utilization ${fmtPct(p.utilization)}`,
          `TTFT p99 ${fmtMs(p.ttft_ms_p99)} · TPOT p99 ${fmtMs(p.tpot_ms_p99)}`, `e2e p99 ${fmtMs(p.e2e_ms_p99)}`];
        const dot = svg('circle', { cx: x(p.requests_per_s), cy: y(p[metric.key]), r: 3, fill: color, class: 'curve-point', 'aria-label': lines.join('; ') });
        hover(dot, () => lines);
        plot.appendChild(dot);
      }
      if (isNum(c.capacity_requests_per_s)) {
        // Capacity within the SLO: a coloured tick under the axis.
        const cx = x(c.capacity_requests_per_s);
        g.appendChild(svg('line', { x1: cx, x2: cx, y1: H - m.b, y2: H - m.b + 6, stroke: color, 'stroke-width': 2 }));
      }
    });
    return el('div', { class: 'load-panel' }, root);
  }

  // ---------------------------------------------------------------- explain

  function planByRank(rank) {
    return ((state.report && state.report.plans) || []).find((p) => p.rank === rank) || null;
  }

  function selectPlan(rank, scroll) {
    state.selectedRank = rank;
    $$('#plans-table tbody tr').forEach((tr) => tr.classList.toggle('selected', Number(tr.dataset.rank) === rank));
    $$('#pareto-chart .plan-point').forEach((c) => c.classList.toggle('selected', Number(c.getAttribute('data-rank')) === rank));
    $$('#memory-chart .mem-row').forEach((r) => r.classList.toggle('selected', Number(r.getAttribute('data-rank')) === rank));
    loadExplain(rank);
    if (scroll) {
      const ex = $('#explain');
      if (ex && ex.scrollIntoView) ex.closest('.card').scrollIntoView({ behavior: 'smooth', block: 'nearest' });
    }
  }

  async function loadExplain(rank) {
    const box = $('#explain');
    const plan = planByRank(rank);
    if (!plan) { clear(box).appendChild(el('p', { class: 'placeholder', text: 'Select a plan.' })); return; }
    box.dataset.rank = rank;
    if (state.offline) {
      const entry = (state.offline.explain || []).find((e) => e.rank === rank);
      renderExplain(plan, entry ? entry.text : null);
      return;
    }
    const cached = state.explained.get(rank);
    if (cached && cached.run === state.run) { renderExplain(plan, cached.text); return; }
    renderExplain(plan, undefined);
    const run = state.run;
    try {
      const r = await api('POST', `/v1/explain?rank=${encodeURIComponent(rank)}`, state.workload);
      if (r.ok && r.data && run === state.run) state.explained.set(rank, { run, text: r.data.text || '' });
      if (run !== state.run || state.selectedRank !== rank) return;
      if (r.ok && r.data) renderExplain(plan, r.data.text || '');
      else renderExplain(plan, null, (r.data && r.data.error && r.data.error.message) || `HTTP ${r.status}`);
    } catch (e) {
      if (run === state.run && state.selectedRank === rank) renderExplain(plan, null, String(e.message || e));
    }
  }

  function renderExplain(plan, text, error) {
    const box = clear($('#explain'));
    box.dataset.rank = plan.rank;
    box.appendChild(el('div', { class: 'explain-head' },
      el('h3', { text: `Plan ${plan.rank}: ${plan.provider} ${plan.region}${plan.location ? ' (' + plan.location + ')' : ''}, ${plan.instances} × ${plan.instance_type}` }),
      el('span', { class: 'explain-cost', text: fmtUsd(plan.usd_per_hour) + '/h' })));
    if (plan.launch_command) {
      const btn = el('button', { type: 'button', id: 'copy-command', class: 'secondary small', text: 'Copy' });
      btn.addEventListener('click', async () => flash(btn, (await copyText(plan.launch_command)) ? 'Copied ✓' : 'Copy failed'));
      box.appendChild(el('div', { class: 'command' },
        el('div', { class: 'command-head' }, el('span', { text: 'Launch command (one replica)' }), btn),
        el('pre', { class: 'mono', id: 'launch-command', text: plan.launch_command })));
    }
    if (plan.launch_notes && plan.launch_notes.length) {
      box.appendChild(el('ul', { class: 'notes' }, plan.launch_notes.map((n) => el('li', { text: n }))));
    }
    if (text === undefined) box.appendChild(el('p', { class: 'placeholder', text: 'Loading the derivation…' }));
    else if (text === null) box.appendChild(el('p', { class: 'placeholder', text: error ? 'Derivation unavailable: ' + error : 'The derivation of this plan is not included in this report.' }));
    else box.appendChild(el('pre', { class: 'explain-text mono', text: text.replace(/\s+$/, '') }));
  }

  // ---------------------------------------------------------------- running a workload

  function renderReport(report, workload) {
    state.report = report;
    const plans = (report && report.plans) || [];
    if (!plans.some((p) => p.rank === state.selectedRank)) state.selectedRank = plans.length ? plans[0].rank : null;
    renderSummary(report, workload);
    renderPlansTable(report);
    renderRejections(report);
    renderPareto(report);
    renderMemory(report, state.gpus);
    if (state.selectedRank !== null) loadExplain(state.selectedRank);
    else clear($('#explain')).appendChild(el('p', { class: 'placeholder', text: 'No plan to explain.' }));
  }

  function resetResults() {
    state.report = null;
    renderSummary(null);
    clear($('#plans-table tbody'));
    clear($('#rejections-table tbody'));
    emptyChart($('#pareto-chart'), '');
    emptyChart($('#memory-chart'), '');
    emptyChart($('#load-chart'), '');
    clear($('#explain')).appendChild(el('p', { class: 'placeholder', text: 'Select a plan.' }));
  }

  async function runWorkload(workload) {
    if (state.controller) state.controller.abort();
    const controller = new AbortController();
    state.controller = controller;
    const run = ++state.run;
    state.workload = workload;
    document.body.dataset.run = String(run);
    document.body.dataset.status = 'loading';
    $('#submit').disabled = true;
    $('#submit').textContent = 'Planning…';
    $('#workload-json').textContent = JSON.stringify(workload, null, 2);
    if (state.examples.length) $('#example').value = exampleMatching(workload);
    const hash = '#w=' + b64urlEncode(JSON.stringify(workload));
    if (location.hash !== hash) history.replaceState(null, '', hash);
    hideError();
    const done = (status) => {
      if (run !== state.run) return;
      document.body.dataset.status = status;
      $('#submit').disabled = false;
      $('#submit').textContent = 'Plan deployments';
    };
    let r;
    try {
      r = await api('POST', '/v1/plan', workload, controller.signal);
    } catch (e) {
      if (e.name === 'AbortError' || run !== state.run) return;
      showError('network', 'The server did not answer: ' + (e.message || e));
      done('error');
      return;
    }
    if (run !== state.run) return;
    const err = r.data && r.data.error;
    if (r.ok && r.data && Array.isArray(r.data.plans)) {
      renderReport(r.data, workload);
      done('ready');
      if (r.data.plans.length) loadCurves(workload, run, controller.signal);
      else renderLoad(null, workload, 'ready');
      return;
    }
    if (r.status === 422 && err) {
      resetResults();
      if (r.data.report) renderReport(r.data.report, workload);
      renderLoad(null, workload, 'ready');
      showError('infeasible', err.message, err.field);
      done('infeasible');
      return;
    }
    resetResults();
    showError(err ? err.kind : 'http', err ? err.message : `HTTP ${r.status}: ${r.text.slice(0, 300)}`, err && err.field);
    done('error');
  }

  async function loadCurves(workload, run, signal) {
    renderLoad(null, workload, 'loading');
    try {
      const r = await api('POST', '/v1/plan/curves?top=3', workload, signal);
      if (run !== state.run) return;
      if (r.ok && r.data) { state.curves = r.data; renderLoad(r.data, workload, 'ready'); }
      else renderLoad(null, workload, 'error');
    } catch (e) {
      if (e.name !== 'AbortError' && run === state.run) renderLoad(null, workload, 'error');
    }
  }

  // ---------------------------------------------------------------- startup

  function fillExamples(examples, selected) {
    const sel = clear($('#example'));
    sel.appendChild(el('option', { value: '', text: '— custom —' }));
    for (const ex of examples) sel.appendChild(el('option', { value: ex.name, text: ex.name }));
    sel.value = selected || '';
  }

  // JSON with sorted keys, to compare workloads whatever their key order.
  function canonical(v) {
    if (Array.isArray(v)) return '[' + v.map(canonical).join(',') + ']';
    if (v && typeof v === 'object') return '{' + Object.keys(v).sort().map((k) => JSON.stringify(k) + ':' + canonical(v[k])).join(',') + '}';
    return JSON.stringify(v);
  }
  function exampleMatching(w) {
    const s = canonical(w);
    const ex = state.examples.find((e) => canonical(e.workload) === s);
    return ex ? ex.name : '';
  }

  // Event handlers, bound before anything is awaited so that no early click is lost.
  function bindOnline() {
    $('#example').addEventListener('change', () => {
      const ex = state.examples.find((e) => e.name === $('#example').value);
      if (ex) { fillForm(ex.workload); runWorkload(clone(ex.workload)); }
    });
    $('#workload-form').addEventListener('submit', (e) => {
      e.preventDefault();
      runWorkload(readForm());
    });
    $('#workload-form').addEventListener('input', (e) => {
      if (e.target && e.target.classList) e.target.classList.remove('invalid', 'suspect');
      if (e.target && e.target.id === 'f-model') updateModelInfo();
    });
    $('#f-arrival').addEventListener('change', () => { $('#f-cv').disabled = $('#f-arrival').value !== 'gamma'; });
    $('#share').addEventListener('click', async () => {
      const url = shareUrl(readForm());
      history.replaceState(null, '', url);
      flash($('#share'), (await copyText(url)) ? 'Link copied ✓' : 'Link in the address bar');
    });
    window.addEventListener('hashchange', () => {
      const w = workloadFromHash();
      if (w && canonical(w) !== canonical(state.workload)) {
        fillForm(w);
        $('#example').value = exampleMatching(w);
        runWorkload(w);
      }
    });
  }

  async function startOnline() {
    bindOnline();
    buildPrecisionChecks();
    const fromHash = workloadFromHash();
    // The plan is fetched first: with a shared URL it starts before the catalogs arrive.
    if (fromHash) runWorkload(fromHash);
    const get = (p) => api('GET', p).then((r) => (r.ok ? r.data : null)).catch(() => null);
    state.gpusPromise = get('/v1/catalog/gpus').then((g) => {
      state.gpus = new Map((g || []).map((x) => [x.name, x]));
      if (state.report) renderMemory(state.report, state.gpus);
      return state.gpus;
    });
    const regionsPromise = get('/v1/catalog/regions');
    const examples = await get('/v1/examples');
    // The page plans inference services: other kinds (training, fleets) are left to the CLI and the API.
    state.examples = (Array.isArray(examples) ? examples : [])
      .filter((e) => e && e.workload && String(e.workload.kind || 'inference').toLowerCase() === 'inference');
    let initial = fromHash;
    let exName = initial ? exampleMatching(initial) : '';
    if (!initial) {
      const ex = state.examples.find((e) => e.name === DEFAULT_EXAMPLE) || state.examples[0];
      if (ex) { initial = ex.workload; exName = ex.name; }
      // Run the default example as it is, without waiting for the rest of the catalog.
      if (initial) runWorkload(clone(initial));
    }
    fillExamples(state.examples, exName);
    const regions = await regionsPromise;
    const providers = Array.from(new Set((regions || []).map((r) => String(r.provider).toLowerCase()))).sort();
    state.providers = providers;
    buildProviderChecks(providers);
    if (initial) fillForm(initial);
    document.body.dataset.form = 'ready';
    get('/v1/catalog/models').then((models) => {
      state.models = Array.isArray(models) ? models : [];
      const dl = clear($('#model-list'));
      for (const m of state.models) {
        const params = m.total_params ? (m.total_params / 1e9).toFixed(1) + 'B' : '';
        dl.appendChild(el('option', { value: m.id, label: [m.hf_repo, params].filter(Boolean).join(' · ') }));
      }
      updateModelInfo();
    });
  }

  function startOffline(data) {
    state.offline = data;
    document.body.classList.add('offline');
    state.workload = data.workload || null;
    state.gpus = new Map((Array.isArray(data.gpus) ? data.gpus : []).map((x) => [x.name, x]));
    const report = data.report || { plans: [], pareto: [], rejected: {} };
    renderReport(report, data.workload);
    if (!(report.plans || []).length && report.hint) {
      const box = $('#summary');
      box.appendChild(el('div', { class: 'hint', text: 'No feasible plan.' }));
    }
    renderLoad(data.curves, data.workload, 'ready');
    if (data.workload) {
      $('#summary').appendChild(el('details', { class: 'json-preview' }, el('summary', { text: 'Workload' }),
        el('pre', { text: JSON.stringify(data.workload, null, 2) })));
    }
    document.body.dataset.run = '1';
    document.body.dataset.status = (report.plans || []).length ? 'ready' : 'infeasible';
  }

  function start() {
    let data = null;
    const node = document.getElementById('gpuplan-data');
    if (node) {
      try { data = JSON.parse(node.textContent || 'null'); } catch (e) { data = null; }
    }
    if (data && typeof data === 'object') startOffline(data);
    else startOnline();
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
  else start();
})();
