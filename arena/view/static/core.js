// arena view's core: DOM helpers, the data source (the local server, or the blocks of an exported
// file), the router (state lives in the URL's #fragment), keys and live updates. Every string that
// comes from a trace is written with textContent or as a text node, never as markup; the page's
// policy (Trusted Types) makes any string-to-HTML sink throw.
'use strict';
window.AV = (function () {
  const app = document.getElementById('app');
  const crumbs = document.getElementById('crumbs');
  const liveBadge = document.getElementById('live');
  const embedded = document.getElementById('arena-index');
  const LIVE_MS = 1000;

  function el(tag, props, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(props || {})) {
      if (value === undefined || value === null || value === false) continue;
      if (key === 'class') node.className = value;
      else if (key === 'text') node.textContent = value;
      else if (key === 'on') for (const [type, fn] of Object.entries(value)) node.addEventListener(type, fn);
      else if (key === 'href') node.setAttribute('href', '#' + value);
      else if (key === 'url') node.setAttribute('href', value);
      else node.setAttribute(key, String(value));
    }
    for (const child of children.flat()) {
      if (child === null || child === undefined || child === false || child === '') continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  const missing = (x) => x === null || x === undefined || Number.isNaN(x);
  const fmt = (x, digits = 3) => (missing(x) ? '—' : Number(x).toFixed(digits));
  const signed = (x, digits = 3) => (missing(x) ? '—' : (x >= 0 ? '+' : '') + Number(x).toFixed(digits));
  const interval = (lo, hi, sign) => (missing(lo) ? '' : `[${(sign ? signed : fmt)(lo)}, ${(sign ? signed : fmt)(hi)}]`);
  const pct = (x) => (missing(x) ? '—' : `${(100 * x).toFixed(x > 0 && x < 0.01 ? 1 : 0)} %`);
  const count = (x) => (missing(x) ? '—' : x >= 1e6 ? `${(x / 1e6).toFixed(2)}M` : x >= 1e4 ? `${(x / 1e3).toFixed(1)}k` : String(Math.round(x)));
  const money = (x) => (missing(x) ? '—' : `$${x < 1 ? x.toFixed(4) : x.toFixed(2)}`);
  const seconds = (x) => (missing(x) ? '—' : x < 10 ? `${x.toFixed(2)} s` : x < 600 ? `${x.toFixed(1)} s` : `${(x / 60).toFixed(1)} min`);
  function date(epoch) {
    if (missing(epoch)) return '—';
    const d = new Date(epoch * 1000);
    const two = (n) => String(n).padStart(2, '0');
    return `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())} ${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}`;
  }
  // Task names sort as a reader counts: dev#2 before dev#10.
  const collator = new Intl.Collator(undefined, { numeric: true, sensitivity: 'base' });

  // ---- data: the local server, or the blocks of an exported file ----------------------------------
  async function getJSON(url) {
    const response = await fetch(url);
    const body = await response.json().catch(() => ({ error: `HTTP ${response.status}` }));
    if (!response.ok) throw new Error(body.error || `HTTP ${response.status}`);
    return body;
  }

  function bytesOf(block) {
    const binary = atob(block.textContent.trim());
    const bytes = new Uint8Array(binary.length);
    for (let i = 0; i < binary.length; i += 1) bytes[i] = binary.charCodeAt(i);
    return bytes;
  }

  // A block is raw deflate; one with a preset (arena/view/export.py's Packer) continues the
  // preset's stream: inflate both and drop the preset's bytes.
  async function inflate(id) {
    const block = document.getElementById(id);
    if (!block) throw new Error(`${id} is not in this file`);
    const preset = block.dataset.preset ? document.getElementById(block.dataset.preset) : null;
    const parts = preset ? [bytesOf(preset), bytesOf(block)] : [bytesOf(block)];
    const stream = new Blob(parts).stream().pipeThrough(new DecompressionStream('deflate-raw'));
    const bytes = new Uint8Array(await new Response(stream).arrayBuffer());
    return JSON.parse(new TextDecoder().decode(preset ? bytes.subarray(Number(preset.dataset.skip || 0)) : bytes));
  }

  const enc = encodeURIComponent;
  const served = {
    exported: false,
    index: () => getJSON('api/index.json'),
    generation: async () => (await getJSON('api/generation.json')).generation,
    run: (id, start) => getJSON(`api/run.json?run=${enc(id)}&start=${start || 0}`),
    episode: (id, i) => getJSON(`api/episode.json?run=${enc(id)}&i=${i}`),
    raw: async (id, i) => {
      const response = await fetch(`api/raw?run=${enc(id)}&i=${i}`);
      if (!response.ok) throw new Error((await response.json().catch(() => ({}))).error || `HTTP ${response.status}`);
      return response.text();
    },
    rawUrl: (id, i) => `api/raw?run=${enc(id)}&i=${i}`,
    logUrl: (id, n) => `api/log?run=${enc(id)}&n=${n}`,
    search: async (id, q) => (await getJSON(`api/search.json?run=${enc(id)}&q=${enc(q)}`)).hits,
    pairs: async (ids) => (await getJSON(`api/pairs.json?runs=${ids.map(enc).join(',')}`)).pairs,
  };

  function exportSource() {
    const position = (id) => state.index.runs.findIndex((r) => r.id === id);
    const texts = new Map();
    return {
      exported: true,
      index: async () => JSON.parse(embedded.textContent),
      generation: async () => 0,
      run: async (id, start) => {
        const data = await inflate(`run-${position(id)}`);
        return { ...data, start: start || 0, rows: data.rows.slice(start || 0) };
      },
      episode: (id, i) => inflate(`ep-${position(id)}-${i}`),
      raw: async () => null,
      rawUrl: () => null,
      logUrl: () => null,
      // No server to ask: inflate each transcript once and match the same text the server would.
      search: async (id, q) => {
        const needle = q.toLowerCase();
        const run = await AV.loadRun(id);
        const hits = [];
        for (const row of run.rows) {
          const key = `${id}\u0000${row.i}`;
          if (!texts.has(key)) texts.set(key, AV.searchText(row.task, await inflate(`ep-${position(id)}-${row.i}`)));
          const n = needle ? texts.get(key).split(needle).length - 1 : 0;
          if (n) hits.push({ i: row.i, hits: n });
        }
        return hits;
      },
      pairs: async (ids) => state.index.pairs.filter((p) => ids.includes(p.a) && ids.includes(p.b)),
    };
  }

  const source = embedded ? exportSource() : served;
  const state = { index: null, runs: new Map(), generation: 0 };

  async function loadRun(id) {
    let run = state.runs.get(id);
    if (!run) {
      const data = await source.run(id, 0);
      run = { id, ...data };
      state.runs.set(id, run);
    }
    return run;
  }

  // A live run's new rows and fresh summary, appended to what the page holds.
  async function updateRun(id) {
    const run = state.runs.get(id);
    if (!run) return loadRun(id);
    let data = await source.run(id, run.rows.length);
    if (data.count < run.rows.length) {  // the run was read anew (restarted with --clean): take all of it
      data = await source.run(id, 0);
      run.rows = [];
    }
    run.rows.push(...data.rows.filter((row) => row.i >= run.rows.length));
    Object.assign(run, { summary: data.summary, config: data.config, versions: data.versions, logs: data.logs });
    return run;
  }

  // The text a search matches, the same as arena/view/search.py's.
  function searchText(task, page) {
    const parts = [task, page.grade && typeof page.grade === 'object' ? String(page.grade.reason || '') : ''];
    for (const item of page.items || []) {
      parts.push(item.text || '', item.reasoning || '', item.call || '');
      for (const call of item.calls || []) {
        parts.push(call.name, call.text, call.args ? JSON.stringify(call.args) : '');
        for (const v of Object.values(call.args || {})) if (typeof v === 'string') parts.push(v);
      }
      const rewrite = item.rewrite || (item.kind === 'rewrite' ? item : null);
      if (rewrite) parts.push(rewrite.rule, rewrite.replacement);
    }
    for (const e of page.errors || []) parts.push(`${e.type} ${e.message}`);
    return parts.filter(Boolean).join('\n').toLowerCase();
  }

  // ---- the URL: #/path?key=value ------------------------------------------------------------------
  function location_() {
    const hash = location.hash.replace(/^#/, '') || '/';
    const at = hash.indexOf('?');
    const path = at < 0 ? hash : hash.slice(0, at);
    return { path: path.split('/').map((part) => { try { return decodeURIComponent(part); } catch (e) { return part; } }), params: new URLSearchParams(at < 0 ? '' : hash.slice(at + 1)) };
  }

  function link(parts, params) {
    const query = params && [...params.keys()].length ? `?${params.toString()}` : '';
    return '/' + parts.map((p) => enc(p)).join('/') + query;
  }

  // Change the URL's state without a new history entry or a re-render (selection, filters).
  function replaceParams(params) {
    const here = location_();
    history.replaceState(null, '', '#' + link(here.path.filter(Boolean), params));
  }

  function setCrumbs(...parts) {
    crumbs.replaceChildren(...parts.flatMap((part) => [el('span', { class: 'sep', text: ' › ' }), part]));
  }

  const routes = [];
  let page = { key: null, live: null };

  function route(pattern, render) { routes.push([pattern, render]); }

  async function render() {
    const here = location_();
    const path = here.path.filter(Boolean);
    page = { key: null, live: null };
    try {
      for (const [pattern, handler] of routes) {
        const m = pattern(path);
        if (m) { await handler(m, here.params); return; }
      }
      notFound(`no page ${location.hash}`);
    } catch (error) {
      notFound(String(error && error.message ? error.message : error));
    }
  }

  function notFound(message) {
    app.replaceChildren(el('p', { class: 'warn', id: 'problem', text: message }), el('a', { href: '/', text: 'back to the runs' }));
  }

  // Pages set what their keys do (`onKey`) and how they take a live update (`onLive`).
  function setPage(handlers) { Object.assign(page, handlers); }

  function typing(target) {
    return target && (target.tagName === 'INPUT' || target.tagName === 'TEXTAREA' || target.tagName === 'SELECT' || target.isContentEditable);
  }

  document.addEventListener('keydown', (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    if (typing(event.target)) {
      if (event.key === 'Escape') event.target.blur();
      return;
    }
    if (event.key === '/') {
      const box = document.querySelector('[data-search]');
      if (box) { event.preventDefault(); box.focus(); box.select(); }
      return;
    }
    if (page.key && page.key(event.key, event) !== false) event.preventDefault();
  });

  // ---- live: the server's generation changes when a run grows or a new one appears ----------------
  async function poll() {
    try {
      const generation = await source.generation();
      if (generation !== state.generation) {
        state.generation = generation;
        state.index = await source.index();
        for (const id of state.runs.keys()) await updateRun(id);
        if (page.live) await page.live();
      }
      liveBadge.textContent = state.index.runs.some((r) => r.status === 'running') ? '● live' : '';
    } catch (error) {
      liveBadge.textContent = `server unreachable (${error.message})`;
    }
  }

  async function start() {
    try {
      state.index = await source.index();
      state.generation = state.index.generation;
    } catch (error) {
      notFound(`could not load the runs: ${error.message}`);
      return;
    }
    window.addEventListener('hashchange', () => render().then(() => window.scrollTo(0, 0)));
    await render();
    if (!source.exported) setInterval(poll, LIVE_MS);
    else liveBadge.textContent = 'exported file';
  }

  document.addEventListener('DOMContentLoaded', start);

  return {
    app, el, fmt, signed, interval, pct, count, money, seconds, date, collator, source, state, loadRun, updateRun,
    searchText, link, replaceParams, setCrumbs, route, setPage, notFound, location: location_, render,
  };
}());
