// A run's page: its numbers, config, versions and logs, and its episodes in a virtual table (only
// the rows in view exist in the page, so 5,000 episodes sort and scroll at once), sortable, filtered
// per column (numbers take <, <=, >, >=, =), searched across every transcript, or grouped by task
// with pass@k. Sort, filters, search, grouping and the selected row live in the URL; j/k move the
// selection, Enter opens it, / searches.
'use strict';
(function () {
  const { el, fmt, interval, pct, count, money, seconds, collator } = AV;
  const OVERSCAN = 12;

  const COLUMNS = [
    { key: 'i', label: '#', num: true },
    { key: 'task', label: 'task' },
    { key: 'score', label: 'score', num: true, show: (r) => (r.infra ? 'infra' : fmt(r.score)) },
    { key: 'reason', label: 'grader reason' },
    { key: 'parts', label: 'score parts', show: (r) => Object.entries(r.parts || {}).map(([k, v]) => `${k}=${typeof v === 'number' ? +v.toFixed(3) : v}`).join(' ') },
    { key: 'stop', label: 'stop' },
    { key: 'turns', label: 'turns', num: true },
    { key: 'used', label: 'budget used', num: true, show: (r) => (r.used === null || r.used === undefined ? '—' : `${r.used}${r.budget ? ` of ${r.budget}` : ''} ${r.used_name.replace(/_used$/, '')}`) },
    { key: 'tokens_out', label: 'tokens in / out', num: true, show: (r) => `${count(r.tokens_in)} / ${count(r.tokens_out)}` },
    { key: 'retries', label: 'retried', num: true },
    { key: 'errors', label: 'errors', num: true, show: (r) => (r.errors ? `${r.errors}: ${r.error}` : '0') },
    { key: 'rewrites', label: 'rewrites', num: true, show: (r) => (r.rewrites ? `${r.rewrites} (${r.denials} denied)` : '0') },
    { key: 'wall', label: 'wall s', num: true, show: (r) => fmt(r.wall, 1) },
  ];
  const HITS = { key: 'hits', label: 'hits', num: true };
  const shown = (column, row) => (column.show ? column.show(row) : String(row[column.key] ?? ''));

  function matches(filter, column, row) {
    if (!filter) return true;
    const numeric = /^\s*(<=|>=|<|>|=)\s*(-?[\d.]+)\s*$/.exec(filter);
    if (numeric && column.num) {
      const value = row[column.key];
      if (value === null || value === undefined) return false;
      const bound = Number(numeric[2]);
      return { '<': value < bound, '<=': value <= bound, '>': value > bound, '>=': value >= bound, '=': value === bound }[numeric[1]];
    }
    return shown(column, row).toLowerCase().includes(filter.toLowerCase());
  }

  // ---- search across a run's transcripts (the server's, or the exported file's) -------------------
  const searches = new Map();
  async function searchHits(runId, q, fresh) {
    const key = `${runId}\u0000${q}`;
    if (fresh || !searches.has(key)) searches.set(key, new Map((await AV.source.search(runId, q)).map((h) => [h.i, h.hits])));
    return searches.get(key);
  }

  // The rows of a run as the list shows them (filters, search, sort): what n/p on an episode follow.
  async function ordered(run, params) {
    const q = params.get('q') || '';
    const hits = q ? await searchHits(run.id, q) : null;
    const key = params.get('sort') || 'i';
    const desc = params.get('desc') === '1';
    const column = key === 'hits' ? HITS : COLUMNS.find((c) => c.key === key) || COLUMNS[0];
    const filters = COLUMNS.map((c) => [c, params.get(`f.${c.key}`) || '']).filter(([, f]) => f);
    const rows = [];
    for (const row of run.rows) {
      if (hits && !hits.has(row.i)) continue;
      if (!filters.every(([c, f]) => matches(f, c, row))) continue;
      rows.push(hits ? { ...row, budget: run.summary.budget, hits: hits.get(row.i) } : { ...row, budget: run.summary.budget });
    }
    const value = column.num ? (r) => r[column.key] ?? -Infinity : (r) => shown(column, r);
    const cmp = column.num ? (x, y) => (x < y ? -1 : x > y ? 1 : 0) : (x, y) => collator.compare(x, y);
    rows.sort((a, b) => (cmp(value(a), value(b)) || a.i - b.i) * (desc ? -1 : 1));
    return rows;
  }

  function groups(rows) {
    const byTask = new Map();
    for (const row of rows) {
      if (!byTask.has(row.task)) byTask.set(row.task, []);
      byTask.get(row.task).push(row);
    }
    return [...byTask].map(([task, list]) => {
      const scored = list.filter((r) => r.score !== null && r.score !== undefined);
      return { task, rollouts: list, n: list.length, passed: scored.filter((r) => r.score >= 1 - 1e-12).length,
        mean: scored.length ? scored.reduce((s, r) => s + r.score, 0) / scored.length : null };
    }).sort((a, b) => collator.compare(a.task, b.task));
  }

  // ---- a virtual table: only the rows in view are in the page -----------------------------------
  function virtual(scroller, table, tbody, colspan, rowEl) {
    let rows = [];
    let height = 27;
    const top = el('tr', { class: 'spacer' }, el('td', { colspan }));
    const bottom = el('tr', { class: 'spacer' }, el('td', { colspan }));
    let pending = false;
    function draw() {
      pending = false;
      const head = table.tHead ? table.tHead.offsetHeight : 0;
      const first = Math.max(0, Math.floor((scroller.scrollTop - head) / height) - OVERSCAN);
      const last = Math.min(rows.length, first + Math.ceil(scroller.clientHeight / height) + 2 * OVERSCAN);
      top.firstChild.style.height = `${first * height}px`;
      bottom.firstChild.style.height = `${(rows.length - last) * height}px`;
      const fragment = document.createDocumentFragment();
      fragment.append(top);
      for (let k = first; k < last; k += 1) fragment.append(rowEl(rows[k], k));
      fragment.append(bottom);
      tbody.replaceChildren(fragment);
      const sample = tbody.rows[1];
      if (sample && sample !== bottom && Math.abs(sample.offsetHeight - height) > 0.5) { height = sample.offsetHeight; draw(); }
    }
    scroller.addEventListener('scroll', () => { if (!pending) { pending = true; requestAnimationFrame(draw); } });
    return {
      set(next) { rows = next; draw(); },
      show(k) {
        const head = table.tHead ? table.tHead.offsetHeight : 0;
        const y = head + k * height;
        if (y < scroller.scrollTop + head) scroller.scrollTop = y - head;
        else if (y + height > scroller.scrollTop + scroller.clientHeight) scroller.scrollTop = y + height - scroller.clientHeight;
        draw();
      },
    };
  }

  // ---- the run's numbers, config, versions and logs ----------------------------------------------
  function runHeader(run) {
    const s = run.summary;
    const mean = el('p', { id: 'run-mean' }, el('b', { text: `mean ${fmt(s.mean)} ` }), interval(s.low, s.high), ` over ${s.scored_tasks} tasks (${s.count} episodes)`,
      s.method ? el('span', { class: 'note', text: ` · ${s.method}` }) : '',
      el('span', { class: s.infra ? 'infra warn' : 'infra note', text: ` · infrastructure failures left out: ${s.infra}${s.infra ? ` (${pct(s.infra_rate)})` : ''}` }),
      s.note ? el('span', { class: 'warn', text: ` · ${s.note}` }) : '');
    const facts = el('p', { class: 'note' }, `${s.env} · ${s.harness} · ${s.policy || s.model} · ${s.split} · status `, el('span', { id: 'run-status', class: `status ${s.status}`, text: s.status || '—' }),
      s.expected ? ` (${s.count} of ${s.expected})` : '', ` · ${s.failures} failed · ${s.agent_faults} agent faults · ${s.retries} retried · ${s.rewrites} rewritten · ${s.denials} denied`,
      ` · tokens ${count(s.tokens_in)} in / ${count(s.tokens_out)} out`, s.priced ? ` · cost ${money(s.cost)}` : '', ` · wall ${seconds(s.wall)}`);
    const parts = [mean, facts];
    if (s.pass.length) {
      parts.push(el('table', { id: 'pass-at-k', class: 'grid small' }, el('thead', {}, el('tr', {}, el('th', { text: 'k' }), s.pass.map((p) => el('th', { text: String(p.k) })))),
        el('tbody', {}, el('tr', {}, el('td', { text: 'pass@k' }), s.pass.map((p) => el('td', { class: 'n', text: fmt(p.at) }))),
          el('tr', {}, el('td', { text: 'pass^k' }), s.pass.map((p) => el('td', { class: 'n', text: fmt(p.all) }))))));
    }
    if (s.problem) parts.push(el('p', { class: 'warn problem', text: `this run cannot be read past what is shown: ${s.problem}` }));
    if (s.warning) parts.push(el('p', { class: 'warn', text: s.warning }));
    const config = run.config || {};
    const agent = (config.env || {}).agent || {};
    const keyFacts = {
      model: config.model, num_rollouts: config.num_rollouts, max_concurrent: config.max_concurrent, select: config.select,
      max_turns: agent.max_turns, harness: (agent.harness || {}).id, runtime: (agent.runtime || {}).type, image: (run.images || []).length ? run.images.join(', ') : (agent.runtime || {}).image,
      timeout: agent.timeout, taskset: (config.env || {}).taskset,
    };
    const logs = run.logs || [];
    parts.push(el('details', { id: 'run-details' }, el('summary', { text: 'config, versions, logs' }),
      el('h3', { text: 'config' }), AV.jsonTree(Object.fromEntries(Object.entries(keyFacts).filter(([, v]) => v !== undefined)), 2),
      el('details', {}, el('summary', { text: 'the whole resolved config' }), AV.jsonTree(config, 1)),
      el('h3', { text: 'versions' }), Object.keys(run.versions || {}).length ? AV.jsonTree(run.versions, 1) : el('p', { class: 'note', text: 'not recorded (a run Arena did not launch, or launched before versions were recorded)' }),
      el('h3', { text: 'logs' }), logs.length ? el('ul', { id: 'logs' }, logs.map((log, n) => el('li', {},
        AV.source.logUrl(run.id, n) ? el('a', { url: AV.source.logUrl(run.id, n), target: '_blank', rel: 'noopener', text: log.name }) : el('a', { url: fileUrl(log.path), text: log.name }),
        el('span', { class: 'note', text: ` ${count(log.bytes)} bytes · ${log.path}` })))) : el('p', { class: 'note', text: 'no log found' }),
      run.prices ? el('p', { class: 'note', text: `prices from ${run.prices}` }) : ''));
    return parts;
  }

  function fileUrl(path) { return 'file://' + path.split('/').map(encodeURIComponent).join('/'); }

  // ---- the page ----------------------------------------------------------------------------------
  async function episodesPage(m, params) {
    const runId = m.run;
    const summary = AV.state.index.runs.find((r) => r.id === runId);
    if (!summary) return AV.notFound(`no run ${runId}`);
    AV.setCrumbs(el('a', { href: AV.link(['run', runId]), text: summary.name }));
    AV.app.replaceChildren(el('p', { text: 'loading the episodes…' }));
    const run = await AV.loadRun(runId);
    const state = new URLSearchParams(params);
    let rows = [];
    let sel = state.has('sel') ? Number(state.get('sel')) : null;

    const header = el('div', { id: 'run-header' });
    const shownCount = el('span', { id: 'shown', class: 'note' });
    const searchBox = el('input', { type: 'search', id: 'run-search', 'data-search': '1', placeholder: 'search every transcript (/)', value: state.get('q') || '' });
    const groupBox = el('input', { type: 'checkbox', id: 'group', checked: state.get('group') === '1' ? 'checked' : null });
    const scroller = el('div', { class: 'vscroll', id: 'episodes-scroll' });
    const table = el('table', { id: 'episodes', class: 'grid' });
    const tbody = el('tbody');
    scroller.append(table);

    const link = (i) => {
      const keep = new URLSearchParams(state);
      keep.delete('sel');
      return AV.link(['run', runId, 'ep', String(i)], keep);
    };

    function rowEl(row, k) {
      const tr = el('tr', { class: `ep ${row.infra ? 'infra' : row.failed ? 'bad' : row.rewrites ? 'rewritten' : ''}${row.i === sel ? ' sel' : ''}`, 'data-episode': row.i, 'data-k': k });
      for (const c of columns()) {
        const text = c === HITS ? String(row.hits) : shown(c, row);
        const td = document.createElement('td');
        td.title = text;
        if (c.key === 'task') td.append(el('a', { href: link(row.i), text }));
        else { td.textContent = text; if (c.num) td.className = 'n'; }
        tr.append(td);
      }
      return tr;
    }

    function groupEl(group, k) {
      const tr = el('tr', { class: 'ep group', 'data-task': group.task, 'data-k': k });
      tr.append(el('td', { title: group.task }, el('a', { href: link(group.rollouts[0].i), text: group.task })),
        el('td', { class: 'n', text: String(group.n) }), el('td', { class: 'n', text: `${group.passed} of ${group.n}` }),
        el('td', { class: 'n', text: fmt(group.mean) }),
        el('td', { class: 'rollouts' }, group.rollouts.map((r) => el('a', { href: link(r.i), class: `roll ${r.infra ? 'infra' : r.score >= 0.98 ? 'hi' : r.score <= 0.02 ? 'lo' : 'mid'}`, title: `episode ${r.i}: ${r.infra ? 'infrastructure failure' : fmt(r.score)}`, text: `#${r.i}` }))));
      return tr;
    }

    const grouped = () => state.get('group') === '1';
    const columns = () => (state.get('q') ? [...COLUMNS, HITS] : COLUMNS);
    let list = null;

    function heads() {
      if (grouped()) {
        return el('thead', {}, el('tr', {}, [['task', 'task'], ['n', 'rollouts'], ['passed', 'passed'], ['mean', 'mean'], ['links', 'rollouts (open one)']]
          .map(([key, h]) => el('th', { 'data-key': key, text: h }))));
      }
      const sort = state.get('sort') || 'i';
      const desc = state.get('desc') === '1';
      return el('thead', {},
        el('tr', {}, columns().map((c) => el('th', { class: 'sortable', 'data-key': c.key, text: c.label + (sort === c.key ? (desc ? ' ▼' : ' ▲') : ''),
          on: { click: () => { const again = (state.get('sort') || 'i') === c.key; state.set('sort', c.key); if (again && !desc) state.set('desc', '1'); else state.delete('desc'); redraw(true); } } }))),
        el('tr', { class: 'filters' }, columns().map((c) => el('th', {}, c === HITS ? '' : el('input', { class: 'filter', 'data-key': c.key, placeholder: c.num ? '>0.5' : 'filter',
          value: state.get(`f.${c.key}`) || '', on: { input: (event) => { if (event.target.value) state.set(`f.${c.key}`, event.target.value); else state.delete(`f.${c.key}`); redraw(false); } } })))));
    }

    let generation = 0;
    async function redraw(rebuildHead) {
      const mine = (generation += 1);
      const started = performance.now();
      const list_ = await ordered(run, state);
      if (mine !== generation) return;
      rows = grouped() ? groups(list_) : list_;
      if (rebuildHead || !table.tHead) {
        table.replaceChildren(heads(), tbody);
        list = virtual(scroller, table, tbody, grouped() ? 5 : columns().length, grouped() ? groupEl : rowEl);
      }
      list.set(rows);
      shownCount.textContent = ` ${grouped() ? `${rows.length} tasks of ` : `${rows.length} of `}${run.rows.length} episodes shown`
        + (state.get('q') ? ` (search: ${list_.length} matching)` : '');
      const keep = new URLSearchParams(state);
      if (sel !== null) keep.set('sel', String(sel));
      AV.replaceParams(keep);
      void table.offsetHeight;
      performance.measure('arena:redraw', { start: started });
      if (!performance.getEntriesByName('arena:rows-first').length) performance.mark('arena:rows-first');
    }

    let typingTimer = null;
    searchBox.addEventListener('input', () => {
      clearTimeout(typingTimer);
      typingTimer = setTimeout(() => { if (searchBox.value) state.set('q', searchBox.value); else state.delete('q'); redraw(true); }, 250);
    });
    searchBox.addEventListener('keydown', (event) => { if (event.key === 'Enter') { clearTimeout(typingTimer); if (searchBox.value) state.set('q', searchBox.value); else state.delete('q'); redraw(true); } });
    groupBox.addEventListener('change', () => { if (groupBox.checked) state.set('group', '1'); else state.delete('group'); redraw(true); });

    header.replaceChildren(...runHeader(run));
    AV.app.replaceChildren(el('h1', {}, run.summary.name), header,
      el('p', { class: 'toolbar' }, searchBox, ' ', el('label', {}, groupBox, ' group rollouts by task'), shownCount,
        el('span', { class: 'note keys', text: ' · keys: j/k move, Enter opens, / searches' })),
      scroller);
    await redraw(true);
    if (sel !== null) {
      const k = rows.findIndex((r) => r.i === sel);
      if (k >= 0) list.show(k);
    }

    function move(step) {
      if (!rows.length || grouped()) return;
      const k = Math.max(0, Math.min(rows.length - 1, (sel === null ? -1 : rows.findIndex((r) => r.i === sel)) + step));
      sel = rows[k].i;
      const keep = new URLSearchParams(state);
      keep.set('sel', String(sel));
      AV.replaceParams(keep);
      list.show(k);
    }

    AV.setPage({
      key: (key) => {
        if (key === 'j') return move(1);
        if (key === 'k') return move(-1);
        if (key === 'Enter' && sel !== null) { location.hash = '#' + link(sel); return undefined; }
        return false;
      },
      live: async () => {
        header.replaceChildren(...runHeader(run));
        if (state.get('q')) await searchHits(run.id, state.get('q'), true);
        await redraw(false);
      },
    });
  }

  AV.ordered = ordered;
  AV.route((path) => (path.length === 2 && path[0] === 'run' ? { run: path[1] } : null), episodesPage);
}());
