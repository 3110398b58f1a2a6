// Compare runs against a chosen baseline: for each other run, B − A on the shared tasks with the
// paired test's interval, p (Holm-adjusted when several runs are compared at once) and its wins,
// losses and ties; below, a task × run grid in numeric-aware task order, one link per rollout.
// Runs, baseline and the "only tasks that differ" switch live in the URL.
'use strict';
(function () {
  const { el, fmt, signed, interval, collator } = AV;

  // Holm's step-down adjustment, as arena_kit.gate.stats.holm (a browser test holds them equal).
  function holm(ps) {
    const order = ps.map((p, k) => k).sort((x, y) => ps[x] - ps[y]);
    const adjusted = new Array(ps.length).fill(0);
    let running = 0;
    order.forEach((k, rank) => {
      running = Math.max(running, Math.min(1, (ps.length - rank) * ps[k]));
      adjusted[k] = running;
    });
    return adjusted;
  }

  // The pair as B − A for this baseline (the source gives each pair once, in either order).
  function oriented(pairs, base, other) {
    const p = pairs.find((x) => x.a === base && x.b === other);
    if (p) return p;
    const q = pairs.find((x) => x.a === other && x.b === base);
    if (!q) return null;
    return { ...q, a: base, b: other, diff: -q.diff, low: q.high === null ? null : -q.high, high: q.low === null ? null : -q.low,
      wins: q.losses, losses: q.wins, mean_a: q.mean_b, mean_b: q.mean_a, only_a: q.only_b, only_b: q.only_a };
  }

  async function comparePage(_m, params) {
    const index = AV.state.index;
    const ids = (params.get('runs') || '').split(',').filter(Boolean);
    const unknown = ids.filter((id) => !index.runs.some((r) => r.id === id));
    if (unknown.length) return AV.notFound(`no run ${unknown.join(', ')}`);
    if (ids.length < 2) return AV.notFound('compare needs two or more runs: tick them on the runs page');
    const base = ids.includes(params.get('base')) ? params.get('base') : ids[0];
    const others = ids.filter((id) => id !== base);
    AV.setCrumbs(el('span', { text: `compare ${ids.length} runs` }));
    AV.app.replaceChildren(el('p', { text: 'loading…' }));
    const [runs, pairs] = await Promise.all([Promise.all(ids.map((id) => AV.loadRun(id))), AV.source.pairs(ids)]);
    const byId = new Map(runs.map((r) => [r.id, r]));
    const name = (id) => byId.get(id).summary.name;
    const setParam = (key, value) => {
      const next = new URLSearchParams(params);
      if (value === null) next.delete(key); else next.set(key, value);
      location.hash = '#' + AV.link(['compare'], next);
    };

    const baseline = el('select', { id: 'baseline', on: { change: (event) => setParam('base', event.target.value) } },
      ids.map((id) => el('option', { value: id, selected: id === base ? 'selected' : null, text: name(id) })));
    const tests = others.map((id) => oriented(pairs, base, id));
    const valid = tests.filter(Boolean);
    const adjusted = holm(valid.map((t) => t.p));
    const adjustedOf = new Map(valid.map((t, k) => [t.b, adjusted[k]]));
    const head = ['run B', 'shared tasks', 'mean A', 'mean B', 'B − A', '95 % interval', 'p', others.length > 1 ? 'p (Holm)' : null,
      'B better / worse / tied', 'verdict'].filter(Boolean);
    const body = el('tbody', {}, others.map((id, k) => {
      const t = tests[k];
      if (!t) return el('tr', { 'data-run': id }, el('td', { text: name(id) }), el('td', { colspan: head.length - 1, class: 'note', text: 'shares no scored task with the baseline' }));
      const p = others.length > 1 ? adjustedOf.get(id) : t.p;
      return el('tr', { 'data-run': id }, el('td', { text: name(id) }), el('td', { class: 'n', text: String(t.tasks) }),
        el('td', { class: 'n', text: fmt(t.mean_a) }), el('td', { class: 'n', text: fmt(t.mean_b) }),
        el('td', { class: 'n diff', text: signed(t.diff) }), el('td', { class: 'n', text: interval(t.low, t.high, true) }),
        el('td', { class: 'n p', text: fmt(t.p, 3) }), others.length > 1 ? el('td', { class: 'n holm', text: fmt(p, 3) }) : null,
        el('td', { class: 'n wlt', text: `${t.wins} / ${t.losses} / ${t.ties}` }),
        el('td', { class: p <= 0.05 ? 'sig' : 'note', text: p <= 0.05 ? 'significant' : `not significant with ${t.tasks} task${t.tasks === 1 ? '' : 's'}` }));
    }));
    const table = el('table', { id: 'pairs', class: 'grid' }, el('thead', {}, el('tr', {}, head.map((h) => el('th', { text: h })))), body);

    // The grid: one row per task, the baseline first; each cell the task's mean and its rollouts.
    const order = [base, ...others];
    const cells = new Map(order.map((id) => {
      const byTask = new Map();
      for (const row of byId.get(id).rows) {
        if (!byTask.has(row.task)) byTask.set(row.task, []);
        byTask.get(row.task).push(row);
      }
      return [id, byTask];
    }));
    const mean = (rows) => { const s = rows.filter((r) => r.score !== null && r.score !== undefined); return s.length ? s.reduce((a, r) => a + r.score, 0) / s.length : null; };
    const tasks = [...new Set(order.flatMap((id) => [...cells.get(id).keys()]))].sort(collator.compare);
    const differs = (task) => {
      const values = order.map((id) => (cells.get(id).has(task) ? mean(cells.get(id).get(task)) : undefined));
      return values.some((v) => v === undefined || v === null) || values.some((v) => Math.abs(v - values[0]) > 1e-9);
    };
    const only = params.get('only') === '1';
    const grid = el('table', { id: 'compare-grid', class: 'grid' },
      el('thead', {}, el('tr', {}, el('th', { text: 'task' }), order.map((id) => el('th', { title: byId.get(id).summary.path, text: id === base ? `${name(id)} (A, baseline)` : name(id) })))),
      el('tbody', {}, tasks.filter((task) => !only || differs(task)).map((task) => el('tr', { class: differs(task) ? 'differs' : '', 'data-task': task },
        el('td', { text: task }), order.map((id) => {
          const rows = cells.get(id).get(task);
          if (!rows) return el('td', { class: 'n missing', text: '—' });
          const v = mean(rows);
          return el('td', { class: `n score ${v === null ? 'infra' : v >= 0.98 ? 'hi' : v <= 0.02 ? 'lo' : 'mid'}` },
            el('span', { class: 'cell-mean', text: fmt(v) }), ' ',
            rows.map((r) => el('a', { class: 'roll', href: AV.link(['run', id, 'ep', String(r.i)]), title: `${name(id)} episode ${r.i}: ${r.infra ? 'infrastructure failure' : fmt(r.score)}`,
              text: r.infra ? '×' : r.score >= 0.98 ? '●' : r.score <= 0.02 ? '○' : '◐' })));
        })))));

    AV.app.replaceChildren(el('h1', { text: 'compare' }),
      el('p', {}, el('label', {}, 'baseline (A): ', baseline)),
      el('p', { class: 'note', text: 'B − A is the mean over shared tasks of each task\'s mean difference; the interval and p are the paired sign-flip permutation test\'s'
        + (others.length > 1 ? `; p (Holm) adjusts for the ${others.length} comparisons at once.` : '.') }),
      table,
      el('p', {}, el('label', {}, el('input', { type: 'checkbox', id: 'only-differing', checked: only ? 'checked' : null, on: { change: (event) => setParam('only', event.target.checked ? '1' : null) } }),
        ' only tasks whose outcome differs'), el('span', { class: 'note', text: ` · ${tasks.length} tasks · ● 1, ○ 0, ◐ between, × infrastructure failure: each opens its rollout` })),
      el('div', { class: 'scroll-x' }, grid));
    AV.setPage({ live: () => comparePage(_m, AV.location().params) });
  }

  AV.holm = holm;
  AV.route((path) => path.length === 1 && path[0] === 'compare', comparePage);
}());
