// The playground page: editors, tabs, the gallery, rendering on input and
// the state in the URL. The logic is in engine.js; the component is loaded
// once, after the editors show their text.

import { EXAMPLES } from '../build/examples.js';
import { createEditor, escapeHtml } from './editor.js';
import { applyVariant, lineDiff, renderSet, writePackage } from './engine.js';
import { decodeHash, encodeState } from './share.js';
import { stringify } from 'yaml';

const RENDER_DELAY_MS = 150;
const URL_DELAY_MS = 400;

const $ = (sel) => document.querySelector(sel);
const status = $('#status');

const editors = {
  pvs: createEditor($('#ed-pvs-host'), { id: 'ed-pvs', label: 'PackageVariantSet YAML' }),
  cluster: createEditor($('#ed-cluster-host'), { id: 'ed-cluster', label: 'Cluster objects YAML' }),
  existing: createEditor($('#ed-existing-host'), { id: 'ed-existing', label: 'Existing child PackageVariants YAML' }),
  pv: createEditor($('#ed-pv-host'), { id: 'ed-pv', label: 'PackageVariant YAML' }),
  pkg: createEditor($('#ed-pkg-host'), { id: 'ed-pkg', label: 'Package files' }),
  candidates: createEditor($('#ed-candidates-host'), { id: 'ed-candidates', label: 'Cluster objects for config injection' }),
};
editors.existing.textarea.placeholder = '# Paste the set\'s existing child PackageVariants here\n# (multi-document YAML) to plan against them.';
editors.candidates.textarea.placeholder = '# Paste ConfigMaps or other objects for config injection here.';
/** Which tab of the panes shows each editor. */
const EDITOR_TAB = { existing: 'tab-existing', cluster: 'tab-cluster', pkg: 'tab-pkg', candidates: 'tab-candidates' };
const PANE_TITLES = { pvs: 'PackageVariantSet', cluster: 'Cluster objects', existing: 'Existing children', pv: 'PackageVariant', pkg: 'Package files', candidates: 'Cluster objects' };

let core = null;
let view = 'set';
let exampleId = null;
let renderTimer = 0;
let urlTimer = 0;
let firstRender = true;
let problems = [];

// ---- tabs ---------------------------------------------------------------

/** Selects a tab of a tablist and shows its panel. */
function selectTab(tab, { focus = false } = {}) {
  const list = tab.closest('[role=tablist]');
  for (const t of list.querySelectorAll('[role=tab]')) {
    const on = t === tab;
    t.setAttribute('aria-selected', String(on));
    t.tabIndex = on ? 0 : -1;
    const panel = document.getElementById(t.getAttribute('aria-controls'));
    if (panel) panel.hidden = !on;
  }
  const note = tab.closest('.pane')?.querySelector('.pane-note');
  if (note && tab.dataset.note) note.innerHTML = tab.dataset.note;
  if (tab.id === 'tab-set' || tab.id === 'tab-variant') {
    view = tab.id === 'tab-set' ? 'set' : 'variant';
    scheduleRender(0);
    scheduleUrl();
  }
  if (focus) tab.focus();
}

for (const list of document.querySelectorAll('[role=tablist]')) {
  const tabs = [...list.querySelectorAll('[role=tab]')];
  for (const tab of tabs) {
    tab.addEventListener('click', () => selectTab(tab));
    tab.addEventListener('keydown', (e) => {
      const i = tabs.indexOf(tab);
      const next = { ArrowRight: i + 1, ArrowLeft: i - 1, Home: 0, End: tabs.length - 1 }[e.key];
      if (next === undefined) return;
      e.preventDefault();
      selectTab(tabs[(next + tabs.length) % tabs.length], { focus: true });
    });
  }
}

// ---- state ----------------------------------------------------------------

function currentState() {
  return {
    view,
    pvs: editors.pvs.value,
    cluster: editors.cluster.value,
    existing: editors.existing.value,
    pv: editors.pv.value,
    pkg: editors.pkg.value,
    candidates: editors.candidates.value,
  };
}

function setState(state) {
  for (const key of Object.keys(editors)) {
    if (typeof state[key] === 'string') editors[key].value = state[key];
  }
  if (state.view === 'set' || state.view === 'variant') selectTab($(`#tab-${state.view}`));
}

function exampleState(example) {
  const base = { view: example.tab };
  if (example.tab === 'set') return { ...base, pvs: example.pvs, cluster: example.cluster, existing: example.existing };
  return { ...base, pv: example.pv, pkg: writePackage(example.pkg), candidates: example.candidates };
}

function loadExample(id) {
  const example = EXAMPLES.find((e) => e.id === id);
  if (!example) return false;
  // The other tab keeps a default: the first example of its kind.
  const other = EXAMPLES.find((e) => e.tab !== example.tab);
  if (other) setState(exampleState(other));
  setState(exampleState(example));
  exampleId = id;
  $('#gallery').value = id;
  return true;
}

async function loadFromHash() {
  try {
    const found = await decodeHash(location.hash);
    if (found?.example && loadExample(found.example)) return;
    if (found?.state) {
      if (!exampleId) loadExample(EXAMPLES[0].id);
      setState(found.state);
      exampleId = null;
      $('#gallery').value = '';
      return;
    }
  } catch (e) {
    status.textContent = `This link could not be read (${e.message}); showing an example.`;
  }
  loadExample(EXAMPLES[0].id);
}

function scheduleUrl() {
  clearTimeout(urlTimer);
  urlTimer = setTimeout(async () => {
    const hash = exampleId ? `example=${exampleId}` : await encodeState(currentState());
    history.replaceState(null, '', `#${hash}`);
  }, URL_DELAY_MS);
}

const gallery = $('#gallery');
gallery.innerHTML =
  `<option value="" disabled>(edited)</option>` +
  EXAMPLES.map((e) => `<option value="${e.id}" title="${escapeHtml(e.description)}">${escapeHtml(e.title)}</option>`).join('');
gallery.addEventListener('change', () => {
  if (loadExample(gallery.value)) {
    scheduleRender(0);
    scheduleUrl();
  }
});

for (const ed of Object.values(editors)) {
  ed.onInput(() => {
    if (exampleId) {
      exampleId = null;
      gallery.value = '';
    }
    scheduleRender(RENDER_DELAY_MS);
    scheduleUrl();
  });
}

$('#share').addEventListener('click', async () => {
  clearTimeout(urlTimer);
  const hash = exampleId ? `example=${exampleId}` : await encodeState(currentState());
  history.replaceState(null, '', `#${hash}`);
  try {
    await navigator.clipboard.writeText(location.href);
    status.textContent = 'Link copied.';
  } catch {
    status.textContent = 'The link is in the address bar.';
  }
});

window.addEventListener('hashchange', async () => {
  await loadFromHash();
  scheduleRender(0);
});

// ---- output -----------------------------------------------------------------

/** YAML as HTML with keys, strings, numbers and comments marked. */
function highlightYaml(text) {
  return text
    .split('\n')
    .map((line) => {
      if (/^\s*#/.test(line)) return `<span class="y-comment">${escapeHtml(line)}</span>`;
      if (line === '---') return `<span class="y-sep">---</span>`;
      const m = /^(\s*(?:- )*)([^\s#'"][^:]*?|"[^"]*"|'[^']*')(:)(\s.*|)$/.exec(line);
      if (!m) return highlightValue(line);
      return `${escapeHtml(m[1])}<span class="y-key">${escapeHtml(m[2])}</span>:${highlightValue(m[4])}`;
    })
    .join('\n');
}

function highlightValue(text) {
  const m = /^(\s*(?:- )*)(.*)$/.exec(text);
  const [, lead, value] = m;
  let cls = null;
  if (/^(['"]).*\1$/.test(value)) cls = 'y-str';
  else if (/^(-?\d+(\.\d+)?|true|false|null)$/.test(value)) cls = 'y-num';
  else if (value) cls = 'y-plain';
  return escapeHtml(lead) + (cls ? `<span class="${cls}">${escapeHtml(value)}</span>` : escapeHtml(value));
}

/** A line diff as HTML, unchanged runs longer than the context folded. */
function diffHtml(lines, context = 3) {
  const near = lines.map(() => false);
  lines.forEach((l, i) => {
    if (l.op === ' ') return;
    for (let j = Math.max(0, i - context); j <= Math.min(lines.length - 1, i + context); j++) near[j] = true;
  });
  const out = [];
  let folded = 0;
  const flush = () => {
    if (folded) out.push(`<span class="d-line d-fold">⋯ ${folded} unchanged line${folded === 1 ? '' : 's'}</span>`);
    folded = 0;
  };
  lines.forEach((l, i) => {
    if (!near[i]) {
      folded += 1;
      return;
    }
    flush();
    out.push(`<span class="d-line d-${l.op === '+' ? 'add' : l.op === '-' ? 'del' : 'ctx'}">${l.op} ${escapeHtml(l.text)}</span>`);
  });
  flush();
  return out.join('');
}

/** Green for a good state, red for a bad one: `Stalled=True` is bad. */
function conditionClass(c) {
  if (c.status !== 'True' && c.status !== 'False') return '';
  const good = (c.status === 'True') !== /^(Stalled|Failed|Degraded)$/.test(c.type);
  return good ? 'pill-good' : 'pill-bad';
}

/** A staged rollout: each step's counts and children, the held updates. */
function rolloutHtml(rollout) {
  if (!rollout) return '';
  const rows = (rollout.steps ?? [])
    .map((st, i) => {
      const current = st.name === rollout.currentStep ? ' <span class="pill plan-update">current</span>' : '';
      const members = (rollout.members?.[i] ?? []).map(escapeHtml).join(', ');
      return `<tr data-step="${escapeHtml(st.name)}"><td>${escapeHtml(st.name)}${current}</td><td>${st.variants}</td><td>${st.pending}</td><td>${st.updating}</td><td>${st.done}</td><td>${st.failed}</td><td>${members}</td></tr>`;
    })
    .join('');
  const held = rollout.held?.length
    ? `<p class="summary" id="rollout-held">Held until their step: ${rollout.held.map(escapeHtml).join(', ')}.</p>`
    : '';
  return `<h3>Rollout</h3><table class="grid" id="rollout-steps"><thead><tr><th>Step</th><th>Variants</th><th>Pending</th><th>Updating</th><th>Done</th><th>Failed</th><th>Children</th></tr></thead><tbody>${rows}</tbody></table>${held}
      <p class="hint">Without the downstream revisions, a child at its new spec counts as updating.</p>`;
}

function conditionsHtml(conditions) {
  if (!conditions?.length) return '<p class="empty">No conditions.</p>';
  return `<table class="grid"><thead><tr><th>Type</th><th>Status</th><th>Reason</th><th>Message</th></tr></thead><tbody>${conditions
    .map(
      (c) =>
        `<tr><td>${escapeHtml(c.type)}</td><td><span class="pill ${conditionClass(c)}">${escapeHtml(c.status)}</span></td><td>${escapeHtml(c.reason)}</td><td class="msg cond-msg">${escapeHtml(c.message)}</td></tr>`,
    )
    .join('')}</tbody></table>`;
}

function planStatus(plan) {
  const out = new Map();
  if (!plan) return out;
  for (const pv of plan.create) out.set(pv.metadata.name, 'create');
  for (const pv of plan.update) out.set(pv.metadata.name, 'update');
  for (const n of plan.unchanged) out.set(n, 'unchanged');
  return out;
}

function showSet(result) {
  const pvs = result.packageVariants;
  const statusOf = planStatus(result.plan);
  $('#count-pvs').textContent = result.plan ? String(pvs.length) : '';
  const outPvs = $('#out-pvs');
  if (!result.plan) {
    outPvs.innerHTML = `<p class="empty">${result.stalled ? `Nothing rendered: the set is stalled (<b>${escapeHtml(result.stalled.reason)}</b>). See the problems below.` : 'Nothing rendered: see the problems below.'}</p>`;
  } else if (!pvs.length) {
    outPvs.innerHTML = '<p class="empty">No targets: the set renders no PackageVariant.</p>';
  } else {
    const rows = pvs
      .map((pv, i) => {
        const d = pv.spec?.downstream ?? {};
        const st = statusOf.get(pv.metadata.name) ?? 'create';
        return `<tr><td><a href="#pv-${i}" class="pv-name" data-testid="pv-name" data-index="${i}">${escapeHtml(pv.metadata.name)}</a></td><td>${escapeHtml(d.repo ?? '')}</td><td>${escapeHtml(d.package ?? '')}</td><td><span class="pill plan-${st}">${st}</span></td></tr>`;
      })
      .join('');
    const docs = pvs.map((pv, i) => `<pre class="yaml" id="pv-${i}" tabindex="-1">${highlightYaml(stringify(pv, { lineWidth: 0 }).trimEnd())}</pre>`).join('');
    outPvs.innerHTML = `<table class="grid names"><thead><tr><th>Name</th><th>Repository</th><th>Package</th><th>Plan</th></tr></thead><tbody>${rows}</tbody></table>${docs}`;
  }
  const plan = result.plan;
  const outPlan = $('#out-plan');
  if (!plan) {
    outPlan.innerHTML = '<p class="empty">No plan: nothing may be written while the set is stalled.</p>';
    $('#count-plan').textContent = '';
  } else {
    const writes = plan.create.length + plan.update.length + plan.delete.length;
    $('#count-plan').textContent = String(writes);
    const existingByName = new Map((result.existing ?? []).map((pv) => [pv.metadata?.name, pv]));
    const names = (list, cls) =>
      list.length ? `<ul class="names-list">${list.map((n) => `<li><span class="pill plan-${cls}">${cls}</span> ${escapeHtml(n)}</li>`).join('')}</ul>` : '<p class="empty">None.</p>';
    const updates = plan.update
      .map((pv) => {
        const before = existingByName.get(pv.metadata.name);
        const lines = lineDiff(before ? stringify(before.spec ?? {}, { lineWidth: 0 }) : '', stringify(pv.spec ?? {}, { lineWidth: 0 }));
        return `<details open><summary><span class="pill plan-update">update</span> ${escapeHtml(pv.metadata.name)} <small>spec</small></summary><pre class="diff">${diffHtml(lines)}</pre></details>`;
      })
      .join('');
    outPlan.innerHTML = `
      <p class="summary"><b>${writes}</b> write${writes === 1 ? '' : 's'}: ${plan.create.length} create, ${plan.update.length} update, ${plan.delete.length} delete; ${plan.unchanged.length} unchanged${plan.foreign.length ? `, ${plan.foreign.length} foreign` : ''}${plan.duplicates.length ? `, ${plan.duplicates.length} duplicate` : ''}.</p>
      <h3>Create</h3>${names(plan.create.map((pv) => pv.metadata.name), 'create')}
      <h3>Update</h3>${updates || '<p class="empty">None.</p>'}
      <h3>Delete</h3>${names(plan.delete.map((pv) => pv.metadata.name), 'delete')}
      <h3>Unchanged</h3>${names(plan.unchanged, 'unchanged')}
      ${plan.foreign.length ? `<h3>Foreign (left alone)</h3>${names(plan.foreign, 'foreign')}` : ''}
      ${plan.duplicates.length ? `<h3>Duplicates (left alone)</h3>${names(plan.duplicates, 'foreign')}` : ''}
      ${rolloutHtml(result.rollout)}
      <p class="hint">Paste the set's current children under <b>Existing children</b> to plan against them.</p>`;
  }
  const stats = result.stats
    ? `<p class="summary">${result.stats.targets} target${result.stats.targets === 1 ? '' : 's'}, ${result.stats.compiledExpressions} compiled expression${result.stats.compiledExpressions === 1 ? '' : 's'}, ${result.stats.evaluations} evaluations, cost ${result.stats.cost}.</p>`
    : '';
  $('#out-conditions').innerHTML = stats + conditionsHtml(result.conditions);
}

function showVariant(result) {
  const out = result.outcome;
  $('#count-diff').textContent = out ? String(result.diffs.length) : '';
  if (!out) {
    $('#out-diff').innerHTML = '<p class="empty">Nothing applied: see the problems below.</p>';
    $('#out-injection').innerHTML = '';
    return;
  }
  $('#out-diff').innerHTML = result.diffs.length
    ? result.diffs
        .map((d) => `<details open><summary><span class="pill plan-${d.status === 'added' ? 'create' : d.status === 'deleted' ? 'delete' : 'update'}">${d.status}</span> ${escapeHtml(d.path)}</summary><pre class="diff">${diffHtml(d.lines)}</pre></details>`)
        .join('')
    : '<p class="empty">The mutations change nothing: the package is already as the variant wants it.</p>';
  const inj = out.results.length
    ? `<table class="grid"><thead><tr><th>File</th><th>Injection point</th><th>Required</th><th>Injected</th></tr></thead><tbody>${out.results
        .map(
          (r) =>
            `<tr><td>${escapeHtml(r.file)}</td><td>${escapeHtml(`${r.kind} ${r.name}`)}</td><td>${r.required ? 'yes' : 'no'}</td><td>${r.injected ? `<span class="pill pill-good">${escapeHtml(r.injectedName)}</span>` : `<span class="pill pill-bad">no</span>`}${r.errors.map((e) => `<div class="msg">${escapeHtml(e)}</div>`).join('')}</td></tr>`,
        )
        .join('')}</tbody></table>`
    : '<p class="empty">No injection points.</p>';
  const gates = out.readinessGates.length ? `<h3>Readiness gates</h3><ul class="names-list">${out.readinessGates.map((g) => `<li>${escapeHtml(g.conditionType)}</li>`).join('')}</ul>` : '';
  $('#out-injection').innerHTML = `${renderHtml(result.render)}<h3>Config injection</h3>${inj}<h3>Kptfile conditions</h3>${conditionsHtml(out.conditions)}${gates}`;
}

/** The render after the mutations: kpt's summary and progress lines. */
function renderHtml(render) {
  if (!render) return '';
  let text;
  if (render.pending) text = `Not rendered: ${render.pending} is not a builtin function.`;
  else if (render.failure) text = `Render failed: ${render.failure.message}`;
  else text = render.summary;
  const log = render.log?.length ? `<pre class="render-log">${escapeHtml(render.log.join('\n'))}</pre>` : '';
  return `<h3>Render</h3><p id="out-render-summary" class="${render.failure ? 'msg' : ''}">${escapeHtml(text)}</p>${log}`;
}

function showProblems(list, host) {
  problems = list;
  for (const ed of Object.values(editors)) ed.setMarks([]);
  const byPane = new Map();
  for (const p of list) {
    if (p.line) (byPane.get(p.pane) ?? byPane.set(p.pane, []).get(p.pane)).push(p);
  }
  for (const [pane, marks] of byPane) editors[pane]?.setMarks(marks);
  if (!list.length) {
    host.innerHTML = '<div class="ok" data-testid="no-problems">No problems.</div>';
    return;
  }
  host.innerHTML = `<div class="problems-head">Problems <span class="count">${list.length}</span></div><ol>${list
    .map((p, i) => {
      const where = `${PANE_TITLES[p.pane] ?? p.pane}${p.line ? `:${p.line}` : ''}`;
      return `<li class="problem sev-${p.severity}" data-testid="problem" data-index="${i}" tabindex="0" role="button" aria-label="${escapeHtml(`${p.severity} at ${where}: ${p.message}`)}">
        <div class="problem-where">${p.path ? `<code class="path" data-testid="problem-path">${escapeHtml(p.path)}</code>` : ''}<span class="loc">${escapeHtml(where)}</span></div>
        <pre class="problem-msg">${escapeHtml(p.message)}</pre></li>`;
    })
    .join('')}</ol>`;
}

function revealProblem(p) {
  const ed = editors[p.pane];
  if (!ed) return;
  const tab = EDITOR_TAB[p.pane];
  if (tab) selectTab(document.getElementById(tab));
  if (p.line) ed.revealLine(p.line);
  else ed.focus();
}

for (const host of [$('#problems-set'), $('#problems-variant')]) {
  const pick = (e) => {
    const li = e.target.closest('.problem');
    if (li) revealProblem(problems[Number(li.dataset.index)]);
  };
  host.addEventListener('click', pick);
  host.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' || e.key === ' ') {
      e.preventDefault();
      pick(e);
    }
  });
}

$('#out-pvs').addEventListener('click', (e) => {
  const a = e.target.closest('a.pv-name');
  if (!a) return;
  e.preventDefault();
  const pre = document.getElementById(`pv-${a.dataset.index}`);
  pre?.scrollIntoView({ block: 'start' });
  pre?.focus({ preventScroll: true });
});

// ---- render -----------------------------------------------------------------

function scheduleRender(delay) {
  clearTimeout(renderTimer);
  renderTimer = setTimeout(render, delay);
}

function render() {
  if (!core) return;
  let result;
  try {
    if (view === 'set') {
      result = renderSet(core, { pvs: editors.pvs.value, cluster: editors.cluster.value, existing: editors.existing.value });
      showSet(result);
      showProblems(result.problems, $('#problems-set'));
    } else {
      result = applyVariant(core, { pv: editors.pv.value, pkg: editors.pkg.value, candidates: editors.candidates.value });
      showVariant(result);
      showProblems(result.problems, $('#problems-variant'));
    }
  } catch (e) {
    status.textContent = `Internal error: ${e.message}`;
    console.error(e);
    return;
  }
  const errors = result.problems.filter((p) => p.severity === 'error').length;
  const what =
    view === 'set'
      ? result.plan
        ? `${result.packageVariants.length} PackageVariant${result.packageVariants.length === 1 ? '' : 's'}`
        : result.stalled
          ? `stalled: ${result.stalled.reason}`
          : 'nothing rendered'
      : result.outcome
        ? `${result.diffs.length} file${result.diffs.length === 1 ? '' : 's'} changed`
        : 'nothing applied';
  status.textContent = `${what} · ${errors ? `${errors} problem${errors === 1 ? '' : 's'} · ` : ''}${result.timeMs.toFixed(1)} ms`;
  status.className = `status ${errors ? 'status-error' : 'status-ok'}`;
  document.body.dataset.renders = String(Number(document.body.dataset.renders ?? 0) + 1);
  if (firstRender) {
    firstRender = false;
    performance.mark('first-render');
    document.body.dataset.firstRenderMs = performance.now().toFixed(1);
  }
}

// ---- keys ---------------------------------------------------------------------

const PANES = {
  set: [() => editors.pvs, () => (($('#tab-existing').getAttribute('aria-selected') === 'true') ? editors.existing : editors.cluster), () => $('#view-set .output [role=tab][aria-selected=true]')],
  variant: [() => editors.pv, () => (($('#tab-candidates').getAttribute('aria-selected') === 'true') ? editors.candidates : editors.pkg), () => $('#view-variant .output [role=tab][aria-selected=true]')],
};
let problemCursor = -1;

document.addEventListener('keydown', (e) => {
  if (e.altKey && !e.ctrlKey && !e.metaKey && ['1', '2', '3'].includes(e.key)) {
    e.preventDefault();
    PANES[view][Number(e.key) - 1]().focus();
  } else if (e.altKey && (e.key === 's' || e.key === 'v')) {
    e.preventDefault();
    selectTab($(e.key === 's' ? '#tab-set' : '#tab-variant'), { focus: true });
  } else if (e.altKey && e.key === 'e') {
    e.preventDefault();
    gallery.focus();
  } else if ((e.ctrlKey || e.metaKey) && e.key === 'Enter') {
    e.preventDefault();
    scheduleRender(0);
  } else if (e.key === 'F8') {
    e.preventDefault();
    if (!problems.length) return;
    problemCursor = (problemCursor + (e.shiftKey ? -1 : 1) + problems.length) % problems.length;
    revealProblem(problems[problemCursor]);
  }
});

// ---- start --------------------------------------------------------------------

performance.mark('page-ready');
await loadFromHash();
try {
  core = await import('../build/core/porch-variants.js');
  performance.mark('component-loaded');
  $('#version').textContent = core.version();
} catch (e) {
  status.textContent = `The component could not be loaded: ${e.message}`;
  status.className = 'status status-error';
  throw e;
}
render();
