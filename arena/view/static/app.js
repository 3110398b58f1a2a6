// arena view's front end: runs, episodes, one episode, compare. Plain DOM, no dependencies.
// Every string that comes from a trace is written with textContent or as a text node, never as
// markup; the page's policy (Trusted Types) makes any string-to-HTML sink throw.
'use strict';
(function () {
  const app = document.getElementById('app');
  const crumbs = document.getElementById('crumbs');
  const embedded = document.getElementById('arena-index');
  const LONG = 1500;
  let index = null;
  const tableState = {};

  function el(tag, props, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(props || {})) {
      if (value === undefined || value === null) continue;
      if (key === 'class') node.className = value;
      else if (key === 'text') node.textContent = value;
      else if (key === 'on') for (const [type, fn] of Object.entries(value)) node.addEventListener(type, fn);
      else if (key === 'href') node.setAttribute('href', '#' + value);
      else node.setAttribute(key, String(value));
    }
    for (const child of children) {
      if (child === null || child === undefined || child === false) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  const fmt = (x, digits = 3) => (x === null || x === undefined || Number.isNaN(x) ? '—' : Number(x).toFixed(digits));
  const signed = (x) => (x === null || x === undefined ? '—' : (x >= 0 ? '+' : '') + Number(x).toFixed(3));
  const interval = (lo, hi) => (lo === null || lo === undefined ? '' : `[${fmt(lo)}, ${fmt(hi)}]`);

  async function loadIndex() {
    if (embedded) return JSON.parse(embedded.textContent);
    const response = await fetch('api/index.json');
    if (!response.ok) throw new Error(`index: HTTP ${response.status}`);
    return response.json();
  }

  async function loadEpisode(run, i) {
    if (embedded) {
      const block = document.getElementById(`ep-${run}-${i}`);
      if (!block) throw new Error(`episode ${i} of run ${run} is not in this file`);
      return JSON.parse(block.textContent);
    }
    const response = await fetch(`api/episode/${run}/${i}.json`);
    if (!response.ok) throw new Error(`episode ${i} of run ${run}: HTTP ${response.status}`);
    return response.json();
  }

  function setCrumbs(...parts) {
    crumbs.replaceChildren(...parts.flatMap((part) => [el('span', { class: 'sep', text: ' › ' }), part]));
  }

  function longText(text, cls) {
    const value = text === null || text === undefined ? '' : String(text);
    if (value.length <= LONG && value.split('\n').length <= 40) return el('pre', { class: cls, text: value });
    const head = value.slice(0, LONG).split('\n').slice(0, 40).join('\n');
    const full = el('details', { class: 'long' }, el('summary', { text: `show all (${value.length} characters)` }),
      el('pre', { class: cls, text: value }));
    return el('div', {}, el('pre', { class: cls + ' head', text: head + '\n…' }), full);
  }

  function kv(object) {
    const list = el('dl', { class: 'kv' });
    for (const [key, value] of Object.entries(object || {})) {
      list.append(el('dt', { text: key }), el('dd', { text: typeof value === 'object' ? JSON.stringify(value) : String(value) }));
    }
    return list;
  }

  // ---- runs page -----------------------------------------------------------------------------
  function runsPage() {
    setCrumbs(el('span', { text: 'runs' }));
    const selected = new Set();
    const compareButton = el('button', { id: 'compare-selected', disabled: 'disabled', text: 'compare selected runs',
      on: { click: () => { location.hash = '#/compare/' + [...selected].sort((a, b) => a - b).join(','); } } });
    const header = ['', 'run', 'environment', 'harness', 'model / policy', 'split', 'episodes', 'tasks', 'mean ± 95 %', 'interval',
      'failed', 'retries', 'rewrites', 'denials', 'wall s'];
    const body = el('tbody');
    for (const run of index.runs) {
      const box = el('input', { type: 'checkbox', 'data-run': run.id, on: { change: (event) => {
        if (event.target.checked) selected.add(run.id); else selected.delete(run.id);
        if (selected.size >= 2) compareButton.removeAttribute('disabled'); else compareButton.setAttribute('disabled', 'disabled');
      } } });
      body.append(el('tr', { class: run.failures ? 'bad' : '' },
        el('td', {}, box), el('td', {}, el('a', { href: `/run/${run.id}`, class: 'run-link', text: run.name })),
        el('td', { text: run.env }), el('td', { text: run.harness }), el('td', { text: run.policy || run.model }),
        el('td', { text: run.split }), el('td', { class: 'n', text: run.count }), el('td', { class: 'n', text: run.tasks }),
        el('td', { class: 'n', text: run.ci }), el('td', { class: 'n', text: interval(run.low, run.high) }),
        el('td', { class: 'n', text: run.failures }), el('td', { class: 'n', text: run.retries }),
        el('td', { class: 'n', text: run.rewrites }), el('td', { class: 'n', text: run.denials }),
        el('td', { class: 'n', text: run.wall === null ? '—' : fmt(run.wall, 1) })));
    }
    const parts = [el('h1', { text: `${index.runs.length} run(s)` }),
      el('table', { id: 'runs', class: 'grid' }, el('thead', {}, el('tr', {}, ...header.map((h) => el('th', { text: h })))), body),
      el('p', {}, compareButton, el('span', { class: 'note', text: ' 95 % intervals are clustered by task (CR1 standard error, t with tasks − 1 df).' }))];
    for (const run of index.runs) if (run.warning) parts.push(el('p', { class: 'warn', text: `${run.name}: ${run.warning}` }));
    for (const probe of index.probes) parts.push(probeSection(probe));
    app.replaceChildren(...parts);
  }

  const FRACTIONS = new Set(['mean', 'ci95', 'min', 'max', 'turns', 'budget_used']);

  function probeSection(probe) {
    const verdict = probe.error ? probe.error : !probe.complete ? 'incomplete (still running or interrupted)' : probe.passed ? 'gate passed' : 'GATE FAILED';
    const section = el('section', { class: 'probe' }, el('h2', { text: `probe ${probe.name}: ${verdict}` }),
      el('p', { class: 'note', text: `${probe.harness} · ${probe.tasks} ${probe.split} tasks per policy` }));
    if (probe.failures.length) {
      section.append(el('ul', { class: 'failures' }, ...probe.failures.map((f) => el('li', {}, el('b', { text: `[${f.env}] ${f.rule}` }), ': ', f.detail))));
    }
    const cols = ['env', 'policy', 'role', 'mean', 'ci95', 'min', 'max', 'turns', 'budget_used', 'rewrites', 'retries', 'failed'];
    section.append(el('table', { class: 'grid' }, el('thead', {}, el('tr', {}, ...cols.map((c) => el('th', { text: c === 'ci95' ? '± 95 %' : c })))),
      el('tbody', {}, ...probe.scores.map((s) => el('tr', {}, ...cols.map((c) => el('td', { class: typeof s[c] === 'number' ? 'n' : '',
        text: s[c] === null || s[c] === undefined ? (c === 'ci95' ? '?' : '—') : FRACTIONS.has(c) ? fmt(s[c], c === 'turns' || c === 'budget_used' ? 1 : 3) : String(s[c]) })))))));
    return section;
  }

  // ---- episodes table --------------------------------------------------------------------------
  const COLUMNS = [
    { key: 'i', label: '#', num: true },
    { key: 'task', label: 'task' },
    { key: 'reward', label: 'reward', num: true, show: (r) => fmt(r.reward) },
    { key: 'reason', label: 'grader reason' },
    { key: 'parts', label: 'score parts', show: (r) => Object.entries(r.parts).map(([k, v]) => `${k}=${typeof v === 'number' ? +v.toFixed(3) : v}`).join(' ') },
    { key: 'stop', label: 'stop' },
    { key: 'turns', label: 'turns', num: true },
    { key: 'used', label: 'budget used', num: true, show: (r) => (r.used === null ? '—' : `${r.used}${r.budget ? ` of ${r.budget}` : ''} ${r.used_name.replace(/_used$/, '')}`) },
    { key: 'retries', label: 'retries', num: true },
    { key: 'errors', label: 'errors', num: true, show: (r) => (r.errors ? `${r.errors}: ${r.error}` : '0') },
    { key: 'rewrites', label: 'rewrites', num: true, show: (r) => (r.rewrites ? `${r.rewrites} (${r.denials} denied)` : '0') },
    { key: 'wall', label: 'wall s', num: true, show: (r) => fmt(r.wall, 1) },
  ];
  const shown = (column, row) => (column.show ? column.show(row) : String(row[column.key] ?? ''));

  function matches(filter, column, row) {
    if (!filter) return true;
    const numeric = /^\s*(<=|>=|<|>|=)\s*(-?[\d.]+)\s*$/.exec(filter);
    if (numeric && column.num) {
      const value = Number(row[column.key]);
      const bound = Number(numeric[2]);
      return { '<': value < bound, '<=': value <= bound, '>': value > bound, '>=': value >= bound, '=': value === bound }[numeric[1]];
    }
    return shown(column, row).toLowerCase().includes(filter.toLowerCase());
  }

  function episodesPage(runId) {
    const run = index.runs[runId];
    if (!run) return notFound(`no run ${runId}`);
    setCrumbs(el('a', { href: `/run/${runId}`, text: run.name }));
    const state = tableState[runId] || (tableState[runId] = { sort: 'i', desc: false, filters: {} });
    for (const row of run.episodes) row.budget = run.budget;
    const tbody = el('tbody');
    const count = el('span', { class: 'note' });

    function render() {
      const column = COLUMNS.find((c) => c.key === state.sort);
      const rows = run.episodes.filter((row) => COLUMNS.every((c) => matches(state.filters[c.key], c, row)));
      rows.sort((a, b) => {
        const x = column.num ? Number(a[column.key] ?? -Infinity) : shown(column, a);
        const y = column.num ? Number(b[column.key] ?? -Infinity) : shown(column, b);
        return (x < y ? -1 : x > y ? 1 : a.i - b.i) * (state.desc ? -1 : 1);
      });
      // The first screenful at once, the rest in chunks between frames: a big run is readable
      // before its last row is built.
      const generation = (state.generation = (state.generation || 0) + 1);
      tbody.replaceChildren();
      count.textContent = ` ${rows.length} of ${run.episodes.length} episodes shown`;
      const chunk = (start, size) => {
        if (generation !== state.generation) return;
        const fragment = document.createDocumentFragment();
        for (const row of rows.slice(start, start + size)) fragment.append(rowElement(row));
        tbody.append(fragment);
        if (start === 0) performance.mark('arena:rows-first');
        if (start + size < rows.length) requestAnimationFrame(() => chunk(start + size, 500));
        else performance.mark('arena:rows-all');
      };
      chunk(0, 60);
    }

    function rowElement(row) {
      const tr = el('tr', { class: row.failed ? 'bad' : row.rewrites ? 'rewritten' : '', 'data-episode': row.i });
      for (const c of COLUMNS) {
        const text = shown(c, row);
        const td = document.createElement('td');
        if (c.key === 'task') td.append(el('a', { href: `/run/${runId}/ep/${row.i}`, text }));
        else { td.textContent = text; td.title = text; if (c.num) td.className = 'n'; }
        tr.append(td);
      }
      return tr;
    }

    const heads = COLUMNS.map((c) => el('th', { class: 'sortable', 'data-key': c.key, text: c.label + (state.sort === c.key ? (state.desc ? ' ▼' : ' ▲') : ''),
      on: { click: () => { state.desc = state.sort === c.key ? !state.desc : false; state.sort = c.key; episodesPage(runId); } } }));
    const filters = COLUMNS.map((c) => el('th', {}, el('input', { class: 'filter', 'data-key': c.key, placeholder: c.num ? '>0.5' : 'filter',
      value: state.filters[c.key] || '', on: { input: (event) => { state.filters[c.key] = event.target.value; render(); } } })));
    app.replaceChildren(
      el('h1', { text: run.name }),
      el('p', {}, `${run.env} · ${run.harness} · ${run.policy || run.model} · ${run.split} — mean ${run.ci} ${interval(run.low, run.high)} over ${run.count} episodes, ${run.tasks} tasks; `,
        `${run.failures} failed, ${run.retries} retried, ${run.rewrites} rewritten, ${run.denials} denied`, count),
      el('table', { id: 'episodes', class: 'grid' }, el('thead', {}, el('tr', {}, ...heads), el('tr', { class: 'filters' }, ...filters)), tbody));
    render();
  }

  // ---- one episode -----------------------------------------------------------------------------
  async function episodePage(runId, i) {
    const run = index.runs[runId];
    if (!run || !run.episodes[i]) return notFound(`no episode ${i} in run ${runId}`);
    setCrumbs(el('a', { href: `/run/${runId}`, text: run.name }), el('span', { text: `episode ${i}` }));
    app.replaceChildren(el('p', { text: 'loading the transcript…' }));
    const data = await loadEpisode(runId, i);
    const row = data.summary;
    const nav = el('p', { class: 'nav' },
      i > 0 ? el('a', { href: `/run/${runId}/ep/${i - 1}`, text: '← previous' }) : '', ' ',
      i + 1 < run.episodes.length ? el('a', { href: `/run/${runId}/ep/${i + 1}`, text: 'next →' }) : '');
    const parts = [nav, el('h1', {}, 'task ', el('span', { id: 'task-name', text: row.task })),
      el('p', { id: 'verdict', class: row.failed ? 'bad' : '' }, `reward ${fmt(row.reward)} · stop ${row.stop || '—'} · ${row.turns} turns · ${data.model_calls} model calls`
        + (row.failed ? ' · FAILED' : '') + (row.retries ? ` · ${row.retries} retried` : ''))];
    parts.push(el('section', { class: 'grade' }, el('h2', { text: 'grade' }),
      el('p', { class: 'reason', text: (data.grade && data.grade.reason) || '(no reason recorded)' }), kv(data.grade || {})));
    parts.push(el('section', {}, el('h2', { text: 'transcript' }), el('ol', { id: 'transcript', class: 'transcript' }, ...data.items.map(item))));
    parts.push(el('section', {}, el('h2', { text: 'submission' }), longText(JSON.stringify(data.submission, null, 1), 'json')));
    if (data.errors.length) {
      parts.push(el('section', { class: 'errors' }, el('h2', { text: 'errors' }), ...data.errors.map((e) => el('div', { class: 'error' },
        el('b', { text: e.type }), ' ', e.message, e.traceback ? el('details', {}, el('summary', { text: 'traceback' }), el('pre', { text: e.traceback })) : ''))));
    }
    parts.push(el('section', {}, el('h2', { text: 'timing (seconds)' }), el('table', { class: 'grid timing' },
      el('tbody', {}, ...data.timing.map((p) => el('tr', {}, el('td', { text: p.phase }), el('td', { class: 'n', text: fmt(p.seconds, 2) })))))));
    parts.push(el('section', {}, el('h2', { text: 'rewards and metrics' }), kv({ ...data.metrics, ...Object.fromEntries(Object.entries(data.rewards).map(([k, v]) => [`reward ${k}`, v])) })));
    parts.push(el('details', {}, el('summary', { text: 'task data' }), longText(JSON.stringify(data.task, null, 1), 'json')));
    if (Object.keys(data.info).length) parts.push(el('details', {}, el('summary', { text: 'other trace info' }), longText(JSON.stringify(data.info, null, 1), 'json')));
    app.replaceChildren(...parts);
  }

  function rewriteBox(r) {
    return el('div', { class: 'rewrite' }, el('b', { text: r.denial ? 'DENIED' : 'REWRITTEN' }), ' by rule ', el('code', { class: 'rule', text: r.rule }),
      ` (${r.stage}, tool ${r.tool}) — the model saw instead:`, el('pre', { class: 'replacement', text: r.replacement }),
      r.excerpt ? el('details', {}, el('summary', { text: 'masked excerpt of the original' }), el('pre', { text: r.excerpt })) : '',
      el('details', {}, el('summary', { text: 'arguments' }), el('pre', { text: r.arguments })));
  }

  function item(it) {
    if (it.kind === 'rewrite') return el('li', { class: 'msg rewrite-item' }, rewriteBox(it));
    const li = el('li', { class: `msg ${it.kind}` }, el('div', { class: 'role', text: it.kind === 'tool' ? `tool result · ${it.call}` : it.kind }));
    if (it.rewrite) li.append(rewriteBox(it.rewrite));
    if (it.reasoning) li.append(el('details', {}, el('summary', { text: 'reasoning' }), longText(it.reasoning, 'text')));
    // A denied call's result is the replacement the box above already shows.
    if (it.text && !(it.rewrite && it.text.trim() === it.rewrite.replacement.trim())) li.append(longText(it.text, 'text'));
    for (const call of it.calls || []) {
      li.append(el('div', { class: 'call' }, el('span', { class: 'call-name', text: `→ ${call.name}` }), longText(call.arguments, 'args')));
    }
    return li;
  }

  // ---- compare -----------------------------------------------------------------------------------
  function comparePage(ids) {
    const runs = ids.map((id) => index.runs[id]).filter(Boolean);
    if (runs.length < 2) return notFound('compare needs two or more runs: tick them on the runs page');
    setCrumbs(el('span', { text: `compare ${runs.length} runs` }));
    const means = runs.map((run) => {
      const sums = new Map();
      for (const e of run.episodes) { const s = sums.get(e.task) || [0, 0]; s[0] += e.score; s[1] += 1; sums.set(e.task, s); }
      return new Map([...sums].map(([task, [sum, n]]) => [task, sum / n]));
    });
    const tasks = [...new Set(means.flatMap((m) => [...m.keys()]))].sort();
    const differs = (task) => { const v = means.map((m) => m.get(task)).filter((x) => x !== undefined); return v.some((x) => Math.abs(x - v[0]) > 1e-9) || v.length < runs.length; };
    const pairs = el('table', { id: 'pairs', class: 'grid' }, el('thead', {}, el('tr', {}, ...['A', 'B', 'shared tasks', 'B − A', '95 % interval', 'tasks that differ'].map((h) => el('th', { text: h })))));
    const pairBody = el('tbody');
    let unshared = 0;
    for (let x = 0; x < runs.length; x += 1) {
      for (let y = x + 1; y < runs.length; y += 1) {
        const [a, b] = [runs[x], runs[y]];
        const pair = index.pairs.find((p) => (p.a === a.id && p.b === b.id) || (p.a === b.id && p.b === a.id));
        if (!pair) { unshared += 1; continue; }
        const sign = pair.a === a.id ? 1 : -1;
        pairBody.append(el('tr', {}, el('td', { text: a.name }), el('td', { text: b.name }), el('td', { class: 'n', text: pair.tasks }),
          el('td', { class: 'n diff', text: signed(sign * pair.diff) }),
          el('td', { class: 'n', text: pair.low === null ? '? (one task)' : sign > 0 ? interval(pair.low, pair.high) : interval(-pair.high, -pair.low) }),
          el('td', { text: pair.differing.join(', ') })));
      }
    }
    pairs.append(pairBody);
    const onlyDiffering = el('input', { type: 'checkbox', id: 'only-differing', on: { change: () => draw() } });
    const grid = el('table', { id: 'compare-grid', class: 'grid' });
    function draw() {
      const body = el('tbody');
      for (const task of tasks) {
        if (onlyDiffering.checked && !differs(task)) continue;
        body.append(el('tr', { class: differs(task) ? 'differs' : '' }, el('td', { text: task }), ...means.map((m, k) => {
          const v = m.get(task);
          const episode = runs[k].episodes.find((e) => e.task === task);
          const cell = v === undefined ? el('td', { class: 'n missing', text: '—' })
            : el('td', { class: `n score ${v >= 0.98 ? 'hi' : v <= 0.02 ? 'lo' : 'mid'}` }, el('a', { href: `/run/${runs[k].id}/ep/${episode.i}`, text: fmt(v) }));
          return cell;
        })));
      }
      grid.replaceChildren(el('thead', {}, el('tr', {}, el('th', { text: 'task' }), ...runs.map((r) => el('th', { text: r.name })))), body);
    }
    draw();
    app.replaceChildren(el('h1', { text: 'compare' }), el('p', { class: 'note', text: 'B − A is the mean per-task difference on the shared tasks (rollouts of a task averaged first); its 95 % interval is a t interval over those tasks.' }),
      pairs, unshared ? el('p', { class: 'note', text: `${unshared} pair(s) of the chosen runs share no task and are not compared.` }) : '',
      el('p', {}, el('label', {}, onlyDiffering, ' only tasks whose outcome differs')), grid);
  }

  function notFound(message) {
    app.replaceChildren(el('p', { class: 'warn', text: message }), el('a', { href: '/', text: 'back to the runs' }));
  }

  async function route() {
    const path = decodeURIComponent(location.hash.replace(/^#/, '')) || '/';
    let m;
    try {
      if ((m = /^\/run\/(\d+)\/ep\/(\d+)$/.exec(path))) await episodePage(Number(m[1]), Number(m[2]));
      else if ((m = /^\/run\/(\d+)$/.exec(path))) episodesPage(Number(m[1]));
      else if ((m = /^\/compare\/([\d,]+)$/.exec(path))) comparePage(m[1].split(',').filter(Boolean).map(Number));
      else runsPage();
    } catch (error) {
      notFound(String(error && error.message ? error.message : error));
    }
    window.scrollTo(0, 0);
  }

  loadIndex().then((data) => {
    index = data;
    window.addEventListener('hashchange', route);
    return route();
  }).catch((error) => notFound(`could not load the runs: ${error.message}`));
}());
