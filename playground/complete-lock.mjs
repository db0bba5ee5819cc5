// Completes package-lock.json for `npm ci`: npm leaves out of the lock the
// optional platform packages (native bindings for other systems) that the
// registry it resolved against does not serve, and `npm ci` then rejects
// the lock as out of sync. This adds an entry for each, with the os, cpu
// and libc its name encodes, so every other platform skips it as before.
//
//   node complete-lock.mjs package-lock.json   (after npm install)

import fs from 'node:fs';

const file = process.argv[2];
const lock = JSON.parse(fs.readFileSync(file, 'utf8'));
const pk = lock.packages;
const platform = (name) => {
  const n = name.split('/').pop();
  const os = ['darwin','linux','win32','android','freebsd','openharmony','wasm32'].find(o => n.includes(`-${o}-`) || n.includes(`binding-${o}`) || n.endsWith(`-${o}`));
  const cpu = ['arm64','x64','arm','ppc64','s390x','wasm32','ia32','riscv64'].find(c => new RegExp(`-${c}(-|$)`).test(n));
  const out = {};
  if (os && os !== 'wasm32') out.os = [os];
  if (cpu) out.cpu = [cpu];
  if (n.includes('musl')) out.libc = ['musl'];
  else if (os === 'linux' && (n.includes('gnu') )) out.libc = ['glibc'];
  return out;
};
let added = [];
for (const [key, entry] of Object.entries(pk)) {
  for (const [dep, version] of Object.entries(entry.optionalDependencies ?? {})) {
    const nested = `${key ? key + '/' : ''}node_modules/${dep}`;
    if (pk[nested] || pk[`node_modules/${dep}`]) continue;
    const p = platform(dep);
    if (!p.cpu) { console.error('cannot tell the platform of', dep); process.exit(1); }
    pk[`node_modules/${dep}`] = { version, optional: true, ...p };
    added.push(`${dep}@${version} ${JSON.stringify(p)}`);
  }
}
const sorted = {};
for (const k of Object.keys(pk).sort((a, b) => (a === '' ? -1 : b === '' ? 1 : a.localeCompare(b)))) sorted[k] = pk[k];
lock.packages = sorted;
fs.writeFileSync(file, JSON.stringify(lock, null, 2) + '\n');
console.log(added.join('\n'));
