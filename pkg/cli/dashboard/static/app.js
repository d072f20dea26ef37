// The dashboard's page: it renders /api/state, and fetches it again whenever the event
// stream says a kind changed. Everything the API returned goes into the page as text, never
// as HTML.
'use strict';

let state = null;
const views = { graph: renderGraph, deployments: renderDeployments, history: renderHistory, diff: renderDiff };
// The kinds each view shows: a change of another kind leaves the view as it is.
const viewKinds = {
  graph: ['Application', 'Environment', 'SnapshotEnvironmentBinding', 'Snapshot', 'PromotionRun', 'GitOpsDeployment'],
  deployments: ['GitOpsDeployment', 'GitOpsDeploymentHold'],
  history: ['GitOpsDeployment', 'DeploymentRecord', 'GitOpsDeploymentHold', 'AuditEntry'],
  diff: ['GitOpsDeployment', 'DeploymentRecord'],
};

// h makes an element: h('div', {class: 'x'}, 'text', child, ...). Children are text or nodes.
function h(tag, attrs, ...children) {
  const el = tag === 'svg' ? document.createElementNS('http://www.w3.org/2000/svg', 'svg') : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : String(c));
  }
  return el;
}

function badge(value) {
  if (!value) return null;
  const cls = { Synced: 'good', Healthy: 'good', Success: 'good', Complete: 'good', OutOfSync: 'warn',
    Progressing: 'warn', Suspended: 'warn', 'In Progress': 'warn', Pending: 'warn', Active: 'warn', Waiting: 'warn',
    Degraded: 'bad', Missing: 'bad', Failed: 'bad', Failure: 'bad', Unknown: 'dim',
    Succeeded: 'good', Running: 'warn', Error: 'bad', Held: 'warn' }[value] || 'dim';
  return h('span', { class: 'badge ' + cls }, value);
}

function currentView() {
  const v = location.hash.replace('#', '');
  return views[v] ? v : 'graph';
}

function render() {
  const name = currentView();
  document.querySelectorAll('nav a').forEach(a => a.classList.toggle('active', a.dataset.view === name));
  if (!state) return;
  document.getElementById('namespace').textContent = state.namespace;
  document.title = 'GitOps · ' + state.namespace;
  const errors = document.getElementById('errors');
  errors.replaceChildren(...Object.entries(state.errors).map(([kind, msg]) =>
    h('div', { class: 'error', 'data-kind': kind }, h('strong', {}, plural(kind) + ': '), msg)));
  const view = document.getElementById('view');
  view.replaceChildren(views[name]());
  if (name === 'graph') drawArrows();
}

// unreadable says why a view is empty because a kind it shows may not be read.
function unreadable(...kinds) {
  const refused = kinds.filter(k => state.errors[k]);
  if (refused.length === 0) return null;
  return h('p', { class: 'error forbidden' }, 'Cannot show ' + refused.map(plural).join(', ') + ': ' + state.errors[refused[0]]);
}

function plural(kind) {
  return kind.endsWith('y') ? kind.slice(0, -1) + 'ies' : kind + 's';
}

// ---- Environments: each Application's Environments as a graph, then the PromotionRuns.

function renderGraph() {
  const out = h('section', { id: 'graph-view' });
  out.append(unreadable('Application', 'Environment', 'SnapshotEnvironmentBinding') || '');
  if (state.loading && state.applications.length === 0) return h('p', { class: 'muted' }, 'Loading…');
  if (state.applications.length === 0 && !state.errors.Application) out.append(h('p', { class: 'muted' }, 'No Applications in this namespace.'));
  for (const app of state.applications) {
    const depths = Math.max(0, ...app.environments.map(e => e.depth)) + 1;
    const columns = Array.from({ length: depths }, () => h('div', { class: 'column' }));
    for (const env of app.environments) columns[env.depth].append(envBox(app, env));
    out.append(h('article', { class: 'app', 'data-app': app.name },
      h('h2', {}, app.displayName || app.name, h('span', { class: 'muted' }, ' Application ' + app.name)),
      h('p', { class: 'muted' }, 'Snapshots: ' + (app.snapshots.slice(0, 5).join(', ') || 'none') + (app.snapshots.length > 5 ? ', …' : '')),
      app.environments.length === 0 ? h('p', { class: 'muted' }, 'No Environments.') :
        h('div', { class: 'graph' }, h('svg', { class: 'arrows', 'aria-hidden': 'true' }), ...columns)));
  }
  out.append(renderRuns());
  return out;
}

function envBox(app, env) {
  const p = env.promotion;
  return h('div', { class: 'env' + (env.problem ? ' problem' : '') + (env.binding ? '' : ' empty'), 'data-env': env.name, 'data-parent': env.parent || '', id: 'env-' + app.name + '-' + env.name },
    h('div', { class: 'env-title' }, h('strong', {}, env.displayName || env.name), h('span', { class: 'muted' }, ' ' + env.name + ' · ' + (env.strategy || ''))),
    env.binding ?
      h('div', { class: 'snapshot' }, 'Snapshot ', h('strong', { class: 'snapshot-name' }, env.snapshot)) :
      h('div', { class: 'muted' }, 'not deployed'),
    env.binding && h('div', { class: 'status' }, badge(env.sync), ' ', badge(env.health)),
    env.state && h('div', { class: 'state' }, env.state),
    p && h('div', { class: 'promotion' }, '⇢ ', h('strong', {}, p.snapshot), ' (' + p.run + '): ', p.display,
      p.approval && decisionButtons(p.run, env.name)));
}

function decisionButtons(run, env) {
  return h('span', { class: 'actions' },
    h('button', { class: 'approve', onclick: () => decide(run, env, 'approve') }, 'Approve'),
    h('button', { class: 'reject', onclick: () => decide(run, env, 'reject') }, 'Reject'));
}

function renderRuns() {
  if (state.errors.PromotionRun) return unreadable('PromotionRun');
  if (state.runs.length === 0) return '';
  return h('section', { class: 'runs' }, h('h2', {}, 'PromotionRuns'),
    h('div', { class: 'scroll' }, h('table', {},
      h('thead', {}, h('tr', {}, ['Run', 'Application', 'Snapshot', 'Into', 'State', 'Steps'].map(t => h('th', {}, t)))),
      h('tbody', {}, state.runs.slice(0, 20).map(r => h('tr', { 'data-run': r.name },
        h('td', {}, r.name), h('td', {}, r.application), h('td', {}, r.snapshot), h('td', {}, r.target || ''),
        h('td', {}, badge(r.state), ' ', badge(r.result)),
        h('td', {}, (r.steps || []).map(s => h('div', {}, s.display)))))))));
}

// drawArrows draws an arrow from each parent's box to its children's, once the boxes are laid out.
function drawArrows() {
  for (const graph of document.querySelectorAll('.graph')) {
    const svg = graph.querySelector('svg.arrows');
    const base = graph.getBoundingClientRect();
    svg.setAttribute('width', graph.scrollWidth);
    svg.setAttribute('height', graph.scrollHeight);
    const ns = 'http://www.w3.org/2000/svg';
    const defs = document.createElementNS(ns, 'defs');
    defs.innerHTML = '<marker id="head" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto"><path d="M0,0L10,5L0,10z"/></marker>';
    svg.replaceChildren(defs);
    for (const box of graph.querySelectorAll('.env[data-parent]')) {
      const parent = box.dataset.parent && graph.querySelector('.env[data-env="' + CSS.escape(box.dataset.parent) + '"]');
      if (!parent) continue;
      const a = parent.getBoundingClientRect(), b = box.getBoundingClientRect();
      const x1 = a.right - base.left + graph.scrollLeft, y1 = a.top + a.height / 2 - base.top;
      const x2 = b.left - base.left + graph.scrollLeft, y2 = b.top + b.height / 2 - base.top;
      const mid = (x1 + x2) / 2;
      const path = document.createElementNS(ns, 'path');
      path.setAttribute('d', `M${x1},${y1} C${mid},${y1} ${mid},${y2} ${x2 - 2},${y2}`);
      path.setAttribute('marker-end', 'url(#head)');
      svg.append(path);
    }
  }
}

// ---- Deployments: each GitOpsDeployment's sync and health with its resources.

function renderDeployments() {
  const out = h('section', { id: 'deployments-view' });
  if (state.errors.GitOpsDeployment) return unreadable('GitOpsDeployment');
  if (state.deployments.length === 0) out.append(h('p', { class: 'muted' }, state.loading ? 'Loading…' : 'No GitOpsDeployments in this namespace.'));
  for (const d of state.deployments) {
    out.append(h('article', { class: 'deployment', 'data-name': d.name },
      h('div', { class: 'deployment-head' },
        h('h2', {}, d.name), badge(d.sync), badge(d.health),
        h('span', { class: 'muted' }, d.type + (d.binding ? ' · binding ' + d.binding : '')),
        d.manual && h('button', { class: 'sync', onclick: () => sync(d.name) }, 'Sync')),
      h('div', { class: 'muted source' }, d.repo + ' ' + d.path + '@' + (d.target || 'HEAD') + (d.revision ? ' · at ' + d.revision.slice(0, 8) : '')),
      holdLine(d),
      d.labels && h('div', { class: 'labels' }, Object.entries(d.labels).map(([k, v]) => h('span', { class: 'label' }, k + '=' + v))),
      d.ready && h('div', { class: 'ready ' + (d.ready.status === 'True' ? 'good' : 'bad') },
        'ResourcesReady ' + d.ready.status + (d.ready.reason ? ' (' + d.ready.reason + ')' : '') + (d.ready.message ? ': ' + d.ready.message : '')),
      (d.problems || []).map(p => h('div', { class: 'error' }, p)),
      d.health !== 'Healthy' && d.healthMessage && h('div', { class: 'state' }, d.healthMessage),
      d.resources.length === 0 ? h('p', { class: 'muted' }, 'No resources deployed.') :
        h('div', { class: 'scroll' }, h('table', { class: 'resources' },
          h('thead', {}, h('tr', {}, ['Kind', 'Name', 'Sync', 'Health', 'Message'].map(t => h('th', {}, t)))),
          h('tbody', {}, d.resources.map(r => h('tr', { 'data-resource': r.kind + '/' + r.name },
            h('td', {}, r.kind), h('td', {}, (r.namespace && r.namespace !== state.namespace ? r.namespace + '/' : '') + r.name),
            h('td', {}, badge(r.status)), h('td', {}, badge(r.health)), h('td', { class: 'message' }, r.message || ''))))))));
  }
  return out;
}

// ---- History: each deployment's timeline of syncs (its DeploymentRecords, newest first) with
// its hold, then the namespace's writes (AuditEntries), newest first.

// picked is, by deployment, the records chosen for the diff (two at most), kept across renders.
const picked = {};

function renderHistory() {
  return h('section', { id: 'history-view' },
    h('h2', {}, 'Deployment history'),
    renderTimelines(),
    h('h2', { class: 'writes' }, 'Writes to the namespace'),
    renderWrites());
}

function renderTimelines() {
  if (state.errors.GitOpsDeployment) return unreadable('GitOpsDeployment');
  const out = h('div', { class: 'timelines' }, unreadable('DeploymentRecord', 'GitOpsDeploymentHold'));
  if (state.deployments.length === 0) out.append(h('p', { class: 'muted' }, state.loading ? 'Loading…' : 'No GitOpsDeployments in this namespace.'));
  for (const d of state.deployments) out.append(timeline(d));
  return out;
}

function short(rev) {
  return rev ? rev.slice(0, 7) : '';
}

function when(t) {
  return t ? t.replace('T', ' ').replace('Z', '') : '';
}

// holdLine says where a rollback holds d, with a Release button.
function holdLine(d) {
  const hd = d.hold;
  if (!hd) return null;
  return h('div', { class: 'hold' + (hd.holding ? ' holding' : '') },
    badge('Held'), ' ', h('span', { class: 'hold-text' }, 'held at ' + short(hd.revision) + ' by ' + (hd.heldBy || 'unknown') + (hd.reason ? ': ' + hd.reason : '')),
    h('span', { class: 'muted' }, (hd.record ? ' · record ' + hd.record : '') + (hd.message ? ' · ' + hd.message : '')),
    h('button', { class: 'release', onclick: () => release(d.name, hd) }, 'Release'));
}

function timeline(d) {
  const chosen = picked[d.name] = (picked[d.name] || []).filter(n => d.records.some(r => r.name === n));
  const compare = h('button', { class: 'compare', disabled: chosen.length !== 2, onclick: () => showDiff(d.name) }, 'Diff the two selected');
  return h('article', { class: 'timeline', 'data-name': d.name },
    h('div', { class: 'deployment-head' }, h('h2', {}, d.name), badge(d.sync), badge(d.health),
      h('span', { class: 'muted' }, d.records.length + (d.records.length === 1 ? ' sync' : ' syncs')), d.records.length >= 2 && compare),
    holdLine(d),
    state.errors.DeploymentRecord ? null : d.records.length === 0 ? h('p', { class: 'muted' }, 'No sync recorded yet.') :
      h('ol', { class: 'records' }, d.records.map(r => recordItem(d, r, compare))));
}

function recordItem(d, r, compare) {
  const held = d.hold && d.hold.record === r.name;
  const box = h('input', { type: 'checkbox', class: 'pick', title: 'select for the diff', checked: picked[d.name].includes(r.name) });
  box.addEventListener('change', () => {
    const list = picked[d.name].filter(n => n !== r.name);
    if (box.checked) list.push(r.name);
    // Two at most: the oldest choice goes.
    picked[d.name] = list.slice(-2);
    for (const other of box.closest('ol').querySelectorAll('li')) other.querySelector('input.pick').checked = picked[d.name].includes(other.dataset.record);
    compare.disabled = picked[d.name].length !== 2;
  });
  const why = [r.trigger || 'unknown trigger', r.snapshot && 'snapshot ' + r.snapshot, r.binding && 'binding ' + r.binding, r.syncRun && 'syncrun ' + r.syncRun].filter(Boolean).join(' · ');
  return h('li', { class: 'record phase-' + r.phase + (held ? ' held' : ''), 'data-record': r.name },
    h('label', { class: 'record-pick' }, box),
    h('div', { class: 'record-body' },
      h('div', { class: 'record-head' },
        h('span', { class: 'time' }, when(r.started)), ' ', badge(r.phase), ' ',
        h('span', { class: 'commit', title: r.revision || '' }, r.revision ? short(r.revision) : 'no commit'), ' ',
        h('span', { class: 'who' }, r.user ? 'by ' + r.user : 'automatic'),
        held && ' ', held && h('span', { class: 'badge warn' }, 'held here')),
      h('div', { class: 'muted record-why' }, why + ' · ' + r.resources + (r.resources === 1 ? ' resource' : ' resources') +
        (r.failed ? ', ' + r.failed + ' failed' : '') + (r.finished ? ' · finished ' + when(r.finished) : '') + ' · ' + r.name),
      r.message && r.phase !== 'Succeeded' && h('div', { class: 'state' }, r.message)),
    r.revision && !held && h('button', { class: 'rollback', onclick: () => rollback(d.name, r) }, 'Roll back to this record'));
}

function renderWrites() {
  if (state.errors.AuditEntry) return unreadable('AuditEntry');
  if (state.history.length === 0) return h('p', { class: 'muted' }, state.loading ? 'Loading…' : 'No writes recorded in this namespace.');
  return h('div', { class: 'scroll' }, h('table', { class: 'history' },
    h('thead', {}, h('tr', {}, ['Time', 'User', 'Verb', 'Object'].map(t => h('th', {}, t)))),
    h('tbody', {}, state.history.map(e => h('tr', { 'data-entry': e.name },
      h('td', { class: 'time' }, e.time.replace('T', ' ').replace('Z', '')), h('td', {}, e.user),
      h('td', {}, h('span', { class: 'verb ' + e.verb }, e.verb)),
      h('td', {}, e.resource + '/' + e.object + (e.subresource ? ' (' + e.subresource + ')' : '')))))));
}

// ---- Diff of two records: chosen in a deployment's timeline, or here.

// diffChoice is what the Diff view compares: a deployment and two of its records.
const diffChoice = { deployment: '', from: '', to: '' };
// diffCache keeps the answer of each comparison: a record does not change once written.
const diffCache = new Map();

function showDiff(name) {
  const d = state.deployments.find(x => x.name === name);
  const names = d.records.map(r => r.name);
  // From the older of the two to the newer (records are newest first).
  const [a, b] = picked[name].slice().sort((x, y) => names.indexOf(y) - names.indexOf(x));
  Object.assign(diffChoice, { deployment: name, from: a, to: b });
  location.hash = 'diff';
}

function renderDiff() {
  const out = h('section', { id: 'diff-view' });
  if (state.errors.GitOpsDeployment || state.errors.DeploymentRecord) {
    out.append(unreadable('GitOpsDeployment', 'DeploymentRecord'));
    return out;
  }
  const withRecords = state.deployments.filter(d => d.records.length >= 2);
  if (withRecords.length === 0) {
    out.append(h('p', { class: 'muted' }, state.loading ? 'Loading…' : 'No GitOpsDeployment has two recorded syncs to compare yet.'));
    return out;
  }
  let d = withRecords.find(x => x.name === diffChoice.deployment);
  if (!d) {
    d = withRecords[0];
    Object.assign(diffChoice, { deployment: d.name, from: '', to: '' });
  }
  const names = d.records.map(r => r.name);
  if (!names.includes(diffChoice.to)) diffChoice.to = names[0];
  if (!names.includes(diffChoice.from) || diffChoice.from === diffChoice.to) diffChoice.from = names[names.indexOf(diffChoice.to) + 1] || names[1];
  const label = r => when(r.started) + ' · ' + (r.revision ? short(r.revision) : 'no commit') + ' · ' + r.phase + ' · ' + r.name;
  const select = (cls, options, value, onchange) => {
    const s = h('select', { class: cls }, options.map(([v, text]) => h('option', { value: v, selected: v === value }, text)));
    s.addEventListener('change', () => { onchange(s.value); render(); });
    return s;
  };
  out.append(h('div', { class: 'diff diff-choice' },
    h('h2', {}, 'Diff of two records'),
    h('div', { class: 'diff-head' },
      select('pick-deployment', withRecords.map(x => [x.name, x.name]), d.name, v => Object.assign(diffChoice, { deployment: v, from: '', to: '' })),
      h('span', {}, 'from'), select('pick-from', d.records.map(r => [r.name, label(r)]), diffChoice.from, v => { diffChoice.from = v; }),
      h('span', {}, 'to'), select('pick-to', d.records.map(r => [r.name, label(r)]), diffChoice.to, v => { diffChoice.to = v; }))));
  const result = h('div', { class: 'diff diff-result' }, h('p', { class: 'muted' }, 'Loading the diff…'));
  out.append(result);
  loadDiff(d.name, diffChoice.from, diffChoice.to, result);
  return out;
}

async function loadDiff(deployment, from, to, into) {
  const key = [deployment, from, to].join('\n');
  let answer = diffCache.get(key);
  if (!answer) {
    const res = await fetch('api/diff?' + new URLSearchParams({ deployment, from, to }));
    let body = {};
    try { body = await res.json(); } catch (e) { body = { error: res.status + ' ' + res.statusText }; }
    answer = res.ok ? { diff: body } : { error: body.error || res.status + ' ' + res.statusText };
    if (res.ok) diffCache.set(key, answer);
  }
  into.replaceChildren(...(answer.error ? [h('p', { class: 'error forbidden' }, 'Cannot show the diff: ' + answer.error)] : diffBody(answer.diff)));
}

function diffBody(diff) {
  const out = [h('p', { class: 'muted digest' }, diff.from + ' (' + (diff.fromDigest || 'no digest') + ') → ' + diff.to + ' (' + (diff.toDigest || 'no digest') + ')')];
  if (diff.resources.length === 0) out.push(h('p', { class: 'no-change' }, 'No change: the two records deployed the same objects.'));
  for (const r of diff.resources) {
    const mark = { Added: '+', Removed: '−', Modified: '~' }[r.change] || '~';
    out.push(h('div', { class: 'resource-diff', 'data-resource': r.kind + '/' + r.name },
      h('h3', {}, h('span', { class: 'change-' + r.change }, mark + ' ' + r.change), ' ',
        (r.group ? r.group + '/' : '') + r.kind + ' ' + (r.namespace ? r.namespace + '/' : '') + r.name),
      r.fields.length > 0 && h('div', { class: 'scroll' }, h('table', { class: 'fields' },
        h('thead', {}, h('tr', {}, ['Field', 'Before', 'After'].map(t => h('th', {}, t)))),
        h('tbody', {}, r.fields.map(f => h('tr', { 'data-path': f.path },
          h('td', { class: 'path' }, f.path),
          h('td', { class: 'from' }, f.from === undefined || f.from === null ? '(none)' : f.from),
          h('td', { class: 'to' }, f.to === undefined || f.to === null ? '(none)' : f.to))))))));
  }
  if (diff.truncated) out.push(h('p', { class: 'error' }, 'Cut at the server\'s size limit: some changes are not shown.'));
  return out;
}

// ---- Actions: behind a confirmation, through the plugin's own code.

async function post(path, body) {
  const res = await fetch(path, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  let out = {};
  try { out = await res.json(); } catch (e) { out = { error: res.status + ' ' + res.statusText }; }
  notice(out.error ? 'error' : 'ok', out.error || out.message);
}

function sync(name) {
  if (!confirm('Sync GitOpsDeployment ' + name + ' now? This creates a GitOpsDeploymentSyncRun.')) return;
  post('api/sync', { name });
}

function decide(run, env, decision) {
  let comment = '';
  if (decision === 'reject') {
    comment = prompt('Reject the promotion of ' + run + ' into ' + env + '? Say why:');
    if (!comment) return;
  } else if (!confirm('Approve the promotion of ' + run + ' into ' + env + ' as yourself?')) {
    return;
  }
  post('api/decide', { run, env, decision, comment });
}

function rollback(deployment, r) {
  const reason = prompt('Roll ' + deployment + ' back to record ' + r.name + ' (commit ' + short(r.revision) + ')? ' +
    'Argo CD deploys that commit and holds it there, whatever new commits and promotions come, until someone releases it. Why?');
  if (reason === null) return;
  post('api/rollback', { deployment, record: r.name, reason });
}

function release(deployment, hd) {
  if (!confirm('Release ' + deployment + ', held at ' + short(hd.revision) + ' by ' + (hd.heldBy || 'unknown') + '? ' +
    'It deploys its own targetRevision again.')) return;
  post('api/release', { deployment });
}

function notice(kind, text) {
  const el = document.getElementById('notice');
  el.className = kind;
  el.textContent = text;
  el.hidden = false;
  clearTimeout(notice.timer);
  notice.timer = setTimeout(() => { el.hidden = true; }, 8000);
}

// ---- Live updates.

// load fetches the state and renders the view; after a change (kinds), only when the view
// shows a kind that changed or what may not be read changed.
async function load(kinds) {
  const res = await fetch('api/state');
  if (!res.ok) {
    document.getElementById('view').replaceChildren(h('p', { class: 'error' }, 'The dashboard answered ' + res.status + ': ' + await res.text()));
    return;
  }
  const errorsBefore = state && JSON.stringify(state.errors);
  state = await res.json();
  if (kinds && JSON.stringify(state.errors) === errorsBefore && !kinds.some(k => viewKinds[currentView()].includes(k))) return;
  render();
}

let pending = null, pendingKinds = new Set();
function changed(kinds) {
  kinds.forEach(k => pendingKinds.add(k));
  if (pending) return;
  pending = setTimeout(() => {
    const kinds = [...pendingKinds];
    pending = null;
    pendingKinds = new Set();
    load(kinds);
  }, 150);
}

function connect() {
  const live = document.getElementById('live');
  const events = new EventSource('api/events');
  events.addEventListener('hello', () => { live.textContent = 'live'; live.className = 'live on'; load(); });
  events.addEventListener('change', e => changed(JSON.parse(e.data).kinds));
  events.onerror = () => { live.textContent = 'reconnecting'; live.className = 'live off'; };
}

window.addEventListener('hashchange', render);
window.addEventListener('resize', () => { if (currentView() === 'graph') drawArrows(); });
load();
connect();
