// A static file server for the playground, on 127.0.0.1 only.
//
//   node serve.mjs [--port N]     (default 8787; 0 picks a free port)
//
// Serves index.html, style.css, src/ and build/ of this folder (nothing
// else: not node_modules, not the tests), with the MIME types browsers
// need for ES modules and WebAssembly (`application/wasm`, which
// `WebAssembly.compileStreaming` requires). Everything runs in the page;
// the server only hands out files.

import { createReadStream, statSync } from 'node:fs';
import { createServer } from 'node:http';
import { dirname, extname, join, normalize, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = dirname(fileURLToPath(import.meta.url));

/** MIME types of the files the playground serves. */
export const MIME = {
  '.html': 'text/html; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.wasm': 'application/wasm',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.txt': 'text/plain; charset=utf-8',
};

/** What may be served: these files, and everything under these folders. */
const FILES = new Set(['index.html', 'style.css', 'favicon.svg']);
const FOLDERS = ['src', 'build'];

/** The file a request path maps to, or null when it may not be served. */
export function resolvePath(urlPath, root = ROOT) {
  let path;
  try {
    path = decodeURIComponent(urlPath.split('?')[0].split('#')[0]);
  } catch {
    return null;
  }
  if (path === '/' || path === '') path = '/index.html';
  const rel = normalize(path).replace(/^[/\\]+/, '');
  if (rel.startsWith('..') || rel.includes(`${sep}..`) || rel.includes('\0')) return null;
  const top = rel.split(/[/\\]/)[0];
  if (!(FILES.has(rel) || (FOLDERS.includes(top) && rel.length > top.length))) return null;
  return join(root, rel);
}

/**
 * Starts the server.
 * @param {{port?: number, host?: string, root?: string, log?: boolean}} options
 * @returns {Promise<{server: import('node:http').Server, url: string}>}
 */
export function startServer({ port = 8787, host = '127.0.0.1', root = ROOT, log = false } = {}) {
  const server = createServer((req, res) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { Allow: 'GET, HEAD' }).end();
      return;
    }
    const file = resolvePath(req.url ?? '/', root);
    let stat = null;
    try {
      stat = file ? statSync(file) : null;
    } catch {
      stat = null;
    }
    if (!file || !stat?.isFile()) {
      res.writeHead(404, { 'Content-Type': MIME['.txt'] }).end('not found\n');
      if (log) console.log(`404 ${req.url}`);
      return;
    }
    res.writeHead(200, {
      'Content-Type': MIME[extname(file)] ?? 'application/octet-stream',
      'Content-Length': stat.size,
      'Cache-Control': 'no-cache',
      'X-Content-Type-Options': 'nosniff',
    });
    if (req.method === 'HEAD') {
      res.end();
      return;
    }
    createReadStream(file).pipe(res);
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      const { port: bound } = server.address();
      resolve({ server, url: `http://${host}:${bound}/` });
    });
  });
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const i = process.argv.indexOf('--port');
  const port = i > 0 ? Number(process.argv[i + 1]) : Number(process.env.PORT ?? 8787);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    console.error(`serve: invalid port ${process.argv[i + 1] ?? process.env.PORT}`);
    process.exit(2);
  }
  startServer({ port, log: true }).then(
    ({ url }) => console.log(`Playground: ${url}  (Ctrl+C to stop)`),
    (e) => {
      console.error(`serve: cannot listen on 127.0.0.1:${port}: ${e.message}`);
      process.exit(1);
    },
  );
}
