// Unit tests of the playground's logic that needs no browser and no
// component: field paths, locating them in YAML, diffs, package files, the
// server's path rules. Run: node --test tests/unit.test.mjs

import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import {
  classifyCluster,
  failurePath,
  fieldFromMessage,
  lineDiff,
  locate,
  readDocs,
  readPackage,
  refineTargetPath,
  splitPath,
  writePackage,
} from '../src/engine.js';
import { MIME, resolvePath } from '../serve.mjs';

const SET = `apiVersion: config.porch.kpt.dev/v1alpha2
kind: PackageVariantSet
metadata:
  name: s
spec:
  upstream:
    repo: r
  targets:
  - repositories:
    - name: a
    template: &t
      downstream:
        packageExpr: "'web'"
      labelExprs:
      - key: k
        valueExpr: >-
          repository.name
          + 'x'
  - objectSelector:
      apiVersion: v1
      kind: ""
    template: *t
`;

test('fieldFromMessage takes the first spec path of a message', () => {
  assert.equal(fieldFromMessage('spec.targets[0].repositories[1].name cannot be empty'), 'spec.targets[0].repositories[1].name');
  assert.equal(
    fieldFromMessage('either spec.upstream.revision or spec.upstream.workspaceName must be specified'),
    'spec.upstream.revision',
  );
  assert.equal(fieldFromMessage('spec.targets[1] must specify one of `repositories`'), 'spec.targets[1]');
  assert.equal(fieldFromMessage('must specify at least one item in spec.targets'), 'spec.targets');
  assert.equal(fieldFromMessage('nothing here'), null);
});

test('splitPath splits keys and indices', () => {
  assert.deepEqual(splitPath('spec.targets[0].template.labelExprs[12].valueExpr'), [
    'spec',
    'targets',
    0,
    'template',
    'labelExprs',
    12,
    'valueExpr',
  ]);
});

test('locate finds a field, through an alias, and a multi-line value', () => {
  assert.deepEqual(locate(SET, 'spec.targets[0].template.downstream.packageExpr'), { line: 13, endLine: 13, exact: true });
  // target 1's template is an alias of target 0's: the anchor's lines.
  assert.deepEqual(locate(SET, 'spec.targets[1].template.downstream.packageExpr'), { line: 13, endLine: 13, exact: true });
  assert.deepEqual(locate(SET, 'spec.targets[0].template.labelExprs[0].valueExpr'), { line: 16, endLine: 18, exact: true });
  // Upstream's messages spell objectSelector in lower case.
  assert.deepEqual(locate(SET, 'spec.targets[1].objectselector.kind'), { line: 21, endLine: 21, exact: true });
});

test('locate falls back to the deepest existing ancestor', () => {
  assert.deepEqual(locate(SET, 'spec.upstream.revision'), { line: 6, endLine: 7, exact: false });
  assert.equal(locate(SET, 'status.conditions'), null);
});

test('failurePath maps render failures to fields', () => {
  assert.equal(
    failurePath({ reason: 'UnexpectedError', message: "template.labelExprs[0].valueExpr: ERROR: <input>:1:5: x", targetIndex: 2 }),
    'spec.targets[2].template.labelExprs[0].valueExpr',
  );
  assert.equal(
    failurePath({ reason: 'UnexpectedError', message: 'repository "edge-9" could not be loaded', targetIndex: 1 }),
    'spec.targets[1].template.downstream',
  );
  assert.equal(failurePath({ reason: 'UpstreamNotFound', message: 'no upstream package revision found' }), 'spec.upstream');
});

test('refineTargetPath finds the objectSelector an unroll error names', () => {
  const pvs = { spec: { targets: [{ repositories: [] }, { objectSelector: { apiVersion: 'hr.bigco.com/v1', kind: 'Team' } }] } };
  assert.equal(
    refineTargetPath(pvs, 'no matches for kind "Team" in version "hr.bigco.com/v1"', 'spec.targets'),
    'spec.targets[1].objectSelector.kind',
  );
  assert.equal(
    refineTargetPath(pvs, 'unexpected GroupVersion string: hr.bigco.com/v1', 'spec.targets'),
    'spec.targets[1].objectSelector.apiVersion',
  );
  assert.equal(refineTargetPath(pvs, 'no matches for kind "Pod" in version "v1"', 'spec.targets'), 'spec.targets');
  assert.equal(refineTargetPath(pvs, 'anything', 'spec.upstream'), 'spec.upstream');
});

test('readDocs reads documents with their lines and reports YAML errors at theirs', () => {
  const ok = readDocs('a: 1\n---\n# c\nb: 2\n', 'cluster');
  assert.deepEqual(ok.problems, []);
  assert.deepEqual(
    ok.docs.map((d) => [d.object, d.line]),
    [
      [{ a: 1 }, 1],
      [{ b: 2 }, 4],
    ],
  );
  const bad = readDocs('a: 1\nb: [\n', 'pvs');
  assert.equal(bad.problems.length > 0, true);
  assert.equal(bad.problems[0].pane, 'pvs');
  assert.equal(bad.problems[0].line >= 2, true, `line ${bad.problems[0].line}`);
});

test('classifyCluster sorts revisions, repositories and target objects', () => {
  const docs = [
    { apiVersion: 'porch.kpt.dev/v1alpha1', kind: 'PackageRevision' },
    { apiVersion: 'config.porch.kpt.dev/v1alpha1', kind: 'Repository' },
    { apiVersion: 'v1', kind: 'ConfigMap' },
    { apiVersion: 'v1', kind: 'ConfigMap' },
    { apiVersion: 'hr.bigco.com/v1', kind: 'Team' },
  ].map((object, line) => ({ object, line }));
  const c = classifyCluster(docs);
  assert.equal(c.revisions.length, 1);
  assert.equal(c.repositories.length, 1);
  assert.equal(c.objects.length, 3);
  assert.deepEqual(c.kinds, [
    { apiVersion: 'v1', kind: 'ConfigMap' },
    { apiVersion: 'hr.bigco.com/v1', kind: 'Team' },
  ]);
});

test('lineDiff is a minimal line diff', () => {
  const d = lineDiff('a\nb\nc\n', 'a\nB\nc\nd\n');
  assert.deepEqual(
    d.map((l) => `${l.op}${l.text}`),
    [' a', '-b', '+B', ' c', '+d'],
  );
  assert.deepEqual(lineDiff('', 'x\n'), [{ op: '+', text: 'x' }]);
  assert.deepEqual(lineDiff('same\n', 'same\n'), [{ op: ' ', text: 'same' }]);
});

test('package files round-trip through the pane text', () => {
  const files = [
    { path: 'Kptfile', content: 'kind: Kptfile\n' },
    { path: 'sub/cm.yaml', content: 'a: 1\n---\nb: 2\n' },
  ];
  assert.deepEqual(readPackage(writePackage(files)), files);
  assert.deepEqual(readPackage('no marker\n'), []);
});

test('the server serves only the page, its sources and build/', () => {
  const root = '/srv/pg';
  assert.equal(resolvePath('/', root), join(root, 'index.html'));
  assert.equal(resolvePath('/src/main.js?x=1', root), join(root, 'src/main.js'));
  assert.equal(resolvePath('/build/core/porch-variants.core.wasm', root), join(root, 'build/core/porch-variants.core.wasm'));
  for (const bad of ['/node_modules/yaml/package.json', '/../etc/passwd', '/build/../serve.mjs', '/%2e%2e/x', '/src', '/tests/e2e.mjs', '/%zz']) {
    assert.equal(resolvePath(bad, root), null, bad);
  }
  assert.equal(MIME['.wasm'], 'application/wasm');
  assert.match(MIME['.js'], /^text\/javascript/);
});
