// A small code editor: a textarea over a backdrop that marks lines, with a
// gutter of line numbers. No dependencies; monospace text, no wrapping.
//
// Keys inside: Tab indents (two spaces; every selected line when the
// selection spans lines), Shift+Tab outdents, Escape then Tab moves the
// focus on.

const INDENT = '  ';

/**
 * @typedef {object} Mark
 * @property {number} line 1-based first line
 * @property {number} [endLine] last line (defaults to `line`)
 * @property {'error'|'warning'|'info'} severity
 * @property {string} message
 */

/**
 * Makes an editor inside `host`.
 * @param {HTMLElement} host
 * @param {{id: string, label: string}} options
 */
export function createEditor(host, { id, label }) {
  host.classList.add('editor');
  host.innerHTML = `
    <div class="gutter" aria-hidden="true"><pre class="gutter-lines"></pre></div>
    <div class="code">
      <div class="backdrop" aria-hidden="true"><div class="marks"></div></div>
      <textarea id="${id}" spellcheck="false" wrap="off" autocapitalize="off" autocomplete="off"
        aria-label="${label}" aria-describedby="${id}-marks"></textarea>
      <span id="${id}-marks" class="visually-hidden"></span>
    </div>`;
  const textarea = host.querySelector('textarea');
  const gutter = host.querySelector('.gutter-lines');
  const marksLayer = host.querySelector('.marks');
  const marksText = host.querySelector(`#${id}-marks`);
  let marks = [];
  let lineCount = 0;
  let escaped = false;
  const listeners = [];

  const lineHeight = () => parseFloat(getComputedStyle(textarea).lineHeight) || 20;
  const padTop = () => parseFloat(getComputedStyle(textarea).paddingTop) || 0;

  function paintGutter() {
    const count = textarea.value.split('\n').length;
    const marked = new Map();
    for (const m of marks) {
      for (let l = m.line; l <= (m.endLine ?? m.line); l++) {
        if (!marked.has(l) || m.severity === 'error') marked.set(l, m);
      }
    }
    if (count === lineCount && !paintGutter.dirty) return;
    lineCount = count;
    paintGutter.dirty = false;
    const rows = [];
    for (let l = 1; l <= count; l++) {
      const m = marked.get(l);
      rows.push(m ? `<span class="mark-${m.severity}" title="${escapeHtml(m.message)}">${l}</span>` : String(l));
    }
    gutter.innerHTML = rows.join('\n');
  }

  function paintMarks() {
    const lh = lineHeight();
    const top = padTop();
    marksLayer.innerHTML = marks
      .map((m) => {
        const lines = (m.endLine ?? m.line) - m.line + 1;
        return `<div class="line-mark line-${m.severity}" style="top:${top + (m.line - 1) * lh}px;height:${lines * lh}px"></div>`;
      })
      .join('');
    marksText.textContent = marks.map((m) => `line ${m.line}: ${m.message}`).join('. ');
    paintGutter.dirty = true;
    paintGutter();
  }

  function syncScroll() {
    gutter.style.transform = `translateY(${-textarea.scrollTop}px)`;
    marksLayer.style.transform = `translate(${-textarea.scrollLeft}px, ${-textarea.scrollTop}px)`;
  }

  function replaceSelection(start, end, text, selStart, selEnd) {
    textarea.setSelectionRange(start, end);
    // execCommand keeps the browser's undo history; fall back when absent.
    if (!document.execCommand?.('insertText', false, text)) {
      textarea.setRangeText(text, start, end, 'end');
      textarea.dispatchEvent(new Event('input', { bubbles: true }));
    }
    textarea.setSelectionRange(selStart, selEnd);
  }

  textarea.addEventListener('keydown', (e) => {
    if (e.key === 'Escape') {
      escaped = true;
      return;
    }
    if (e.key !== 'Tab' || e.ctrlKey || e.altKey || e.metaKey) {
      escaped = false;
      return;
    }
    if (escaped) {
      escaped = false;
      return; // let the focus move on
    }
    e.preventDefault();
    const { selectionStart: s, selectionEnd: t, value } = textarea;
    const lineStart = value.lastIndexOf('\n', s - 1) + 1;
    const multi = value.slice(s, t).includes('\n');
    if (!multi && !e.shiftKey) {
      replaceSelection(s, t, INDENT, s + INDENT.length, s + INDENT.length);
      return;
    }
    const end = t > s && value[t - 1] === '\n' ? t - 1 : t;
    const block = value.slice(lineStart, end);
    const lines = block.split('\n');
    const changed = e.shiftKey
      ? lines.map((l) => l.replace(/^ {1,2}/, ''))
      : lines.map((l) => INDENT + l);
    const text = changed.join('\n');
    const firstDelta = changed[0].length - lines[0].length;
    replaceSelection(lineStart, end, text, Math.max(lineStart, s + firstDelta), lineStart + text.length);
  });
  textarea.addEventListener('scroll', syncScroll);
  textarea.addEventListener('input', () => {
    paintGutter();
    for (const cb of listeners) cb(textarea.value);
  });

  return {
    textarea,
    get value() {
      return textarea.value;
    },
    set value(text) {
      textarea.value = text;
      textarea.scrollTop = 0;
      lineCount = -1;
      paintGutter();
      syncScroll();
    },
    /** Calls `cb(text)` on every edit. */
    onInput(cb) {
      listeners.push(cb);
    },
    /** Replaces the marked lines. */
    setMarks(next) {
      marks = next.filter((m) => Number.isInteger(m.line) && m.line > 0);
      paintMarks();
    },
    /** Focuses the editor with `line` selected and in view. */
    revealLine(line) {
      const lines = textarea.value.split('\n');
      const l = Math.min(Math.max(1, line), lines.length);
      let start = 0;
      for (let i = 0; i < l - 1; i++) start += lines[i].length + 1;
      textarea.focus();
      textarea.setSelectionRange(start, start + lines[l - 1].length);
      const lh = lineHeight();
      const target = (l - 1) * lh;
      if (target < textarea.scrollTop || target > textarea.scrollTop + textarea.clientHeight - 2 * lh) {
        textarea.scrollTop = Math.max(0, target - textarea.clientHeight / 3);
      }
      syncScroll();
    },
    focus() {
      textarea.focus();
    },
  };
}

/** Text as HTML. */
export function escapeHtml(text) {
  return String(text).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);
}
