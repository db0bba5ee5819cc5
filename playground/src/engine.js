// The playground's logic, free of the DOM: reads the panes' YAML, calls the
// component's exports and maps what they answer (objects, plans, errors)
// to things the page shows, with errors located in the panes' text.
//
// `core` is the transpiled component (`build/core/porch-variants.js`): a
// `result<T, E>` export returns T or throws an error whose `payload` is E.

import { LineCounter, isAlias, isMap, isSeq, parseAllDocuments, parseDocument, stringify } from 'yaml';

const PACKAGE_REVISION = 'porch.kpt.dev/v1alpha1/PackageRevision';
const REPOSITORY = 'config.porch.kpt.dev/v1alpha1/Repository';
const PACKAGE_VARIANT_SET_KIND = 'PackageVariantSet';

/**
 * A multi-document YAML pane read into objects.
 * @param {string} text
 * @param {string} pane name of the pane, for problems
 * @returns {{docs: {object: any, line: number}[], problems: Problem[]}}
 */
export function readDocs(text, pane) {
  const lineCounter = new LineCounter();
  const docs = [];
  const problems = [];
  for (const doc of parseAllDocuments(text, { lineCounter, prettyErrors: true })) {
    for (const e of doc.errors) {
      problems.push(yamlProblem(pane, e));
    }
    if (doc.errors.length) continue;
    const object = doc.toJS({ maxAliasCount: 1000 });
    if (object === null || object === undefined) continue;
    const start = doc.contents?.range?.[0] ?? 0;
    docs.push({ object, line: lineCounter.linePos(start).line });
  }
  return { docs, problems };
}

function yamlProblem(pane, e) {
  const line = e.linePos?.[0]?.line ?? null;
  const message = String(e.message).split('\n')[0];
  return { pane, line, path: null, severity: 'error', message: `YAML: ${message}` };
}

/**
 * @typedef {object} Problem
 * @property {string} pane the pane the problem is in (`pvs`, `cluster`, ...)
 * @property {number|null} line 1-based line in that pane, when known
 * @property {number|null} [endLine]
 * @property {string|null} path field path (`spec.targets[0].template...`)
 * @property {'error'|'warning'|'info'} severity
 * @property {string} message
 */

/** `apiVersion/kind` of an object. */
function gvk(o) {
  return `${o?.apiVersion ?? ''}/${o?.kind ?? ''}`;
}

/**
 * Sorts the cluster pane's objects as the render input takes them.
 * @param {{object: any, line: number}[]} docs
 */
export function classifyCluster(docs) {
  const revisions = [];
  const repositories = [];
  const objects = [];
  const kinds = new Map();
  for (const d of docs) {
    const key = gvk(d.object);
    if (key === PACKAGE_REVISION) revisions.push(d);
    else if (key === REPOSITORY) repositories.push(d);
    else {
      objects.push(d);
      kinds.set(key, { apiVersion: d.object.apiVersion ?? '', kind: d.object.kind ?? '' });
    }
  }
  return { revisions, repositories, objects, kinds: [...kinds.values()] };
}

/**
 * The first `spec...` field path a message names, as upstream's messages
 * start with or contain it (`spec.targets[0].repositories[1].name cannot
 * be empty`).
 * @param {string} message
 * @returns {string|null}
 */
export function fieldFromMessage(message) {
  const word = String(message)
    .split(/\s+/)
    .find((w) => w === 'spec' || w.startsWith('spec.') || w.startsWith('spec['));
  return word ? word.replace(/[:,;`'"]+$/, '').replace(/^[`'"]+/, '') : null;
}

/**
 * Splits `spec.targets[0].template.labelExprs[1].valueExpr` into keys and
 * indices.
 * @param {string} path
 * @returns {(string|number)[]}
 */
export function splitPath(path) {
  const out = [];
  for (const part of path.split('.')) {
    const m = /^([^[\]]*)((?:\[\d+\])*)$/.exec(part);
    if (!m) {
      out.push(part);
      continue;
    }
    if (m[1]) out.push(m[1]);
    for (const idx of m[2].matchAll(/\[(\d+)\]/g)) out.push(Number(idx[1]));
  }
  return out;
}

/**
 * Where a field path is in a YAML document: the lines of the deepest node
 * of the path that exists (the key's line through the value's last line).
 * Keys match exactly, else ignoring case (upstream writes
 * `objectselector`); aliases resolve to their anchor.
 * @param {string} text the YAML (first document)
 * @param {string} path
 * @returns {{line: number, endLine: number, exact: boolean}|null}
 */
export function locate(text, path) {
  const lineCounter = new LineCounter();
  let doc;
  try {
    doc = parseDocument(text, { lineCounter });
  } catch {
    return null;
  }
  const resolve = (n) => (isAlias(n) ? n.resolve(doc) : n);
  let node = resolve(doc.contents);
  let found = null;
  const segments = splitPath(path);
  let depth = 0;
  for (const seg of segments) {
    let next = null;
    let keyNode = null;
    if (typeof seg === 'number' && isSeq(node)) {
      next = node.items[seg] ?? null;
      keyNode = next;
    } else if (typeof seg === 'string' && isMap(node)) {
      const keyOf = (p) => String(p.key?.value ?? p.key);
      const pair =
        node.items.find((p) => keyOf(p) === seg) ??
        node.items.find((p) => keyOf(p).toLowerCase() === seg.toLowerCase());
      if (pair) {
        next = pair.value;
        keyNode = pair.key;
      }
    }
    if (!keyNode) break;
    depth += 1;
    const start = keyNode.range?.[0];
    const valueEnd = resolve(next)?.range?.[1] ?? keyNode.range?.[1];
    if (start !== undefined) {
      const line = lineCounter.linePos(start).line;
      // The range ends after the node's last character (a newline for a
      // block): step back so the last line is the node's own.
      const endLine = Math.max(line, lineCounter.linePos(Math.max(start, (valueEnd ?? start) - 1)).line);
      found = { line, endLine };
    }
    node = resolve(next);
  }
  return found ? { ...found, exact: depth === segments.length } : null;
}

/** Builds a problem on the set pane from a message naming a field. */
function setProblem(pvsText, message, path, severity = 'error') {
  const where = path ? locate(pvsText, path) : null;
  return {
    pane: 'pvs',
    line: where?.line ?? null,
    endLine: where?.endLine ?? null,
    path,
    severity,
    message,
  };
}

/** The error an export threw, as its WIT error payload or a message. */
function payloadOf(e) {
  if (e && typeof e === 'object' && 'payload' in e) return e.payload;
  throw e;
}

/**
 * The field a render failure is about.
 * @param {{reason: string, message: string, targetIndex?: number}} failure
 */
export function failurePath(failure) {
  const { reason, message, targetIndex } = failure;
  if (targetIndex !== undefined && targetIndex !== null) {
    const target = `spec.targets[${targetIndex}]`;
    const field = /^(template[^\s:]*):/.exec(message);
    if (field) return `${target}.${field[1]}`;
    if (/^repository .* could not be loaded/.test(message)) return `${target}.template.downstream`;
    return target;
  }
  if (reason === 'UpstreamNotFound' || /upstream/i.test(message.split(':')[0])) {
    return fieldFromMessage(message) ?? 'spec.upstream';
  }
  const named = fieldFromMessage(message);
  if (named) return named;
  const idx = /target(?:s\[| )(\d+)/i.exec(message);
  return idx ? `spec.targets[${idx[1]}]` : 'spec.targets';
}

/**
 * A failure about `spec.targets` narrowed to the target it names: upstream's
 * unroll errors name the kind or GroupVersion of an `objectSelector`, not
 * its index.
 * @param {any} pvs the set
 * @param {string} message
 * @param {string} path what {@link failurePath} found
 */
export function refineTargetPath(pvs, message, path) {
  if (path !== 'spec.targets') return path;
  const targets = Array.isArray(pvs?.spec?.targets) ? pvs.spec.targets : [];
  const kind = /no matches for kind "([^"]*)" in version "([^"]*)"/.exec(message);
  if (kind) {
    const i = targets.findIndex((t) => t?.objectSelector?.kind === kind[1]);
    if (i >= 0) return `spec.targets[${i}].objectSelector.kind`;
  }
  const gv = /unexpected GroupVersion string: (.*)$/.exec(message);
  if (gv) {
    const i = targets.findIndex((t) => t?.objectSelector?.apiVersion === gv[1]);
    if (i >= 0) return `spec.targets[${i}].objectSelector.apiVersion`;
  }
  return path;
}

/**
 * Where an `invalid-input` message points: `repositories[3]: ...` names the
 * fourth Repository given, which is some document of the cluster pane.
 */
function inputProblem(message, lists, pvsText) {
  const m = /^([a-z-]+)(?:\[(\d+)\])?: /.exec(message);
  const list = m ? lists[m[1]] : null;
  if (list && m[2] !== undefined) {
    const d = list.docs[Number(m[2])];
    return { pane: list.pane, line: d?.line ?? null, path: null, severity: 'error', message };
  }
  if (m && m[1] === 'package-variant-set') return setProblem(pvsText, message, null);
  return { pane: list?.pane ?? 'pvs', line: null, path: null, severity: 'error', message };
}

/** Multi-document YAML of objects. */
export function toYaml(objects) {
  return objects.map((o) => stringify(o, { lineWidth: 0 })).join('---\n');
}

/**
 * Renders the set of the Set tab.
 * @param {any} core the transpiled component
 * @param {{pvs: string, cluster: string, existing: string}} input the panes
 */
export function renderSet(core, input) {
  const started = performance.now();
  const problems = [];
  const set = readDocs(input.pvs, 'pvs');
  const cluster = readDocs(input.cluster, 'cluster');
  const existing = readDocs(input.existing, 'existing');
  problems.push(...set.problems, ...cluster.problems, ...existing.problems);
  const result = { problems, packageVariants: [], plan: null, conditions: [], stats: null, stalled: null };
  const finish = () => ({ ...result, timeMs: performance.now() - started });
  if (set.problems.length) return finish();
  if (set.docs.length !== 1 || set.docs[0].object?.kind !== PACKAGE_VARIANT_SET_KIND) {
    problems.push({
      pane: 'pvs',
      line: set.docs[1]?.line ?? 1,
      path: null,
      severity: 'error',
      message: `expected one ${PACKAGE_VARIANT_SET_KIND} document, found ${
        set.docs.length === 1 ? `a ${set.docs[0].object?.kind ?? 'document without kind'}` : `${set.docs.length} documents`
      }`,
    });
    return finish();
  }
  if (cluster.problems.length || existing.problems.length) return finish();
  const pvsJson = JSON.stringify(set.docs[0].object);

  let messages;
  try {
    messages = core.validatePackageVariantSet(pvsJson);
  } catch (e) {
    problems.push(setProblem(input.pvs, String(payloadOf(e)), null));
    return finish();
  }
  if (messages.length) {
    for (const m of messages) problems.push(setProblem(input.pvs, m, fieldFromMessage(m)));
    result.stalled = { reason: 'ValidationError', message: messages.join('; ') };
    return finish();
  }

  const classes = classifyCluster(cluster.docs);
  const lists = {
    'upstream-revisions': { pane: 'cluster', docs: classes.revisions },
    repositories: { pane: 'cluster', docs: classes.repositories },
    'target-objects': { pane: 'cluster', docs: classes.objects },
    existing: { pane: 'existing', docs: existing.docs },
  };
  const json = (docs) => docs.map((d) => JSON.stringify(d.object));
  let outcome;
  try {
    outcome = core.renderPackageVariantSet({
      packageVariantSet: pvsJson,
      upstreamRevisions: json(classes.revisions),
      repositories: json(classes.repositories),
      targetKinds: classes.kinds,
      targetObjects: json(classes.objects),
      existing: json(existing.docs),
      downstreamRevisions: [],
      limits: undefined,
    });
  } catch (e) {
    const err = payloadOf(e);
    if (err.tag === 'stalled') {
      const f = err.val;
      result.stalled = { reason: f.reason, message: f.message };
      result.conditions = f.conditions;
      problems.push(setProblem(input.pvs, f.message, refineTargetPath(set.docs[0].object, f.message, failurePath(f))));
    } else {
      problems.push(inputProblem(String(err.val), lists, input.pvs));
    }
    return finish();
  }
  const parse = (list) => list.map((s) => JSON.parse(s));
  result.packageVariants = parse(outcome.packageVariants);
  result.plan = {
    create: parse(outcome.plan.create),
    update: parse(outcome.plan.update),
    delete: parse(outcome.plan.delete),
    unchanged: outcome.plan.unchanged,
    foreign: outcome.plan.foreign,
    duplicates: outcome.plan.duplicates,
  };
  result.existing = existing.docs.map((d) => d.object);
  result.conditions = outcome.conditions;
  result.stats = outcome.stats;
  result.rollout = outcome.rollout ? JSON.parse(outcome.rollout) : null;
  return finish();
}

/** The files of the package pane: `==> path <==` lines start a file. */
export function readPackage(text) {
  const files = [];
  let current = null;
  for (const line of text.split('\n')) {
    const m = /^==>\s*(.+?)\s*<==\s*$/.exec(line);
    if (m) {
      current = { path: m[1], lines: [] };
      files.push(current);
    } else if (current) {
      current.lines.push(line);
    }
  }
  return files.map((f) => {
    // Drop the blank lines that separate files.
    while (f.lines.length && f.lines[f.lines.length - 1] === '') f.lines.pop();
    return { path: f.path, content: f.lines.length ? `${f.lines.join('\n')}\n` : '' };
  });
}

/** The package pane's text of files. */
export function writePackage(files) {
  return files.map((f) => `==> ${f.path} <==\n${f.content}`).join('\n');
}

/**
 * Applies the Variant tab's PackageVariant to its package.
 * @param {any} core
 * @param {{pv: string, pkg: string, candidates: string}} input
 */
export function applyVariant(core, input) {
  const started = performance.now();
  const problems = [];
  const pv = readDocs(input.pv, 'pv');
  const candidates = readDocs(input.candidates, 'candidates');
  problems.push(...pv.problems, ...candidates.problems);
  const result = { problems, outcome: null, diffs: [] };
  const finish = () => ({ ...result, timeMs: performance.now() - started });
  if (problems.length) return finish();
  if (pv.docs.length !== 1) {
    problems.push({ pane: 'pv', line: 1, path: null, severity: 'error', message: 'expected one PackageVariant document' });
    return finish();
  }
  const files = readPackage(input.pkg);
  if (!files.length) {
    problems.push({ pane: 'pkg', line: 1, path: null, severity: 'error', message: 'no files: start each file with a line `==> path <==`' });
    return finish();
  }
  const pvJson = JSON.stringify(pv.docs[0].object);
  let messages;
  try {
    messages = core.validatePackageVariant(pvJson);
  } catch (e) {
    problems.push({ pane: 'pv', line: null, path: null, severity: 'error', message: String(payloadOf(e)) });
    return finish();
  }
  for (const m of messages) {
    const path = fieldFromMessage(m);
    const where = path ? locate(input.pv, path) : null;
    problems.push({ pane: 'pv', line: where?.line ?? null, endLine: where?.endLine ?? null, path, severity: 'error', message: m });
  }
  if (messages.length) return finish();
  const meta = pv.docs[0].object.metadata ?? {};
  let outcome;
  try {
    outcome = core.applyMutations({
      packageVariant: pvJson,
      namespace: meta.namespace ?? '',
      name: `${pv.docs[0].object.spec?.downstream?.repo ?? 'downstream'}.${meta.name ?? 'package'}`,
      files,
      candidates: candidates.docs.map((d) => JSON.stringify(d.object)),
    });
  } catch (e) {
    const err = payloadOf(e);
    problems.push({ pane: 'pv', line: null, path: null, severity: 'error', message: String(err.val ?? err) });
    return finish();
  }
  result.outcome = outcome;
  for (const r of outcome.results) {
    for (const m of r.errors) {
      problems.push({ pane: 'pkg', line: null, path: null, severity: r.required ? 'error' : 'warning', message: `${r.file}: ${r.kind} ${r.name}: ${m}` });
    }
  }
  const rendered = renderPackage(core, outcome.files);
  result.render = rendered.render;
  if (rendered.render.pending) {
    problems.push({
      pane: 'pkg',
      line: null,
      path: null,
      severity: 'warning',
      message: `not rendered: ${rendered.render.pending} is not a builtin function (the playground runs ${BUILTINS.join(', ')})`,
    });
  } else if (rendered.render.failure) {
    const f = rendered.render.failure;
    problems.push({ pane: 'pkg', line: null, path: null, severity: 'error', message: `render failed: ${f.detail || f.message}` });
  }
  const before = new Map(files.map((f) => [f.path, f.content]));
  const after = new Map(rendered.files.map((f) => [f.path, f.content]));
  for (const path of [...new Set([...before.keys(), ...after.keys()])].sort()) {
    const a = before.get(path) ?? '';
    const b = after.get(path) ?? '';
    if (a !== b) result.diffs.push({ path, status: !before.has(path) ? 'added' : !after.has(path) ? 'deleted' : 'modified', lines: lineDiff(a, b) });
  }
  return finish();
}

/** The functions the core runs itself (any tag of these catalog names). */
export const BUILTINS = ['set-namespace', 'set-labels', 'set-annotations', 'apply-replacements'];

/** kpt's default catalog prefix for images named without a registry. */
export const IMAGE_PREFIX = 'ghcr.io/kptdev/krm-functions-catalog';

/**
 * kpt's render of `files` as Porch renders a draft after its resources
 * change, with the core's builtin functions. A function that is not a
 * builtin cannot run in the browser: the files come back unrendered with
 * `render.pending` naming it.
 * @param {any} core
 * @param {{path: string, content: string}[]} files
 */
export function renderPackage(core, files) {
  const step = core.renderPackage({
    files,
    options: { allowExec: false, imagePrefix: IMAGE_PREFIX, rootPath: '/', eval: undefined, functionConfigs: undefined },
    answers: [],
  });
  if (step.tag !== 'done') {
    return { files, render: { pending: step.val.image || step.val.exec || 'a function' } };
  }
  const done = step.val;
  return {
    files: done.files,
    render: { summary: done.summary, log: done.log, failure: done.failure ?? null, resultsYaml: done.resultsYaml },
  };
}

/**
 * A line diff (longest common subsequence), as `{op, text}` with op one of
 * `' '`, `'-'`, `'+'`.
 * @param {string} a
 * @param {string} b
 */
export function lineDiff(a, b) {
  const x = a === '' ? [] : a.replace(/\n$/, '').split('\n');
  const y = b === '' ? [] : b.replace(/\n$/, '').split('\n');
  const n = x.length;
  const m = y.length;
  // Trim the common head and tail: most edits are small.
  let head = 0;
  while (head < n && head < m && x[head] === y[head]) head++;
  let tail = 0;
  while (tail < n - head && tail < m - head && x[n - 1 - tail] === y[m - 1 - tail]) tail++;
  const xs = x.slice(head, n - tail);
  const ys = y.slice(head, m - tail);
  const out = x.slice(0, head).map((text) => ({ op: ' ', text }));
  if (xs.length * ys.length > 4_000_000) {
    out.push(...xs.map((text) => ({ op: '-', text })), ...ys.map((text) => ({ op: '+', text })));
  } else {
    const w = ys.length + 1;
    const lcs = new Uint32Array((xs.length + 1) * w);
    for (let i = xs.length - 1; i >= 0; i--) {
      for (let j = ys.length - 1; j >= 0; j--) {
        lcs[i * w + j] = xs[i] === ys[j] ? lcs[(i + 1) * w + j + 1] + 1 : Math.max(lcs[(i + 1) * w + j], lcs[i * w + j + 1]);
      }
    }
    let i = 0;
    let j = 0;
    while (i < xs.length || j < ys.length) {
      if (i < xs.length && j < ys.length && xs[i] === ys[j]) {
        out.push({ op: ' ', text: xs[i] });
        i++;
        j++;
      } else if (i < xs.length && (j === ys.length || lcs[(i + 1) * w + j] >= lcs[i * w + j + 1])) {
        out.push({ op: '-', text: xs[i++] });
      } else {
        out.push({ op: '+', text: ys[j++] });
      }
    }
  }
  out.push(...x.slice(n - tail).map((text) => ({ op: ' ', text })));
  return out;
}
