// The playground's state in the URL's hash, so that a template can be
// shared as a link: `#example=<id>` for an unchanged example, else
// `#s=<state>`, the state as JSON compressed with the browser's own
// deflate (CompressionStream) and written in base64url.

const VERSION = 1;

function toBase64Url(bytes) {
  let binary = '';
  for (let i = 0; i < bytes.length; i += 0x8000) {
    binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(binary).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

function fromBase64Url(text) {
  const b64 = text.replace(/-/g, '+').replace(/_/g, '/');
  const binary = atob(b64 + '='.repeat((4 - (b64.length % 4)) % 4));
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

async function pipe(bytes, stream) {
  const out = new Blob([bytes]).stream().pipeThrough(stream);
  return new Uint8Array(await new Response(out).arrayBuffer());
}

/**
 * The hash fragment (without `#`) of a state.
 * @param {object} state
 */
export async function encodeState(state) {
  const json = new TextEncoder().encode(JSON.stringify({ v: VERSION, ...state }));
  return `s=${toBase64Url(await pipe(json, new CompressionStream('deflate-raw')))}`;
}

/**
 * What a hash fragment holds: `{example}`, `{state}` or null.
 * @param {string} hash `location.hash`
 * @throws when `s=` does not decode
 */
export async function decodeHash(hash) {
  const params = new URLSearchParams(hash.replace(/^#/, ''));
  if (params.has('example')) return { example: params.get('example') };
  const s = params.get('s');
  if (!s) return null;
  const json = await pipe(fromBase64Url(s), new DecompressionStream('deflate-raw'));
  const state = JSON.parse(new TextDecoder().decode(json));
  if (state?.v !== VERSION) throw new Error(`unsupported link version ${state?.v}`);
  delete state.v;
  return { state };
}
