// One episode: the transcript with per-turn times and tokens, JSON results as collapsible trees,
// SQL, shell and JSON arguments unescaped and highlighted (Prism.tokenize builds a token list; we
// build the text nodes), each rewrite or denial inline, a timeline of phases, model, tool and gate
// time, the grade, and the raw episode line. n/p go to the next or previous episode of the list as
// filtered and sorted; / searches within the episode; j/k move between messages; u goes back.
'use strict';
(function () {
  const { el, fmt, count, money, seconds } = AV;
  const HEAD_CHARS = 1500;
  const HEAD_LINES = 40;
  const HIGHLIGHT_MAX = 200000;
  const TREE_MAX = 20000000;
  const CHILDREN_SHOWN = 500;
  const INLINE_CHARS = 140;

  // ---- highlighted code: Prism's tokens as text nodes in spans ------------------------------------
  function tokens(stream, into) {
    for (const token of stream) {
      if (typeof token === 'string') { into.append(document.createTextNode(token)); continue; }
      const span = el('span', { class: `tok tok-${token.type}${token.alias ? ` tok-${[].concat(token.alias).join(' tok-')}` : ''}` });
      if (typeof token.content === 'string') span.textContent = token.content;
      else tokens([].concat(token.content), span);
      into.append(span);
    }
  }

  function code(text, language) {
    const pre = el('pre', { class: `code lang-${language || 'text'}` });
    const grammar = language && window.Prism && Prism.languages[language];
    if (grammar && text.length <= HIGHLIGHT_MAX) tokens(Prism.tokenize(text, grammar), pre);
    else pre.textContent = text;
    return pre;
  }

  // Long text: its head, and the rest built only when asked for.
  function longText(text, cls, language) {
    const value = text === null || text === undefined ? '' : String(text);
    const lines = value.split('\n', HEAD_LINES + 1);
    if (value.length <= HEAD_CHARS && lines.length <= HEAD_LINES) return withClass(code(value, language), cls);
    const head = value.slice(0, HEAD_CHARS).split('\n').slice(0, HEAD_LINES).join('\n');
    const box = el('div', { class: 'long' });
    const more = el('button', { class: 'more', text: `show all (${count(value.length)} characters, ${count(value.split('\n').length)} lines)`,
      on: { click: () => box.replaceChildren(withClass(code(value, language), cls)) } });
    box.append(withClass(code(head + '\n…', null), `${cls} head`), more);
    box.dataset.full = value;
    return box;
  }

  function withClass(node, cls) { if (cls) node.classList.add(...cls.split(' ')); return node; }

  // ---- JSON as a collapsible tree, children built when first opened --------------------------------
  function jsonTree(value, openDepth = 1, depth = 0) {
    if (value === null || typeof value !== 'object') return scalar(value);
    const entries = Array.isArray(value) ? value.map((v, k) => [k, v]) : Object.entries(value);
    const label = Array.isArray(value) ? `[…] ${entries.length} item${entries.length === 1 ? '' : 's'}` : `{…} ${entries.length} key${entries.length === 1 ? '' : 's'}`;
    if (!entries.length) return el('span', { class: 'j-empty', text: Array.isArray(value) ? '[]' : '{}' });
    const compact = entries.length <= 12 ? JSON.stringify(value) : '';
    if (compact && compact.length <= INLINE_CHARS && depth > 0) return withClass(code(compact, 'json'), 'j-inline');
    const details = el('details', { class: 'jtree' }, el('summary', { text: label }));
    let built = false;
    const build = () => {
      if (built) return;
      built = true;
      const list = el('ul', { class: 'jchildren' });
      for (const [key, child] of entries.slice(0, CHILDREN_SHOWN)) {
        list.append(el('li', {}, el('span', { class: 'j-key', text: Array.isArray(value) ? `${key}` : JSON.stringify(String(key)) }), ': ', jsonTree(child, openDepth, depth + 1)));
      }
      if (entries.length > CHILDREN_SHOWN) list.append(el('li', { class: 'note', text: `… ${entries.length - CHILDREN_SHOWN} more (see the raw text)` }));
      details.append(list);
    };
    details.addEventListener('toggle', build);
    if (depth < openDepth && entries.length <= 50) { build(); details.open = true; }
    return details;
  }

  function scalar(value) {
    if (typeof value === 'string') {
      return value.includes('\n') || value.length > 120 ? longText(value, 'j-string') : el('span', { class: 'j-string', text: JSON.stringify(value) });
    }
    return el('span', { class: `j-${value === null ? 'null' : typeof value}`, text: String(value) });
  }

  function parsedJSON(text) {
    const t = text.trim();
    if (t.length > TREE_MAX || !/^[[{]/.test(t)) return undefined;
    try { return JSON.parse(t); } catch (e) { return undefined; }
  }

  // A tool result: a JSON object or array as a tree (the text one click away), anything else as text.
  function result(text) {
    const value = parsedJSON(text);
    if (value === undefined || value === null || typeof value !== 'object') return longText(text, 'text');
    const box = el('div', { class: 'json-result' }, jsonTree(value, 2));
    box.append(el('details', { class: 'as-text' }, el('summary', { text: 'as text' }), longText(JSON.stringify(value, null, 2), 'text', 'json')));
    box.dataset.full = text;
    return box;
  }

  // ---- tool call arguments: each value as itself, code highlighted by what it is -------------------
  const LANGUAGE_BY_KEY = { sql: 'sql', query: 'sql', statement: 'sql', statements: 'sql', migration: 'sql',
    command: 'bash', cmd: 'bash', script: 'bash', shell: 'bash', bash: 'bash' };
  function languageOf(key, value, tool) {
    const k = key.toLowerCase();
    if (LANGUAGE_BY_KEY[k]) return LANGUAGE_BY_KEY[k];
    if (/sql/i.test(tool) && /^\s*(select|insert|update|delete|create|alter|drop|with|pragma|begin)\b/i.test(value)) return 'sql';
    if (/^(bash|shell|exec|run)/i.test(tool) && k !== 'description') return 'bash';
    if (parsedJSON(value) !== undefined) return 'json';
    return null;
  }

  function argText(key, value, tool) {
    const language = languageOf(key, value, tool);
    if (!language && value.length <= 120 && !value.includes('\n')) return el('span', { class: 'arg-short', text: value });
    return longText(value, 'arg', language);
  }

  function argsView(call) {
    if (!call.args) return call.text ? longText(call.text, 'args', parsedJSON(call.text) !== undefined ? 'json' : null) : el('span', { class: 'note', text: '(no arguments)' });
    const entries = Object.entries(call.args);
    if (!entries.length) return el('span', { class: 'note', text: '(no arguments)' });
    return el('dl', { class: 'args' }, entries.flatMap(([key, value]) => [el('dt', { text: key }),
      el('dd', {}, typeof value !== 'string' ? jsonTree(value, 2) : argText(key, value, call.name))]));
  }

  // ---- the page ----------------------------------------------------------------------------------
  function rel(t, start) { return t === null || t === undefined || start === null || start === undefined ? '' : `+${(t - start).toFixed(2)} s`; }

  function usageText(usage) {
    if (!usage) return '';
    const parts = [`${count(usage.prompt_tokens)} in`, `${count(usage.completion_tokens)} out`];
    if (usage.cached_input_tokens) parts.push(`${count(usage.cached_input_tokens)} cached`);
    if (usage.reasoning_tokens) parts.push(`${count(usage.reasoning_tokens)} reasoning`);
    return parts.join(' · ');
  }

  function rewriteBox(r) {
    return el('div', { class: 'rewrite' }, el('b', { text: r.denial ? 'DENIED' : 'REWRITTEN' }), ' by rule ', el('code', { class: 'rule', text: r.rule }),
      ` (${r.stage}, tool ${r.tool}) — the model saw instead:`, el('pre', { class: 'replacement', text: r.replacement }),
      r.excerpt ? el('details', {}, el('summary', { text: 'masked excerpt of the original' }), el('pre', { text: r.excerpt })) : '',
      el('details', {}, el('summary', { text: 'arguments' }), jsonTree(r.args, 2)));
  }

  function item(it, data) {
    if (it.kind === 'rewrite') return el('li', { class: 'msg rewrite-item', 'data-kind': 'rewrite' }, rewriteBox(it));
    const meta = [];
    if (it.t !== null && it.t !== undefined) meta.push(el('span', { class: 'when', title: AV.date(it.t), text: `${AV.date(it.t).slice(11)} ${rel(it.t, data.start)}` }));
    if (it.model && it.model.start !== null && it.model.end !== null) meta.push(el('span', { class: 'model-time', text: `model ${seconds(it.model.end - it.model.start)}` }));
    if (it.usage) meta.push(el('span', { class: 'tokens', text: usageText(it.usage) }));
    if (it.kind === 'tool' && it.asked !== null && it.asked !== undefined && it.t !== null) meta.push(el('span', { class: 'tool-time', text: `tool ${seconds(it.t - it.asked)}` }));
    const li = el('li', { class: `msg ${it.kind}`, 'data-kind': it.kind },
      el('div', { class: 'role' }, el('span', { text: it.kind === 'tool' ? `tool result · ${it.call}` : it.kind }), el('span', { class: 'meta' }, meta)));
    if (it.rewrite) li.append(rewriteBox(it.rewrite));
    if (it.reasoning) li.append(el('details', {}, el('summary', { text: 'reasoning' }), longText(it.reasoning, 'text')));
    // A denied call's result is the replacement the box above already shows.
    if (it.text && !(it.rewrite && it.text.trim() === it.rewrite.replacement.trim())) li.append(it.kind === 'tool' ? result(it.text) : longText(it.text, 'text'));
    for (const call of it.calls || []) li.append(el('div', { class: 'call' }, el('span', { class: 'call-name', text: `→ ${call.name}` }), argsView(call)));
    return li;
  }

  const LANES = ['phase', 'model', 'tool', 'gate'];
  function timeline(data) {
    const spans = data.timeline.filter((s) => Number.isFinite(s.start) && Number.isFinite(s.end));
    if (!spans.length) return el('p', { class: 'note', text: 'no timing recorded' });
    const t0 = spans.reduce((m, s) => Math.min(m, s.start), Infinity);
    const t1 = spans.reduce((m, s) => Math.max(m, s.end), -Infinity);
    const width = Math.max(t1 - t0, 1e-6);
    const totals = Object.fromEntries(LANES.map((lane) => [lane, spans.filter((s) => s.lane === lane).reduce((sum, s) => sum + (s.end - s.start), 0)]));
    const box = el('div', { id: 'timeline', class: 'timeline' });
    for (const lane of LANES) {
      const row = el('div', { class: 'lane' });
      for (const s of spans.filter((x) => x.lane === lane)) {
        const bar = el('div', { class: `bar ${lane}${s.end === s.start ? ' point' : ''}`, title: `${s.label}: ${seconds(s.end - s.start)} at ${rel(s.start, t0)}` },
          lane === 'phase' ? s.label : '');
        bar.style.left = `${(100 * (s.start - t0)) / width}%`;
        bar.style.width = s.end === s.start ? '' : `${Math.max(0.2, (100 * (s.end - s.start)) / width)}%`;
        row.append(bar);
      }
      box.append(el('div', { class: 'lane-row' }, el('span', { class: 'lane-name', text: lane === 'gate' ? 'gate' : lane }), row,
        el('span', { class: 'lane-total', text: lane === 'gate' ? `${spans.filter((s) => s.lane === 'gate').length} event(s)` : seconds(totals[lane]) })));
    }
    box.append(el('div', { class: 'axis note', text: `0 … ${seconds(width)}` }));
    return box;
  }

  // ---- search within the episode: matching messages marked, Enter steps through them -----------
  function searchWithin(list, box, status) {
    let hits = [];
    let at = -1;
    function run() {
      for (const node of list.querySelectorAll('.hit')) node.classList.remove('hit', 'current');
      for (const mark of list.querySelectorAll('mark')) mark.replaceWith(document.createTextNode(mark.textContent));
      list.normalize();
      const q = box.value.toLowerCase();
      hits = [];
      at = -1;
      if (!q) { status.textContent = ''; return; }
      for (const li of list.children) {
        const full = [...li.querySelectorAll('[data-full]')].map((n) => n.dataset.full).join('\n');
        if ((li.textContent + '\n' + full).toLowerCase().includes(q)) { li.classList.add('hit'); hits.push(li); markText(li, q); }
      }
      status.textContent = ` ${hits.length} message(s) match`;
      step(1);
    }
    function step(direction) {
      if (!hits.length) return;
      if (at >= 0) hits[at].classList.remove('current');
      at = (at + direction + hits.length) % hits.length;
      const li = hits[at];
      li.classList.add('current');
      // A match inside a collapsed part: open it.
      for (const details of li.querySelectorAll('details')) if (details.textContent.toLowerCase().includes(box.value.toLowerCase())) details.open = true;
      for (const more of li.querySelectorAll('[data-full]')) {
        const button = more.querySelector(':scope > button.more');
        if (button && more.dataset.full.toLowerCase().includes(box.value.toLowerCase())) { button.click(); markText(more, box.value.toLowerCase()); }
      }
      li.scrollIntoView({ block: 'center' });
      status.textContent = ` ${at + 1} of ${hits.length} matching message(s)`;
    }
    box.addEventListener('input', run);
    box.addEventListener('keydown', (event) => { if (event.key === 'Enter') { event.preventDefault(); step(event.shiftKey ? -1 : 1); } });
  }

  function markText(root, q) {
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    const found = [];
    while (walker.nextNode()) if (walker.currentNode.nodeValue.toLowerCase().includes(q)) found.push(walker.currentNode);
    for (const node of found) {
      const text = node.nodeValue;
      const lower = text.toLowerCase();
      const fragment = document.createDocumentFragment();
      let from = 0;
      for (let k = lower.indexOf(q); k >= 0; k = lower.indexOf(q, k + q.length)) {
        fragment.append(document.createTextNode(text.slice(from, k)), el('mark', { text: text.slice(k, k + q.length) }));
        from = k + q.length;
      }
      fragment.append(document.createTextNode(text.slice(from)));
      node.replaceWith(fragment);
    }
  }

  async function episodePage(m, params) {
    const runId = m.run;
    const i = m.i;
    const summary = AV.state.index.runs.find((r) => r.id === runId);
    if (!summary) return AV.notFound(`no run ${runId}`);
    const run = await AV.loadRun(runId);
    if (!run.rows[i]) return AV.notFound(`no episode ${i} in run ${runId}`);
    const listParams = new URLSearchParams(params);
    const back = new URLSearchParams(listParams);
    back.set('sel', String(i));
    AV.setCrumbs(el('a', { href: AV.link(['run', runId], back), text: summary.name }), el('span', { text: `episode ${i}` }));
    AV.app.replaceChildren(el('p', { text: 'loading the transcript…' }));
    const [data, order] = await Promise.all([AV.source.episode(runId, i), AV.ordered(run, listParams)]);
    if (data.missing) return AV.notFound(data.missing);
    const at = order.findIndex((r) => r.i === i);
    const prev = at > 0 ? order[at - 1].i : null;
    const next = at >= 0 && at + 1 < order.length ? order[at + 1].i : null;
    const go = (k) => AV.link(['run', runId, 'ep', String(k)], listParams);
    const row = data.row;
    const usage = { in: row.tokens_in, out: row.tokens_out };
    const nav = el('p', { class: 'nav' },
      prev !== null ? el('a', { id: 'prev', href: go(prev), text: `← previous (p)` }) : el('span', { class: 'note', text: '← first' }), ' · ',
      el('span', { class: 'note', text: at >= 0 ? `${at + 1} of ${order.length} in the list as filtered and sorted` : 'not in the list as filtered' }), ' · ',
      next !== null ? el('a', { id: 'next', href: go(next), text: `next (n) →` }) : el('span', { class: 'note', text: 'last →' }), ' · ',
      el('a', { href: AV.link(['run', runId], back), text: 'back to the list (u)' }));
    const box = el('input', { type: 'search', id: 'episode-search', 'data-search': '1', placeholder: 'search this episode (/); Enter: next match' });
    const found = el('span', { class: 'note', id: 'episode-found' });
    const list = el('ol', { id: 'transcript', class: 'transcript' }, data.items.map((it) => item(it, data)));
    const verdict = row.infra ? 'INFRASTRUCTURE FAILURE (left out of the mean)' : row.failed ? 'FAILED (scores 0)' : row.agent_fault ? `agent fault: ${row.agent_fault} (scores 0)` : '';
    const parts = [nav,
      el('h1', {}, 'task ', el('span', { id: 'task-name', text: row.task })),
      el('p', { id: 'verdict', class: row.failed ? 'bad' : '' }, `score ${row.infra ? '—' : fmt(row.score)} · reward ${fmt(row.reward)} · stop ${row.stop || '—'} · ${row.turns} turns · ${data.model_calls} model calls`,
        verdict ? ` · ${verdict}` : '', row.retries ? ` · ${row.retries} retried` : ''),
      el('p', { id: 'episode-tokens' }, `tokens ${count(usage.in)} in / ${count(usage.out)} out`, row.cost !== null && row.cost !== undefined ? ` · cost ${money(row.cost)}` : '',
        ` · wall ${seconds(row.wall)}`, row.start ? ` · started ${AV.date(row.start)}` : ''),
      el('section', { class: 'grade' }, el('h2', { text: 'grade' }),
        el('p', { class: 'reason', text: (data.grade && data.grade.reason) || '(no reason recorded)' }), jsonTree(data.grade || {}, 1)),
      el('section', {}, el('h2', { text: 'timeline' }), timeline(data)),
      el('section', {}, el('h2', { text: 'transcript' }), el('p', { class: 'toolbar' }, box, found), list),
      el('section', {}, el('h2', { text: 'submission' }), jsonTree(data.submission, 2))];
    if (data.errors.length) {
      parts.push(el('section', { class: 'errors' }, el('h2', { text: 'errors' }), data.errors.map((e) => el('div', { class: 'error' },
        el('b', { text: e.type }), ' ', e.message, e.traceback ? el('details', {}, el('summary', { text: 'traceback' }), el('pre', { text: e.traceback })) : ''))));
    }
    parts.push(el('section', {}, el('h2', { text: 'phases' }), el('table', { class: 'grid timing' },
      el('thead', {}, el('tr', {}, ['phase', 'seconds', 'model s', 'harness s'].map((h) => el('th', { text: h })))),
      el('tbody', {}, data.phases.map((p) => el('tr', {}, el('td', { text: p.phase }), el('td', { class: 'n', text: fmt(p.seconds, 2) }),
        el('td', { class: 'n', text: fmt(p.model, 2) }), el('td', { class: 'n', text: fmt(p.harness, 2) })))))));
    parts.push(el('section', {}, el('h2', { text: 'rewards and metrics' }), jsonTree({ rewards: data.rewards, metrics: data.metrics }, 2)));
    parts.push(el('details', {}, el('summary', { text: 'task data' }), jsonTree(data.task, 1)));
    if (Object.keys(data.info).length) parts.push(el('details', {}, el('summary', { text: 'other trace info' }), jsonTree(data.info, 1)));
    parts.push(rawSection(runId, i));
    AV.app.replaceChildren(...parts);
    searchWithin(list, box, found);

    let focus = -1;
    AV.setPage({
      key: (key) => {
        if (key === 'n' && next !== null) { location.hash = '#' + go(next); return undefined; }
        if (key === 'p' && prev !== null) { location.hash = '#' + go(prev); return undefined; }
        if (key === 'u' || key === 'Escape') { location.hash = '#' + AV.link(['run', runId], back); return undefined; }
        if (key === 'j' || key === 'k') {
          const items = list.children;
          focus = Math.max(0, Math.min(items.length - 1, focus + (key === 'j' ? 1 : -1)));
          for (const li of items) li.classList.remove('focus');
          items[focus].classList.add('focus');
          items[focus].scrollIntoView({ block: 'start' });
          return undefined;
        }
        return false;
      },
    });
  }

  function rawSection(runId, i) {
    const url = AV.source.rawUrl(runId, i);
    if (!url) return el('details', { id: 'raw' }, el('summary', { text: 'raw episode line' }), el('p', { class: 'note', text: 'not embedded in an exported file (it would double its size): `arena view` on the run shows it' }));
    const details = el('details', { id: 'raw' }, el('summary', { text: 'raw episode line (traces.jsonl)' }));
    let loaded = false;
    details.addEventListener('toggle', async () => {
      if (loaded || !details.open) return;
      loaded = true;
      const text = await AV.source.raw(runId, i).catch((error) => `could not read it: ${error.message}`);
      const value = parsedJSON(text);
      details.append(el('p', {}, el('a', { url, target: '_blank', rel: 'noopener', text: 'open as plain text' }), el('span', { class: 'note', text: ` · ${count(text.length)} characters` })),
        value === undefined ? longText(text, 'raw') : jsonTree(value, 1));
    });
    return details;
  }

  AV.jsonTree = jsonTree;
  AV.route((path) => (path.length === 4 && path[0] === 'run' && path[2] === 'ep' && /^\d+$/.test(path[3]) ? { run: path[1], i: Number(path[3]) } : null), episodePage);
}());
