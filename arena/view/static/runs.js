// The runs page: every run with its mean and interval, infrastructure failures beside the mean,
// status (running, complete, incomplete, broken), date, tokens and cost; sortable (sort in the
// URL), runs ticked for compare (the selection in the URL too); probes' gates below.
'use strict';
(function () {
  const { el, fmt, interval, pct, count, money, date, collator } = AV;

  const COLUMNS = [
    { key: 'name', label: 'run', text: (r) => r.name },
    { key: 'status', label: 'status', text: (r) => r.status || '—' },
    { key: 'started', label: 'started', num: true, text: (r) => date(r.started) },
    { key: 'env', label: 'environment', text: (r) => r.env },
    { key: 'harness', label: 'harness', text: (r) => r.harness },
    { key: 'policy', label: 'model / policy', text: (r) => r.policy || r.model },
    { key: 'split', label: 'split', text: (r) => r.split },
    { key: 'count', label: 'episodes', num: true, text: (r) => (r.expected && r.count < r.expected ? `${r.count} of ${r.expected}` : String(r.count)) },
    { key: 'tasks', label: 'tasks', num: true, text: (r) => String(r.tasks) },
    { key: 'mean', label: 'mean', num: true, text: (r) => fmt(r.mean) },
    { key: 'low', label: '95 % interval', num: true, text: (r) => interval(r.low, r.high) },
    { key: 'infra', label: 'infra failed', num: true, text: (r) => (r.infra ? `${r.infra} (${pct(r.infra_rate)})` : '0') },
    { key: 'failures', label: 'failed', num: true, text: (r) => String(r.failures) },
    { key: 'retries', label: 'retried', num: true, text: (r) => String(r.retries) },
    { key: 'rewrites', label: 'rewrites', num: true, text: (r) => String(r.rewrites) },
    { key: 'denials', label: 'denials', num: true, text: (r) => String(r.denials) },
    { key: 'tokens_in', label: 'tokens in / out', num: true, text: (r) => `${count(r.tokens_in)} / ${count(r.tokens_out)}` },
    { key: 'cost', label: 'cost', num: true, text: (r) => (r.priced ? money(r.cost) : '—') },
    { key: 'wall', label: 'wall', num: true, text: (r) => AV.seconds(r.wall) },
  ];

  function compare(column, a, b) {
    if (column.num) {
      const x = a[column.key] ?? -Infinity;
      const y = b[column.key] ?? -Infinity;
      return x < y ? -1 : x > y ? 1 : 0;
    }
    return collator.compare(column.text(a), column.text(b));
  }

  function runsPage(_m, params) {
    AV.setCrumbs(el('span', { text: 'runs' }));
    const index = AV.state.index;
    const selected = (params.get('sel') || '').split(',').filter((id) => index.runs.some((r) => r.id === id));
    const sortKey = params.get('sort') || '';
    const desc = params.get('desc') === '1';
    const column = COLUMNS.find((c) => c.key === sortKey);
    const runs = [...index.runs];
    if (column) runs.sort((a, b) => compare(column, a, b) * (desc ? -1 : 1));

    const compareButton = el('button', { id: 'compare-selected', text: 'compare selected runs', disabled: selected.length < 2 ? 'disabled' : null,
      on: { click: () => { location.hash = '#' + AV.link(['compare'], new URLSearchParams({ runs: selected.join(','), base: selected[0] })); } } });

    function tick(id, on) {
      const at = selected.indexOf(id);
      if (on && at < 0) selected.push(id);
      if (!on && at >= 0) selected.splice(at, 1);
      const next = new URLSearchParams(params);
      if (selected.length) next.set('sel', selected.join(',')); else next.delete('sel');
      AV.replaceParams(next);
      if (selected.length >= 2) compareButton.removeAttribute('disabled'); else compareButton.setAttribute('disabled', 'disabled');
    }

    const heads = COLUMNS.map((c) => {
      const next = new URLSearchParams(params);
      next.set('sort', c.key);
      if (sortKey === c.key && !desc) next.set('desc', '1'); else next.delete('desc');
      return el('th', { class: 'sortable', 'data-key': c.key }, el('a', { href: AV.link([], next), text: c.label + (sortKey === c.key ? (desc ? ' ▼' : ' ▲') : '') }));
    });
    const body = el('tbody', {}, runs.map((run) => el('tr', { class: `${run.problem ? 'bad' : run.failures || run.infra ? 'warnrow' : ''} status-${run.status || 'none'}`, 'data-run': run.id },
      el('td', {}, el('input', { type: 'checkbox', 'data-run': run.id, checked: selected.includes(run.id) ? 'checked' : null,
        on: { change: (event) => tick(run.id, event.target.checked) } })),
      COLUMNS.map((c) => c.key === 'name'
        ? el('td', { title: run.path }, el('a', { href: AV.link(['run', run.id]), class: 'run-link', text: run.name }))
        : el('td', { class: (c.num ? 'n ' : '') + (c.key === 'status' ? `status ${run.status}` : ''), title: c.key === 'mean' ? run.method : c.text(run), text: c.text(run) })))));
    const parts = [el('h1', { text: `${index.runs.length} run(s)` }),
      el('div', { class: 'scroll-x' }, el('table', { id: 'runs', class: 'grid' }, el('thead', {}, el('tr', {}, el('th', { text: '' }), heads)), body)),
      el('p', {}, compareButton, el('span', { class: 'note', text: ' The mean is over tasks of each task\'s mean over its rollouts; '
        + 'infrastructure failures are left out of it and counted beside it; the interval is 95 % (method on hover).' }))];
    for (const run of index.runs) {
      if (run.problem) parts.push(el('p', { class: 'warn problem', 'data-run': run.id }, el('b', { text: `${run.name} cannot be read: ` }), run.problem));
      else if (run.warning) parts.push(el('p', { class: 'warn' }, el('b', { text: `${run.name}: ` }), run.warning));
      if (!run.problem && run.count === 0) parts.push(el('p', { class: 'note empty', text: `${run.name}: no episodes${run.status === 'running' ? ' yet (running)' : ''}` }));
    }
    for (const probe of index.probes) parts.push(probeSection(probe));
    AV.app.replaceChildren(...parts);
    AV.setPage({ live: () => runsPage(_m, AV.location().params) });
  }

  const FRACTIONS = new Set(['mean', 'lower', 'upper', 'min', 'max', 'turns', 'budget_used']);
  const VERDICT = { passed: 'gate passed', failed: 'GATE FAILED', undecided: 'gate undecided: run more tasks' };

  function probeSection(probe) {
    const verdict = probe.error ? probe.error : !probe.complete ? 'incomplete (still running or interrupted)' : VERDICT[probe.gate] || 'GATE FAILED';
    const section = el('section', { class: 'probe' }, el('h2', { text: `probe ${probe.name}: ${verdict}` }),
      el('p', { class: 'note', text: `${probe.harness || '?'} · ${probe.tasks ?? '?'} ${probe.split || ''} tasks per policy · `
        + 'one mean [95 % interval]; each rule is decided by a one-sided 95 % bound (lower, upper)' }));
    const rules = (list, cls, word) => el('ul', { class: cls }, list.map((f) => el('li', {}, el('b', { text: `${word} [${f.env}] ${f.rule}` }), ': ', f.detail)));
    if (probe.failures.length) section.append(rules(probe.failures, 'failures', 'failed'));
    if ((probe.undecided || []).length) section.append(rules(probe.undecided, 'undecided', 'undecided'));
    const cols = ['env', 'policy', 'role', 'tasks', 'mean', 'interval', 'lower', 'upper', 'min', 'max', 'turns', 'budget_used', 'rewrites', 'retries', 'failed'];
    const cell = (s, c) => {
      if (c === 'interval') return typeof s.low === 'number' && typeof s.high === 'number' ? `[${fmt(s.low, 3)}, ${fmt(s.high, 3)}]` : '—';
      const v = s[c];
      if (v === null || v === undefined) return '—';
      return FRACTIONS.has(c) && typeof v === 'number' ? fmt(v, c === 'turns' || c === 'budget_used' ? 1 : 3) : String(v);
    };
    section.append(el('table', { class: 'grid' }, el('thead', {}, el('tr', {}, cols.map((c) => el('th', { text: c === 'interval' ? '95 % interval' : c })))),
      el('tbody', {}, probe.scores.map((s) => el('tr', {}, cols.map((c) => el('td', { class: typeof s[c] === 'number' ? 'n' : '', text: cell(s, c) })))))));
    return section;
  }

  AV.route((path) => path.length === 0, runsPage);
}());
