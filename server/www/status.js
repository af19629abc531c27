// status.js - the operator's console: emgd's admin API drawn every second,
// with its actions. Served by emgd with the page (no external assets).
// The token is typed once and exchanged for a session cookie (HttpOnly: no
// script here can read it); every change carries the session's CSRF token.
// SPDX-License-Identifier: Apache-2.0
'use strict';
let csrf = null, timer = null, refreshFailed = false;
const $ = id => document.getElementById(id);

async function api(path, opts = {}) {
  const r = await fetch(path, { credentials: 'same-origin', ...opts });
  if (r.status === 401) { showLogin('your session ended: log in again'); throw new Error('not logged in'); }
  if (!r.ok && r.status !== 404) throw new Error(path + ': HTTP ' + r.status);
  return r.status === 404 ? null : r.json();
}

// A change, once the operator confirmed it (question null: no question):
// its answer, or null after saying why it failed.
async function change(method, path, body, question) {
  if (question && !confirm(question)) return null;
  const headers = { 'X-CSRF-Token': csrf };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const r = await fetch(path, { method, credentials: 'same-origin', headers,
                                body: body === undefined ? undefined : JSON.stringify(body) });
  let answer = {};
  try { answer = await r.json(); } catch (e) { /* an empty answer */ }
  $('error').textContent = r.ok ? '' : `${method} ${path}: ${answer.error || 'HTTP ' + r.status}`;
  refresh();
  return r.ok ? answer : null;
}
const say = text => { $('notice').textContent = text; setTimeout(() => { if ($('notice').textContent === text) $('notice').textContent = ''; }, 8000); };

// A connector's pause, resume or drain.
const act = (connector, action) =>
  change('POST', `/api/connectors/${encodeURIComponent(connector)}/${action}`, undefined, `${action} ${connector}?`);

// An account's own actions: managed accounts only (those of emgd.conf change with it).
const accountPath = name => '/api/accounts/' + encodeURIComponent(name);
async function accountAct(name, action) {
  if (action === 'delete') {
    if (await change('DELETE', accountPath(name), undefined, `delete account ${name}? Its sessions end and what waits for it is dropped.`))
      say(`account ${name} deleted`);
  } else if (action === 'credit') {
    const v = prompt(`credit for ${name}: a number sets it, +N or -N adds`);
    if (v === null || !/^[+-]?\d+$/.test(v.trim())) return;
    const body = /^[+-]/.test(v.trim()) ? { add: parseInt(v, 10) } : { set: parseInt(v, 10) };
    const r = await change('POST', accountPath(name) + '/credit', body, null);
    if (r) say(`account ${name}: credit left ${r.credit_left}`);
  } else {
    if (await change('PATCH', accountPath(name), { enabled: action === 'enable' }, `${action} account ${name}?`))
      say(`account ${name} ${action}d`);
  }
}

function showLogin(why) {
  clearInterval(timer);
  timer = null;
  $('console').hidden = true;
  $('login').hidden = false;
  $('login-error').textContent = why || '';
}

function showConsole() {
  $('login').hidden = true;
  $('console').hidden = false;
  refresh();
  if (!timer) timer = setInterval(refresh, 1000);
}

$('login').addEventListener('submit', async ev => {
  ev.preventDefault();
  const field = $('token');
  const r = await fetch('/api/login', { method: 'POST', credentials: 'same-origin',
                                        headers: { Authorization: 'Bearer ' + field.value } });
  field.value = '';
  if (!r.ok) return showLogin(r.status === 429 ? 'too many failed attempts: try later' : 'wrong token');
  csrf = (await r.json()).csrf;
  showConsole();
});

$('logout').addEventListener('click', async () => {
  await fetch('/api/logout', { method: 'POST', credentials: 'same-origin', headers: { 'X-CSRF-Token': csrf } });
  csrf = null;
  showLogin('logged out');
});

$('reload').addEventListener('click', async () => {
  const r = await change('POST', '/api/reload', undefined,
                         'reload the configuration? emgd reads emgd.conf again, as on SIGHUP.');
  if (r) say('configuration reloaded');
});

// A button; data names it for tests and scripts (data-action, ...).
function button(label, data, run) {
  const b = document.createElement('button');
  b.type = 'button';
  b.textContent = label;
  Object.assign(b.dataset, data);
  b.addEventListener('click', run);
  return b;
}

// A row is its cells, or { cells, key, cls, stateCell, errorCell, errorOld,
// detail, buttons }: key names the row (data-key, for tests and scripts),
// cls colours its state cell, detail ([kind, name]) links its first cell to
// that view, buttons go in a last cell.
function row(spec) {
  const r = Array.isArray(spec) ? { cells: spec } : spec;
  const tr = document.createElement('tr');
  if (r.key) tr.dataset.key = r.key;
  r.cells.forEach((c, i) => {
    const td = document.createElement('td');
    td.textContent = c === null || c === undefined ? '–' : c;
    if (i === 0 && r.detail) {
      const link = document.createElement('a');
      link.href = '#';
      link.dataset.detail = r.detail.join(':');
      link.textContent = td.textContent;
      link.addEventListener('click', ev => { ev.preventDefault(); showDetail(...r.detail); });
      td.replaceChildren(link);
    }
    if (i === r.stateCell && r.cls) td.className = r.cls;
    if (i === r.errorCell && c) { td.className = r.errorOld ? 'err old' : 'err'; td.title = td.textContent; }
    tr.appendChild(td);
  });
  if (r.buttons) {
    const td = document.createElement('td');
    td.className = 'actions';
    r.buttons.forEach(b => td.appendChild(b));
    tr.appendChild(td);
  }
  return tr;
}

function fill(table, rows) {
  while (table.rows.length > 1) table.deleteRow(1);
  for (const r of rows) table.appendChild(row(r));
}

const stateClass = s => s === 'bound' ? 'up' : s === 'paused' ? 'paused' : s === 'idle' ? '' : 'down';
const age = s => s === null || s === undefined ? null : s.toFixed(1);
const pct = (a, b) => b ? (100 * a / b).toFixed(1) + ' %' : '–';
const bytes = n => n >= 1 << 30 ? (n / (1 << 30)).toFixed(1) + ' GiB' : n >= 1 << 20 ? (n / (1 << 20)).toFixed(1) + ' MiB'
                                 : (n / 1024).toFixed(0) + ' KiB';
const svg = (name, attrs, text) => {
  const e = document.createElementNS('http://www.w3.org/2000/svg', name);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
};

// The gateway's health at a glance: each part ok, warn (near a limit,
// lagging) or fail (refusing, down), with its figures.
function health(s) {
  const q = s.queue, rows = [];
  const add = (part, level, detail) => rows.push({ key: part, stateCell: 1, cls: level, cells: [part, level, detail] });
  add('in flight', q.in_flight >= q.hard_limit ? 'fail' : q.soft_limit && q.in_flight >= q.soft_limit ? 'warn' : 'ok',
      `${q.in_flight} of ${q.hard_limit} (${pct(q.in_flight, q.hard_limit)}; slowed from ${q.soft_limit || '–'}) · queued ${q.queued}`);
  add('DLR table', s.dlr.used_pct >= 90 ? 'warn' : 'ok',
      `${s.dlr.used} of ${s.dlr.size} (${s.dlr.used_pct.toFixed(1)} %) · evicted ${s.dlr.evicted} · expired ${s.dlr.expired}`);
  if (!s.spool) add('journal', 'off', 'persist is off: accepted messages live in memory only');
  else add('journal', s.spool.failing ? 'fail' : 'ok',
           (s.spool.failing ? `FAILING: ${s.spool.reason} · ` : '') +
           `${bytes(s.spool.disk_bytes)} on disk · ${s.spool.live_messages} messages, ${s.spool.live_receipts} receipts held`);
  const db = s.database;
  if (!db) add('database', 'off', 'none configured: no message log');
  if (db && db.message_log) {
    const l = db.message_log;
    add('message log', !l.connected ? 'fail' : l.lag_s > 10 || l.events_lost ? 'warn' : 'ok',
        `${l.connected ? 'connected' : 'DISCONNECTED'} · lag ${l.lag_s.toFixed(1)} s · ${l.events_pending} pending,` +
        ` ${l.events_spilled} spilled, ${l.events_lost} lost` + (l.last_error ? ` · last error: ${l.last_error}` : ''));
  }
  if (db && db.cluster) {
    const c = db.cluster;
    add('cluster', c.connected ? 'ok' : 'fail', `${c.connected ? 'connected' : 'DISCONNECTED'} · receipts waiting ` +
        `${c.receipts_waiting}, handed over ${c.receipts_handed_over}` + (c.last_error ? ` · last error: ${c.last_error}` : ''));
  }
  if (s.refused_by) {
    const why = Object.entries(s.refused_by).filter(([, n]) => n).map(([r, n]) => `${r} ${n}`);
    add('refused', s.refused_messages ? 'warn' : 'ok',
        s.refused_messages ? `${s.refused_messages} messages since start: ${why.join(' · ')}` : 'no message refused since start');
  }
  add('history', 'ok', `${s.history.capacity} events kept, ${s.history.recorded} recorded`);
  fill($('health'), rows);
}

// Messages refused by reason: a row per reason, a column for all and one
// per connector that refused any (data-key: the reason).
function refusals(s, c) {
  const table = $('refused');
  if (!s.refused_by) return;
  const by = c.connectors.filter(k => k.refused_messages);
  const head = table.rows[0];
  const names = ['reason', 'all', ...by.map(k => k.name)];
  if ([...head.cells].map(x => x.textContent).join('\n') !== names.join('\n')) {
    head.replaceChildren(...names.map(n => { const th = document.createElement('th'); th.textContent = n; return th; }));
  }
  fill(table, [...Object.entries(s.refused_by).map(([reason, n]) => ({
    key: reason, cells: [reason, n, ...by.map(k => k.refused_by[reason])] })),
    { key: 'total', cells: ['total', s.refused_messages, ...by.map(k => k.refused_messages)] }]);
}

// A chart of series from emgd's own history (whole when the page opens
// and after a reload), with a time axis: lines is [[series, colour]], span
// the seconds shown. Each line is a polyline of the chart, made once.
function chart(svgEl, h, lines, span) {
  const w = 720, h0 = 200;
  const all = lines.map(([name]) => h.series[name]).filter(Boolean);
  const max = Math.max(10, ...all.flatMap(x => x.values));
  const x = t => (w - 40) * (1 - (h.now - t) / span);
  const y = v => h0 - 4 - (v / max) * (h0 - 24);
  for (const [name, colour] of lines) {
    const sr = h.series[name];
    let pl = svgEl.querySelector(`polyline[data-series="${name}"]`);
    if (!pl) {
      pl = svg('polyline', { fill: 'none', stroke: colour, 'stroke-width': 2, 'data-series': name });
      svgEl.appendChild(pl);
    }
    pl.setAttribute('points', sr ? sr.values.map((v, i) => x(sr.start + i * sr.step).toFixed(1) + ',' +
                                                              y(v).toFixed(1)).join(' ') : '');
  }
  svgEl.querySelector('.scale').textContent = 'max ' + Math.round(max) + ' ' + (all[0] ? all[0].unit : '');
  const grid = svgEl.querySelector('g.grid');
  grid.replaceChildren();
  const every = span > 300 ? 120 : 30;
  for (let t = Math.ceil((h.now - span) / every) * every; t <= h.now; t += every) {
    const at = x(t).toFixed(1);
    grid.appendChild(svg('line', { class: 'grid', x1: at, x2: at, y1: 20, y2: h0 }));
    grid.appendChild(svg('text', { class: 'tick', x: at, y: h0 + 14, 'text-anchor': 'middle' },
                         new Date(t * 1000).toLocaleTimeString([], { hour12: false })));
  }
  const n = all.length ? all[0].values.length : 0;
  svgEl.dataset.points = n;
  svgEl.dataset.last = n ? Math.round(all[0].values[n - 1]) : 0;
}

// The main chart: received and sent over the last two minutes.
function draw(h) {
  const c = $('chart');
  c.querySelector('#rx').setAttribute('data-series', 'received');
  c.querySelector('#tx').setAttribute('data-series', 'sent');
  chart(c, h, [['received', '#2563eb'], ['sent', '#18794e']], 120);
}

// One connector's or account's view, when its name was clicked: its last
// ten minutes charted, its figures, and for a connector its instances.
let detail = null;
const detailLines = d => d.kind === 'connector'
  ? [[`connector.${d.name}.in`, '#2563eb'], [`connector.${d.name}.out`, '#18794e'],
     [`connector.${d.name}.errors`, '#c4320a'], [`connector.${d.name}.queue`, '#b25e09']]
  : [[`account.${d.name}.submitted`, '#2563eb'], [`account.${d.name}.refused`, '#c4320a'],
     [`account.${d.name}.delivered`, '#18794e'], [`account.${d.name}.undelivered`, '#b25e09']];
function showDetail(kind, name) {
  detail = { kind, name };
  $('detail').hidden = false;
  $('detail-title').textContent = `${kind} ${name}: the last ten minutes`;
  const legend = $('detail-legend');
  legend.replaceChildren();
  for (const [series, colour] of detailLines(detail)) {
    const span = document.createElement('span');
    span.style.color = colour;
    span.textContent = '■ ' + series.split('.').pop();
    legend.appendChild(span);
  }
  $('detail-chart').querySelectorAll('polyline').forEach(p => p.remove());
  refresh();
}
$('detail-close').addEventListener('click', () => {
  detail = null;
  $('detail').hidden = true;
});

function accountInfo(x) {
  const r = x.receipts || { delivered: 0, undelivered: 0 }, done = r.delivered + r.undelivered;
  return [`rate ${x.rate_now.toFixed(0)} msgs/s` + (x.max_rate ? ` of its limit ${x.max_rate} (${pct(x.rate_now, x.max_rate)})` : ', no limit'),
          x.credit_left === null ? 'credit unlimited' : `credit left ${x.credit_left} of ${x.credit}`,
          `sessions ${x.binds}` + (x.max_binds ? ` of ${x.max_binds}` : ''),
          `refused: ${x.refused.rate} over its rate, ${x.refused.sender} for their sender, ${x.refused.credit} without credit`,
          done ? `receipts: ${r.delivered} delivered, ${r.undelivered} not (${pct(r.delivered, done)} delivered)`
               : 'no final receipts yet'].join(' · ');
}

const accountButtons = x => x.defined_in === 'config' ? [] : [
  button(x.enabled ? 'disable' : 'enable', { action: x.enabled ? 'disable' : 'enable', account: x.name },
         () => accountAct(x.name, x.enabled ? 'disable' : 'enable')),
  button('credit', { action: 'credit', account: x.name }, () => accountAct(x.name, 'credit')),
  button('delete', { action: 'delete', account: x.name }, () => accountAct(x.name, 'delete'))];

async function drawDetail(c, q, a) {
  if (!detail) return;
  const lines = detailLines(detail);
  const h = await api('/api/history?since=-600&step=1&series=' + lines.map(l => encodeURIComponent(l[0])).join(','));
  if (!h) return;
  chart($('detail-chart'), h, lines, 600);
  let info = '';
  const table = $('detail-table'), actions = $('detail-actions');
  table.hidden = true;
  actions.replaceChildren();
  if (detail.kind === 'connector') {
    const k = c.connectors.find(x => x.name === detail.name), qq = q.queues.find(x => x.connector === detail.name);
    if (k) {
      info = `${k.protocol} ${k.mode} ${k.address} · ${k.bound} of ${k.instance_count} bound` +
             (k.paused ? ' · paused' : '') + ` · window ${k.window_used} of ${k.window * k.instance_count}` +
             ` · errors ${k.errors} · queued ${k.queued}` +
             (qq && qq.oldest_age_s !== null ? `, the oldest ${qq.oldest_age_s.toFixed(1)} s` : '');
      const head = document.createElement('tr');
      for (const name of ['#', 'state', 'peer', 'window', 'errors', 'last error']) {
        const th = document.createElement('th');
        th.textContent = name;
        head.appendChild(th);
      }
      table.replaceChildren(head);
      fill(table, [...k.instances.map(i => ({ key: `detail/${i.index}`, stateCell: 1, cls: stateClass(i.state),
                                              cells: [i.index, i.state, i.peer, `${i.window_used}/${i.window}`, i.errors,
                                                      i.last_error ? `${i.last_error_time}: ${i.last_error}` : null] }))]);
      table.hidden = false;
    }
  } else {
    const x = a.accounts.find(y => y.name === detail.name);
    if (x) {
      info = `${x.state} · defined in ${x.defined_in} · ${accountInfo(x)}`;
      accountButtons(x).forEach(b => actions.appendChild(b));
    } else {
      info = 'no such account any more';
    }
  }
  $('detail-info').textContent = info;
  if (detail.kind === 'connector' && c.connectors.some(k => k.name === detail.name && k.queued > 0)) {
    // The message at the head of its queue: the next to go, or the one stuck there.
    const l = await api(`/api/queues/${encodeURIComponent(detail.name)}/messages?limit=1`);
    const m = l && l.messages[0];
    if (m) {
      const d = document.createElement('div');
      d.id = 'detail-next';
      d.textContent = `next in its queue: ${m.kind} ${m.id}` + (m.to ? ` to ${m.to}` : '') +
                      (m.age_s !== null ? `, ${m.age_s.toFixed(1)} s old` : '') + `, ${m.attempts} attempts` +
                      (m.last_error ? `, last error ${m.last_error}` : '') + (m.scheduled ? ', held for its time' : '');
      actions.appendChild(d);
    }
  }
}

// Messages by our id, an SMSC's or a recipient; a queued one can be dropped.
async function search(q) {
  const out = $('result');
  out.replaceChildren();
  try {
    const r = await api('/api/messages?q=' + encodeURIComponent(q));
    const found = r ? r.messages : [];
    if (!found.length) out.textContent = `no message ${q}: not one of our ids, an SMSC's or a recipient's that emgd still knows`;
    if (r && r.database_error) out.append(` (the message log cannot answer: ${r.database_error})`);
    for (const m of found) {
      const d = document.createElement('div');
      d.dataset.id = m.id;
      d.dataset.state = m.state;
      d.textContent = `message ${m.id}: ${m.state} — ${m.summary}` + (m.to ? ` · to ${m.to}` : '') +
                      (m.matched !== 'id' ? ` · found by ${m.matched === 'to' ? 'recipient' : "the SMSC's id"}` : '') +
                      (m.source === 'database' ? ' · from the message log' : '');
      if (m.state === 'queued' || m.state === 'scheduled')
        d.append(' ', button('drop', { action: 'drop', id: m.id }, async () => {
          const done = await change('DELETE', '/api/messages/' + m.id, undefined,
                                    `drop message ${m.id}? Its origin gets a receipt saying so.`);
          if (done) { say(`message ${m.id} dropped`); search(q); }
        }));
      out.appendChild(d);
    }
  } catch (e) {
    out.textContent = e.message;
  }
}
$('search').addEventListener('submit', ev => { ev.preventDefault(); search($('query').value.trim()); });

$('account-form').addEventListener('submit', async ev => {
  ev.preventDefault();
  const body = { name: $('new-name').value.trim(), password: $('new-password').value };
  const connectors = $('new-connectors').value.split(',').map(x => x.trim()).filter(Boolean);
  if (connectors.length) body.connectors = connectors;
  if ($('new-rate').value) body.max_rate = Number($('new-rate').value);
  if ($('new-credit').value) body.credit = Number($('new-credit').value);
  const r = await change('POST', '/api/accounts', body, `add account ${body.name}?`);
  if (r) {
    say(`account ${r.name} added`);
    $('account-form').reset();
  }
});

async function refresh() {
  try {
    const [s, c, q, a, h] = await Promise.all([api('/api/status'), api('/api/connectors'), api('/api/queues'),
                                               api('/api/accounts'),
                                               api('/api/history?series=received,sent&since=-120&step=1')]);
    $('summary').textContent =
      `version ${s.version} · node ${s.node_id} · up ${s.uptime_s} s · persist ${s.persist ? 'on' : 'off'} · ` +
      `received ${s.rates['10s'].received.toFixed(0)}/s, sent ${s.rates['10s'].sent.toFixed(0)}/s`;
    health(s);
    fill($('totals'), Object.entries(s.totals));
    refusals(s, c);
    fill($('connectors'), c.connectors.map(k => ({
      key: k.name, stateCell: 4, cls: k.paused ? 'paused' : k.bound ? 'up' : 'down', detail: ['connector', k.name],
      cells: [k.name, k.protocol, k.mode, k.address, k.paused ? 'paused' : 'running', k.instance_count, k.bound,
              `${k.window_used}/${k.window * k.instance_count}`, k.submits_in, k.submits_out, k.receipts_in,
              k.receipts_out, k.errors, k.refused_messages !== undefined ? k.refused_messages : k.refused, k.queued],
      buttons: [k.paused ? 'resume' : 'pause', ...(k.mode === 'client' ? ['drain'] : [])].map(action =>
        button(action, { action, connector: k.name }, () => act(k.name, action))) })));
    // An error a minute old has cleared, as far as the page can tell: no longer red.
    fill($('instances'), c.connectors.flatMap(k => k.instances.map(i => ({
      key: `${k.name}/${i.index}`, stateCell: 2, cls: stateClass(i.state), errorCell: 13,
      errorOld: i.last_error_time && Date.now() - Date.parse(i.last_error_time) > 60000,
      cells: [k.name, i.index, i.state, i.peer, i.user, i.bind, `${i.window_used}/${i.window}`, i.submits_in,
              i.submits_out, i.receipts_in, i.receipts_out, i.errors, i.reconnects,
              i.last_error ? `${i.last_error_time}: ${i.last_error}` : null] }))));
    fill($('queues'), q.queues.flatMap(k => [
      { key: k.connector, stateCell: 5, cls: k.max_queue && k.queued >= 0.9 * k.max_queue ? 'warn' : '',
        cells: [k.connector, null, k.queued, age(k.oldest_age_s), k.paused ? 'yes' : 'no',
                k.max_queue ? `${k.max_queue} (${pct(k.queued, k.max_queue)})` : 'none', k.scheduled] },
      ...k.accounts.map(x => ({ key: `${k.connector}/${x.user}`, cells: [k.connector, x.user, x.queued, age(x.oldest_age_s), null] }))]));
    fill($('accounts'), a.accounts.map(x => {
      const r = x.receipts || { delivered: 0, undelivered: 0 };
      return { key: `account/${x.name}`, stateCell: 1, cls: x.state === 'enabled' ? 'up' : 'down', detail: ['account', x.name],
               cells: [x.name, x.state, x.defined_in, x.binds, x.max_binds || null, Math.round(x.rate_now), x.max_rate || null,
                       x.credit_left === null ? 'unlimited' : x.credit_left, x.submitted, x.refused.rate,
                       x.refused.sender, x.refused.credit, pct(r.delivered, r.delivered + r.undelivered)],
               buttons: accountButtons(x) };
    }));
    if (h) draw(h);
    await drawDetail(c, q, a);
    if (refreshFailed) $('error').textContent = '';
    refreshFailed = false;
  } catch (e) {
    $('error').textContent = e.message;
    refreshFailed = true;
  }
}

// A session from before (a reload): on with it, else the login.
api('/api/session').then(r => { if (r && r.session) { csrf = r.csrf; showConsole(); } else showLogin(); })
                   .catch(() => showLogin());
