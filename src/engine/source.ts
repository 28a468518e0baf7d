/**
 * What a cell's Python source says about the memory its lines allocate:
 * whether grad mode is off there, whether IPython caches the cell's value in
 * `Out[n]`, and which names a line stores its results in. Line-based (the
 * engine carries no Python parser), so each answer errs on the side of
 * "cannot tell": a wrong guess only weakens a verdict's confidence.
 */

// Context managers and decorators that turn autograd off.
const GRAD_OFF = /\b(?:no_grad|inference_mode)\s*\(|\bset_grad_enabled\s*\(\s*False\b/;
const BLOCK_HEADER = /^\s*(?:async\s+)?(?:with|for|while|if|elif|else|try|except|finally|def|class|match|case)\b/;
const STATEMENT_KEYWORD =
  /^(?:del|import|from|for|while|if|elif|else|try|except|finally|with|def|class|return|pass|break|continue|raise|assert|global|nonlocal|async|await\s+\w+\s*=|@|%|!)/;
// Methods that store their argument in the object they are called on.
const STORING_CALL = /^([A-Za-z_][\w.]*)\.(?:append|extend|insert|add|update|setdefault|put|push)\s*\(/;

/** The lines of a source, 1-based as Python frames count them. */
function lineAt(lines: readonly string[], line: number): string {
  return lines[line - 1] ?? '';
}

function indentOf(text: string): number {
  return text.length - text.trimStart().length;
}

function isCode(text: string): boolean {
  const t = text.trim();
  return t !== '' && !t.startsWith('#');
}

/**
 * True when line `line` runs with autograd off: it sits inside a
 * `with torch.no_grad()` / `inference_mode()` / `set_grad_enabled(False)`
 * block, or in a function decorated with one of them.
 */
export function gradDisabledAt(source: string, line: number): boolean {
  const lines = source.split('\n');
  let indent = indentOf(lineAt(lines, line));
  for (let i = line - 1; i >= 1 && indent > 0; i--) {
    const text = lineAt(lines, i);
    if (!isCode(text) || indentOf(text) >= indent) {
      continue;
    }
    indent = indentOf(text);
    if (/^\s*(?:async\s+)?with\b/.test(text) && GRAD_OFF.test(text)) {
      return true;
    }
    if (/^\s*(?:async\s+)?def\b/.test(text)) {
      for (let d = i - 1; d >= 1 && /^\s*@/.test(lineAt(lines, d)); d--) {
        if (GRAD_OFF.test(lineAt(lines, d))) {
          return true;
        }
      }
    }
  }
  return false;
}

/**
 * The first and last line of the cell's last top-level statement when IPython
 * would display its value and keep it in `Out[n]`: an expression statement
 * not ended by `;`. Null otherwise.
 */
export function displayedLines(source: string): { first: number; last: number } | null {
  const lines = source.split('\n');
  let last = lines.length;
  while (last >= 1 && !isCode(lineAt(lines, last))) {
    last--;
  }
  let first = last;
  // A statement starts at indentation 0 on a line that does not close brackets.
  while (first >= 1 && (indentOf(lineAt(lines, first)) > 0 || /^[)\]}]/.test(lineAt(lines, first)) || !isCode(lineAt(lines, first)))) {
    first--;
  }
  if (first < 1) {
    return null;
  }
  const text = lines.slice(first - 1, last).join('\n').replace(/#.*$/gm, '').trim();
  if (!text || text.endsWith(';') || STATEMENT_KEYWORD.test(text) || BLOCK_HEADER.test(text) || hasAssignment(text)) {
    return null;
  }
  return { first, last };
}

/** True when the statement assigns at top level (`=`, `+=`, `:` annotation), not only compares. */
function hasAssignment(text: string): boolean {
  let depth = 0;
  let quote: string | null = null;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quote) {
      if (c === '\\') {
        i++;
      } else if (c === quote) {
        quote = null;
      }
      continue;
    }
    if (c === '"' || c === "'") {
      quote = c;
    } else if ('([{'.includes(c)) {
      depth++;
    } else if (')]}'.includes(c)) {
      depth--;
    } else if (depth === 0 && c === '=' && text[i + 1] !== '=' && !'=!<>'.includes(text[i - 1] ?? '')) {
      return true;
    }
  }
  return false;
}

/**
 * The names a line stores its results in: assignment targets (`out, h = ...`
 * gives `out` and `h`; `acc[k] = ...` gives `acc`) or the object a storing
 * call adds to (`preds.append(...)` gives `preds`). Empty when it cannot tell.
 */
export function storedNames(source: string, line: number): string[] {
  const text = lineAt(source.split('\n'), line).replace(/#.*$/, '').trim();
  const call = STORING_CALL.exec(text);
  if (call) {
    return [call[1]];
  }
  if (!hasAssignment(text) || /^(?:for|with|if|while|def|class|return)\b/.test(text)) {
    return [];
  }
  const target = text.slice(0, text.search(/(?<![=!<>])(?:[-+*/@%&|^]|\/\/|\*\*|>>|<<)?=(?!=)/));
  return target
    .split(',')
    .map(t => t.trim().replace(/^\(|\)$/g, '').match(/^[A-Za-z_]\w*/)?.[0] ?? '')
    .filter(Boolean);
}

/** The names a line assigns and also passes back into its own call (`out, h = rnn(x, h)` gives `h`). */
export function recurrentNames(source: string, line: number): string[] {
  const text = lineAt(source.split('\n'), line).replace(/#.*$/, '');
  const eq = text.search(/(?<![=!<>])=(?!=)/);
  if (eq < 0 || STORING_CALL.test(text.trim())) {
    return [];
  }
  const value = text.slice(eq + 1);
  return storedNames(source, line).filter(n => new RegExp(`[(,]\\s*${n}\\s*[,)]`).test(value));
}

/**
 * True when the source turns autograd off for the rest of the session
 * (`torch.set_grad_enabled(False)` as a top-level statement); false when it
 * turns it back on; null when it does neither.
 */
export function setsGradMode(source: string): boolean | null {
  let mode: boolean | null = null;
  for (const m of source.matchAll(/^(?:torch\.(?:autograd\.)?)?set_grad_enabled\s*\(\s*(True|False)\s*\)\s*;?\s*$/gm)) {
    mode = m[1] === 'False';
  }
  return mode;
}

/** The containers the source appends a name to (`losses.append(loss)` gives `losses` for `loss`). */
export function containersOf(source: string, name: string): string[] {
  const found = new Set<string>();
  const re = new RegExp(`([A-Za-z_][\\w.]*)\\.(?:append|extend|insert|add)\\(\\s*${name}\\s*\\)`, 'g');
  for (const m of source.matchAll(re)) {
    found.add(m[1]);
  }
  return [...found];
}

/** True when the source runs a backward pass. */
export function runsBackward(source: string): boolean {
  return /\.backward\s*\(|\bautograd\.(?:grad|backward)\s*\(/.test(source);
}

/** True when the source registers a module hook. */
export function registersHook(source: string): boolean {
  return /\.register_(?:forward_pre|forward|full_backward|backward)_hook\s*\(/.test(source);
}

/**
 * The containers module hooks append to: `register_forward_hook(lambda m, i, o:
 * acts.append(o))` gives `acts`; a hook passed by name is looked up in the
 * same source.
 */
export function hookTargets(source: string): string[] {
  const found = new Set<string>();
  const appends = (text: string) => {
    for (const m of text.matchAll(/([A-Za-z_][\w.]*)\.(?:append|extend|add)\s*\(/g)) {
      found.add(m[1]);
    }
  };
  const lines = source.split('\n');
  for (const line of lines) {
    const hook = /\.register_\w*hook\s*\(\s*(lambda\b.*|[A-Za-z_]\w*)/.exec(line);
    if (!hook) {
      continue;
    }
    if (hook[1].startsWith('lambda')) {
      appends(hook[1]);
      continue;
    }
    const def = lines.findIndex(l => new RegExp(`^\\s*def\\s+${hook[1]}\\s*\\(`).test(l));
    if (def >= 0) {
      const indent = indentOf(lines[def]);
      let end = def + 1;
      while (end < lines.length && (!isCode(lines[end]) || indentOf(lines[end]) > indent)) {
        end++;
      }
      appends(lines.slice(def + 1, end).join('\n'));
    }
  }
  return [...found];
}

/** True when line `line` multiplies matrices (`@`, `matmul`, `mm`, `linear`, a convolution): what makes cuBLAS or cuDNN allocate its workspace. */
export function callsMatmul(source: string, line: number): boolean {
  const text = lineAt(source.split('\n'), line).replace(/#.*$/, '');
  return /@(?!\w)|\b(?:matmul|mm|bmm|addmm|baddbmm|einsum|linear|conv[123]d|tensordot)\s*\(/.test(text);
}
