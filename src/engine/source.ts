/**
 * What a cell's Python source says about the memory its lines allocate:
 * whether grad mode is off there, whether IPython caches the cell's value in
 * `Out[n]`, which names a line stores its results in, which lists a hook
 * fills. Read with the Lezer Python grammar (the one JupyterLab's editor
 * uses, plain JavaScript, so the CLI reads cells the same way): strings and
 * comments are never mistaken for code, and a statement spans its lines.
 * Each answer errs on the side of "cannot tell": a wrong guess only weakens a
 * verdict's confidence.
 */
import { parser } from '@lezer/python';

type Tree = ReturnType<typeof parser.parse>;
type SyntaxNode = Tree['topNode'];

/** A parsed cell, with where each of its lines starts. */
interface IParsed {
  readonly text: string;
  readonly tree: Tree;
  readonly lineStarts: readonly number[];
}

// Sources parsed lately: the rules ask about the same few cells many times.
const PARSED = new Map<string, IParsed>();
const PARSED_KEPT = 64;

/**
 * Parse a cell once. IPython's `%magic` and `!shell` lines are not Python:
 * they are read as `pass` (IPython runs them on the same line, so lines keep
 * their numbers).
 */
function parse(source: string): IParsed {
  let parsed = PARSED.get(source);
  if (!parsed) {
    const text = source.replace(/^([ \t]*)[%!].*$/gm, '$1pass');
    const lineStarts = [0];
    for (let i = text.indexOf('\n'); i >= 0; i = text.indexOf('\n', i + 1)) {
      lineStarts.push(i + 1);
    }
    parsed = { text, tree: parser.parse(text), lineStarts };
    if (PARSED.size >= PARSED_KEPT) {
      PARSED.delete(PARSED.keys().next().value!);
    }
    PARSED.set(source, parsed);
  }
  return parsed;
}

function textOf(p: IParsed, node: SyntaxNode): string {
  return p.text.slice(node.from, node.to);
}

/** 1-based line of a position, as Python frames count lines. */
function lineOf(p: IParsed, pos: number): number {
  let lo = 0;
  let hi = p.lineStarts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (p.lineStarts[mid] <= pos) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  return lo + 1;
}

/** Start and end positions of a 1-based line, or null when the source has no such line. */
function lineRange(p: IParsed, line: number): { from: number; to: number } | null {
  if (line < 1 || line > p.lineStarts.length) {
    return null;
  }
  const from = p.lineStarts[line - 1];
  const to = line < p.lineStarts.length ? p.lineStarts[line] - 1 : p.text.length;
  return { from, to };
}

/** Every node under `node` (itself included) of one of these types. */
function descendants(node: SyntaxNode, names: ReadonlySet<string>): SyntaxNode[] {
  const found: SyntaxNode[] = [];
  const cursor = node.cursor();
  do {
    if (names.has(cursor.name)) {
      found.push(cursor.node);
    }
  } while (cursor.next() && cursor.from < node.to);
  return found.filter(n => n.from >= node.from && n.to <= node.to);
}

function children(node: SyntaxNode): SyntaxNode[] {
  const out: SyntaxNode[] = [];
  for (let c = node.firstChild; c; c = c.nextSibling) {
    out.push(c);
  }
  return out;
}

const SIMPLE = new Set(['AssignStatement', 'UpdateStatement', 'ExpressionStatement']);
const CALL = new Set(['CallExpression']);

/**
 * The simple statements that ran at a line: those starting on it (`a = f(); b = g()`,
 * the body of `with ...: y = f(x)`), or else the innermost one spanning it (a call
 * written over several lines).
 */
function statementsAt(p: IParsed, line: number): SyntaxNode[] {
  const range = lineRange(p, line);
  if (!range) {
    return [];
  }
  const starting: SyntaxNode[] = [];
  let spanning: SyntaxNode | null = null;
  p.tree.iterate({
    from: range.from,
    to: range.to,
    enter: n => {
      if (!SIMPLE.has(n.name)) {
        return;
      }
      if (n.from >= range.from && n.from <= range.to) {
        starting.push(n.node);
      } else if (n.from < range.from && n.to >= range.from) {
        spanning = n.node;
      }
    }
  });
  return starting.length ? starting : spanning ? [spanning] : [];
}

/** Header parts of a compound statement that starts on a line (`if (y := f(x)):`), for walrus targets. */
function headersAt(p: IParsed, line: number): SyntaxNode[] {
  const range = lineRange(p, line);
  if (!range) {
    return [];
  }
  const found: SyntaxNode[] = [];
  p.tree.iterate({
    from: range.from,
    to: range.to,
    enter: n => {
      if (n.name === 'NamedExpression' && n.from >= range.from && n.from <= range.to) {
        found.push(n.node);
      }
    }
  });
  return found;
}

/**
 * The method a call makes and the dotted name it is made on
 * (`self.cache.append(x)` gives `self.cache` and `append`; the object is null
 * when it is no dotted name, as in `model[1].register_forward_hook(...)`).
 */
function receiver(p: IParsed, call: SyntaxNode): { object: string | null; method: string } | null {
  const callee = call.firstChild;
  if (callee?.name !== 'MemberExpression') {
    return null;
  }
  const method = callee.lastChild;
  const object = callee.firstChild;
  if (method?.name !== 'PropertyName' || !object) {
    return null;
  }
  const text = textOf(p, object);
  return { object: /^[A-Za-z_][\w.]*$/.test(text) ? text : null, method: textOf(p, method) };
}

/** The name a call's callee ends with (`torch.nn.functional.linear` gives `linear`). */
function calleeName(p: IParsed, call: SyntaxNode): string {
  const callee = call.firstChild;
  if (!callee) {
    return '';
  }
  const last = callee.name === 'MemberExpression' ? callee.lastChild : callee;
  return last ? textOf(p, last) : '';
}

/** Arguments of a call, without brackets and commas. */
function argumentsOf(call: SyntaxNode): SyntaxNode[] {
  const list = call.getChild('ArgList');
  return list ? children(list).filter(c => c.name !== '(' && c.name !== ')' && c.name !== ',') : [];
}

// Calls that turn autograd off as a context manager or decorator.
function turnsGradOff(p: IParsed, node: SyntaxNode): boolean {
  return descendants(node, CALL).some(call => {
    const name = calleeName(p, call);
    if (name === 'no_grad' || name === 'inference_mode') {
      return true;
    }
    const args = argumentsOf(call);
    return name === 'set_grad_enabled' && args.length === 1 && textOf(p, args[0]) === 'False';
  });
}

// Decorators use VariableName for dotted parts: `@torch.no_grad()`.
function decoratorTurnsGradOff(p: IParsed, decorator: SyntaxNode): boolean {
  const text = textOf(p, decorator).replace(/\s+/g, '');
  return /(?:^@|\.)(?:no_grad|inference_mode)(?:\(|$)/.test(text) || /(?:^@|\.)set_grad_enabled\(False\)/.test(text);
}

/**
 * True when line `line` runs with autograd off: it sits inside a
 * `with torch.no_grad()` / `inference_mode()` / `set_grad_enabled(False)`
 * block, or in a function decorated with one of them.
 */
export function gradDisabledAt(source: string, line: number): boolean {
  const p = parse(source);
  const range = lineRange(p, line);
  if (!range) {
    return false;
  }
  // The statements that ran on the line (the body of a one-line `with`), else its first code.
  const text = p.text.slice(range.from, range.to);
  const starts = statementsAt(p, line).map(s => s.from);
  const pos = starts.length ? starts[0] : range.from + text.length - text.trimStart().length;
  for (let node: SyntaxNode | null = p.tree.resolveInner(pos, 1); node; node = node.parent) {
    if (node.name !== 'Body') {
      continue;
    }
    const owner = node.parent;
    if (owner?.name === 'WithStatement' && children(owner).some(c => c.to <= node!.from && turnsGradOff(p, c))) {
      return true;
    }
    if (owner?.name === 'FunctionDefinition' && owner.parent?.name === 'DecoratedStatement') {
      if (owner.parent.getChildren('Decorator').some(d => decoratorTurnsGradOff(p, d))) {
        return true;
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
  const p = parse(source);
  let last = p.tree.topNode.lastChild;
  while (last && (last.name === 'Comment' || last.type.isError)) {
    last = last.prevSibling;
  }
  if (!last) {
    return null;
  }
  if (last.name === 'StatementGroup') {
    const end = last.lastChild;
    if (!end || end.name === ';') {
      return null;
    }
    last = end;
  }
  if (last.name !== 'ExpressionStatement' || textOf(p, last).trim() === 'pass') {
    return null;
  }
  return { first: lineOf(p, last.from), last: lineOf(p, last.to - 1) };
}

/** Leftmost names of assignment targets: `a, (b, c[k])` gives a, b, c. */
function targetNames(p: IParsed, target: SyntaxNode): string[] {
  switch (target.name) {
    case 'VariableName':
      return [textOf(p, target)];
    case 'MemberExpression': {
      let base: SyntaxNode | null = target;
      while (base && base.name === 'MemberExpression') {
        base = base.firstChild;
      }
      return base?.name === 'VariableName' ? [textOf(p, base)] : [];
    }
    case 'TupleExpression':
    case 'ParenthesizedExpression':
    case 'ArrayExpression':
      return children(target).flatMap(c => targetNames(p, c));
    default:
      return [];
  }
}

// Methods that store their argument in the object they are called on.
const STORING = new Set(['append', 'extend', 'insert', 'add', 'update', 'setdefault', 'put', 'push']);

/** Names one statement stores its results in. */
function namesStoredBy(p: IParsed, statement: SyntaxNode): string[] {
  const parts = children(statement);
  if (statement.name === 'AssignStatement' || statement.name === 'UpdateStatement') {
    const lastOp = parts.map(c => c.name).lastIndexOf(statement.name === 'AssignStatement' ? 'AssignOp' : 'UpdateOp');
    return parts.slice(0, Math.max(lastOp, 0)).flatMap(c => targetNames(p, c));
  }
  const call = parts[0];
  if (call?.name === 'CallExpression') {
    const r = receiver(p, call);
    if (r?.object && STORING.has(r.method)) {
      return [r.object];
    }
  }
  return [];
}

/**
 * The names a line stores its results in: assignment targets (`out, h = ...`
 * gives `out` and `h`; `acc[k] = ...` gives `acc`), walrus targets, or the
 * object a storing call adds to (`preds.append(...)` gives `preds`). Empty
 * when it cannot tell.
 */
export function storedNames(source: string, line: number): string[] {
  const p = parse(source);
  const names = [
    ...statementsAt(p, line).flatMap(s => namesStoredBy(p, s)),
    ...headersAt(p, line).flatMap(n => (n.firstChild?.name === 'VariableName' ? [textOf(p, n.firstChild)] : []))
  ];
  return [...new Set(names)];
}

/** The names a line assigns and also passes back into its own call (`out, h = rnn(x, h)` gives `h`). */
export function recurrentNames(source: string, line: number): string[] {
  const p = parse(source);
  const found = new Set<string>();
  for (const statement of statementsAt(p, line)) {
    if (statement.name !== 'AssignStatement') {
      continue;
    }
    const stored = new Set(namesStoredBy(p, statement));
    const value = statement.lastChild;
    for (const call of value ? descendants(value, CALL) : []) {
      for (const arg of argumentsOf(call)) {
        if (arg.name === 'VariableName' && stored.has(textOf(p, arg))) {
          found.add(textOf(p, arg));
        }
      }
    }
  }
  return [...found];
}

/**
 * True when the source turns autograd off for the rest of the session
 * (`torch.set_grad_enabled(False)` as a top-level statement); false when it
 * turns it back on; null when it does neither.
 */
export function setsGradMode(source: string): boolean | null {
  const p = parse(source);
  let mode: boolean | null = null;
  for (const top of children(p.tree.topNode)) {
    const statements = top.name === 'StatementGroup' ? children(top) : [top];
    for (const s of statements) {
      const call = s.name === 'ExpressionStatement' ? s.firstChild : null;
      if (call?.name !== 'CallExpression' || calleeName(p, call) !== 'set_grad_enabled') {
        continue;
      }
      const args = argumentsOf(call);
      if (args.length === 1 && (textOf(p, args[0]) === 'True' || textOf(p, args[0]) === 'False')) {
        mode = textOf(p, args[0]) === 'False';
      }
    }
  }
  return mode;
}

const ADDING = new Set(['append', 'extend', 'insert', 'add']);

/** The containers the source appends a name to (`losses.append(loss)` gives `losses` for `loss`). */
export function containersOf(source: string, name: string): string[] {
  const p = parse(source);
  const found = new Set<string>();
  for (const call of descendants(p.tree.topNode, CALL)) {
    const r = receiver(p, call);
    const args = argumentsOf(call);
    const item = args[args.length - 1];
    if (r?.object && ADDING.has(r.method) && item?.name === 'VariableName' && textOf(p, item) === name) {
      found.add(r.object);
    }
  }
  return [...found];
}

/** True when the source runs a backward pass (`loss.backward()`, `torch.autograd.grad(...)`). */
export function runsBackward(source: string): boolean {
  const p = parse(source);
  return descendants(p.tree.topNode, CALL).some(call => {
    const r = receiver(p, call);
    return r !== null && (r.method === 'backward' || (r.method === 'grad' && /(?:^|\.)autograd$/.test(r.object ?? '')));
  });
}

const HOOK = /^register_(?:forward_pre|forward|full_backward|backward)_hook$/;

function hookCalls(p: IParsed): SyntaxNode[] {
  return descendants(p.tree.topNode, CALL).filter(call => HOOK.test(receiver(p, call)?.method ?? ''));
}

/** True when the source registers a module hook. */
export function registersHook(source: string): boolean {
  return hookCalls(parse(source)).length > 0;
}

/**
 * The containers module hooks append to: `register_forward_hook(lambda m, i, o:
 * acts.append(o))` gives `acts`; a hook passed by name is looked up among the
 * same source's functions.
 */
export function hookTargets(source: string): string[] {
  const p = parse(source);
  const found = new Set<string>();
  const appends = (node: SyntaxNode) => {
    for (const call of descendants(node, CALL)) {
      const r = receiver(p, call);
      if (r?.object && (r.method === 'append' || r.method === 'extend' || r.method === 'add')) {
        found.add(r.object);
      }
    }
  };
  const functions = descendants(p.tree.topNode, new Set(['FunctionDefinition']));
  for (const call of hookCalls(p)) {
    const hook = argumentsOf(call)[0];
    if (hook?.name === 'LambdaExpression') {
      appends(hook);
    } else if (hook?.name === 'VariableName') {
      const def = functions.find(
        f => f.getChild('VariableName') && textOf(p, f.getChild('VariableName')!) === textOf(p, hook)
      );
      const body = def?.getChild('Body');
      if (body) {
        appends(body);
      }
    }
  }
  return [...found];
}

// Calls that run cuBLAS or cuDNN.
const MATMUL = new Set([
  'matmul',
  'mm',
  'bmm',
  'addmm',
  'baddbmm',
  'einsum',
  'linear',
  'conv1d',
  'conv2d',
  'conv3d',
  'tensordot'
]);

/** True when line `line` multiplies matrices (`@`, `matmul`, `linear`, a convolution): what makes cuBLAS or cuDNN allocate its workspace. */
export function callsMatmul(source: string, line: number): boolean {
  const p = parse(source);
  return statementsAt(p, line).some(
    s =>
      descendants(s, new Set(['ArithOp', 'UpdateOp'])).some(op => textOf(p, op).startsWith('@')) ||
      descendants(s, CALL).some(call => MATMUL.has(calleeName(p, call)))
  );
}
