// End-to-end test of the playground in a real browser: Debian's Chromium
// driven by playwright-core, against the page served on 127.0.0.1.
//
//   node tests/e2e.mjs [--out DIR]
//
// Needs build/ (scripts/playground.sh --build-only, or node build.mjs).
// Screenshots go to DIR (default: <repo>/target/playground-e2e/). Prints
// the first-render time and one line per check; exits non-zero when a
// check fails. Environment: CHROMIUM (default /usr/bin/chromium).

import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { startServer } from '../serve.mjs';

const started = performance.now();
const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, '..');
const outArg = process.argv.indexOf('--out');
const outDir = resolve(outArg > 0 ? process.argv[outArg + 1] : join(root, '..', 'target', 'playground-e2e'));
const executablePath = process.env.CHROMIUM ?? '/usr/bin/chromium';
const FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
const TIMEOUT_MS = 10_000;

let passed = 0;
let failed = 0;

/** Runs one named check; a failure is reported and counted, not thrown. */
async function check(name, fn) {
  const t = performance.now();
  try {
    await fn();
    passed += 1;
    console.log(`ok   ${name} (${(performance.now() - t).toFixed(0)} ms)`);
  } catch (e) {
    failed += 1;
    console.log(`FAIL ${name}: ${e.message}`);
  }
}

function assert(cond, message) {
  if (!cond) throw new Error(message);
}

function assertEqual(actual, expected, what) {
  const a = JSON.stringify(actual);
  const b = JSON.stringify(expected);
  if (a !== b) throw new Error(`${what}: expected ${b}, got ${a}`);
}

for (const [what, path] of [
  ['the browser', executablePath],
  ['the transpiled component', join(root, 'build', 'core', 'porch-variants.js')],
  ['the gallery', join(root, 'build', 'examples.js')],
]) {
  if (!existsSync(path)) {
    console.error(`e2e: ${what} is missing (${path}); run scripts/setup.sh and scripts/playground.sh --build-only`);
    process.exit(2);
  }
}

mkdirSync(outDir, { recursive: true });
const profile = mkdtempSync(join(tmpdir(), 'pv-playground-chromium-'));
const { server, url } = await startServer({ port: 0 });
let context;
try {
  context = await chromium.launchPersistentContext(profile, {
    executablePath,
    headless: true,
    args: FLAGS,
    viewport: { width: 1440, height: 900 },
    timeout: 30_000,
  });
  const page = context.pages()[0] ?? (await context.newPage());
  page.setDefaultTimeout(TIMEOUT_MS);
  const pageErrors = [];
  page.on('pageerror', (e) => pageErrors.push(e.message));
  page.on('console', (m) => {
    if (m.type() === 'error') pageErrors.push(m.text());
  });

  const names = () => page.$$eval('[data-testid=pv-name]', (els) => els.map((e) => e.textContent));
  const waitForNames = async (predicate, what) => {
    try {
      await page.waitForFunction(
        (src) => new Function('names', `return (${src})(names)`)([...document.querySelectorAll('[data-testid=pv-name]')].map((e) => e.textContent)),
        predicate.toString(),
        { timeout: TIMEOUT_MS },
      );
    } catch {
      throw new Error(`${what}; names now: ${JSON.stringify(await names())}`);
    }
  };
  /** Selects `needle` (the `nth` occurrence) in an editor, then types `text` over it. */
  const typeOver = async (editorId, needle, text, nth = 0) => {
    const found = await page.evaluate(
      ({ editorId, needle, nth }) => {
        const ta = document.getElementById(editorId);
        let at = -1;
        for (let i = 0; i <= nth; i++) {
          at = ta.value.indexOf(needle, at + 1);
          if (at < 0) return false;
        }
        ta.focus();
        ta.setSelectionRange(at, at + needle.length);
        return true;
      },
      { editorId, needle, nth },
    );
    assert(found, `${JSON.stringify(needle)} is not in #${editorId}`);
    await page.keyboard.type(text, { delay: 5 });
  };
  /**
   * Opens the page at `target` as a new document. Going to a URL that differs
   * from the current one only in its hash is a same-document navigation: the
   * old page (already rendered) would stay until its hashchange handler ran,
   * and a check could read the previous example's editors.
   */
  const openFresh = async (target) => {
    await page.goto('about:blank');
    await page.goto(target, { waitUntil: 'load' });
    await page.waitForSelector('body[data-first-render-ms]', { timeout: 15_000 });
  };
  const pad = (n) => String(n).padStart(2, '0');

  let firstRenderMs = NaN;
  let warmRenderMs = NaN;
  await check('loads the fleet example and renders its 20 PackageVariants', async () => {
    await openFresh(`${url}#example=fleet`);
    firstRenderMs = await page.evaluate(() => performance.getEntriesByName('first-render')[0]?.startTime ?? NaN);
    assert(Number.isFinite(firstRenderMs), 'no first-render mark');
    const expected = Array.from({ length: 20 }, (_, i) => `web-fleet-edge-${pad(i + 1)}-web`);
    assertEqual(await names(), expected, 'PackageVariant names');
    assert(await page.isVisible('[data-testid=no-problems]'), 'problems are shown for a valid set');
    const version = await page.textContent('#version');
    assert(/^porch-variants-core \d+\.\d+\.\d+/.test(version), `version shown: ${version}`);
  });

  await check('the fleet example shows its rollout steps and the children in each', async () => {
    const steps = await page.$$eval('#rollout-steps tbody tr', (rows) => rows.map((r) => r.dataset.step));
    assertEqual(steps, ['us-west1', 'everyone'], 'rollout steps');
    const first = await page.textContent('#rollout-steps tbody tr[data-step="us-west1"]');
    assert(first.includes('web-fleet-edge-01-web'), `us-west1 step: ${first}`);
    assert(!first.includes('web-fleet-edge-02-web'), `edge-02 is in eu-west1: ${first}`);
  });

  await check('a template edit renames the PackageVariants it generates', async () => {
    // The shared template (&template) of targets 0 and 1: edge-01..13.
    await typeOver('ed-pvs', `packageExpr: "'web'"`, `packageExpr: "'shop-' + repository.labels.region"`);
    const expected = (n) => `web-fleet-edge-${pad(n)}-${n <= 13 ? `shop-${['us-west1', 'eu-west1', 'asia-east1', 'us-east1'][(n - 1) % 4]}` : 'web'}`;
    await waitForNames(
      (ns) => ns.length === 20 && ns[0] !== 'web-fleet-edge-01-web',
      'the names did not change after the edit',
    );
    assertEqual(await names(), Array.from({ length: 20 }, (_, i) => expected(i + 1)), 'PackageVariant names after the edit');
    await page.screenshot({ path: join(outDir, 'render.png') });
  });

  await check('the edited template is kept in the URL and restored from it', async () => {
    await page.waitForFunction(() => location.hash.startsWith('#s='), null, { timeout: TIMEOUT_MS });
    const shared = page.url();
    const before = await names();
    await openFresh(shared);
    warmRenderMs = await page.evaluate(() => performance.getEntriesByName('first-render')[0]?.startTime ?? NaN);
    assertEqual(await names(), before, 'names after reloading the shared link');
  });

  await check('a broken CEL expression is reported at its field, its line marked', async () => {
    await typeOver('ed-pvs', `valueExpr: target.annotations['fleet.example.com/owner']`, `valueExpr: target.annotations['fleet.example.com/owner'`);
    await page.waitForSelector('[data-testid=problem-path]', { timeout: TIMEOUT_MS });
    const paths = await page.$$eval('[data-testid=problem-path]', (els) => els.map((e) => e.textContent));
    assertEqual(paths, ['spec.targets[2].template.annotationExprs[0].valueExpr'], 'problem field paths');
    const message = await page.textContent('[data-testid=problem] .problem-msg');
    assert(/Syntax error/.test(message), `problem message: ${message}`);
    const marked = await page.$$eval('#ed-pvs-host .gutter-lines .mark-error', (els) => els.map((e) => Number(e.textContent)));
    const line = await page.evaluate(
      () => document.getElementById('ed-pvs').value.split('\n').findIndex((l) => l.includes("target.annotations['fleet.example.com/owner'")) + 1,
    );
    assertEqual(marked, [line], 'marked lines of the PackageVariantSet pane');
    assertEqual(await names(), [], 'names of a stalled set');
    assert(/stalled/.test(await page.textContent('#status')), 'status says stalled');
    // The problem takes the cursor to its line.
    await page.click('[data-testid=problem]');
    const caretLine = await page.evaluate(() => {
      const ta = document.getElementById('ed-pvs');
      return ta.value.slice(0, ta.selectionStart).split('\n').length;
    });
    assertEqual(caretLine, line, 'line selected by clicking the problem');
    await page.screenshot({ path: join(outDir, 'cel-error.png') });
  });

  await check('a validation error names its field', async () => {
    await openFresh(`${url}#example=sample`);
    await typeOver('ed-pvs', 'kind: Team', 'kind: ""');
    await page.waitForSelector('[data-testid=problem-path]', { timeout: TIMEOUT_MS });
    const paths = await page.$$eval('[data-testid=problem-path]', (els) => els.map((e) => e.textContent));
    assertEqual(paths, ['spec.targets[2].objectselector.kind'], 'problem field paths');
    // F8 takes the keyboard to the problem's line.
    await page.keyboard.press('Alt+3');
    await page.keyboard.press('F8');
    const at = await page.evaluate(() => {
      const ta = document.activeElement;
      return ta?.id === 'ed-pvs' ? ta.value.slice(ta.selectionStart, ta.selectionEnd) : `focus on ${ta?.id || ta?.tagName}`;
    });
    assertEqual(at.trim(), 'kind: ""', 'line selected by F8');
  });

  await check('the PackageVariant tab applies team-a to the blueprint and shows the diff', async () => {
    await openFresh(`${url}#example=team-a`);
    assert(await page.isVisible('#view-variant'), 'the variant view is shown');
    const added = await page.$$eval('#out-diff .d-add', (els) => els.map((e) => e.textContent).join('\n'));
    assert(added.includes('set-namespace'), 'the pipeline mutator is added');
    assert(added.includes('us-east1'), 'the region is injected');
    const injected = await page.textContent('#out-injection');
    assert(injected.includes('us-east1-endpoints'), 'the injected ConfigMap is listed');
    // Rendered after mutating: the prepended set-namespace ran in the browser.
    assert(added.includes('namespace: team-a'), 'the resources are rendered into the namespace');
    const summary = await page.textContent('#out-render-summary');
    assert(/Successfully executed \d+ function\(s\)/.test(summary), `render summary: ${summary}`);
    await page.screenshot({ path: join(outDir, 'variant.png') });
  });

  await check('no errors in the browser console', async () => {
    assertEqual(pageErrors, [], 'console errors');
  });

  console.log(
    `first render (navigation start to the first output rendered): ${firstRenderMs.toFixed(0)} ms in a fresh profile, ${warmRenderMs.toFixed(0)} ms on reload`,
  );
} catch (e) {
  failed += 1;
  console.log(`FAIL e2e setup: ${e.stack ?? e}`);
} finally {
  await context?.close();
  server.close();
  rmSync(profile, { recursive: true, force: true });
}
console.log(`screenshots: ${outDir}`);
console.log(`e2e runtime: ${((performance.now() - started) / 1000).toFixed(1)} s`);
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
