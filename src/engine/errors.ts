/**
 * The one error type the engine throws for bad input, so callers (CLI, panel)
 * can show its message to the user as it is.
 */
export class SnapshotError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SnapshotError';
  }
}

/**
 * A Jupyter notebook (nbformat JSON) given where a snapshot belongs: a
 * SnapshotError its callers can tell apart, to say how to get a snapshot from
 * the notebook in their own terms.
 */
export class NotebookError extends SnapshotError {
  constructor() {
    super('a Jupyter notebook, not a snapshot');
    this.name = 'NotebookError';
  }
}

/** Characters of a value from a file that an error message quotes before cutting it. */
export const QUOTE_LENGTH = 80;

/**
 * A value from a file as an error message quotes it: whole when short, else
 * its first characters and its length, so a 5 MB name is one short line.
 */
export function clip(text: string): string {
  if (text.length <= QUOTE_LENGTH) {
    return text;
  }
  // Cut before a split surrogate pair, which would print as a stray half.
  const end = text.charCodeAt(QUOTE_LENGTH - 1) >> 10 === 0xd800 >> 10 ? QUOTE_LENGTH - 1 : QUOTE_LENGTH;
  return `${text.slice(0, end)}…(${text.length.toLocaleString('en-US')} characters)`;
}

/**
 * Whether decoding text failed because it is longer than one JavaScript
 * string can be (2^29 - 24 characters in V8, about 512 MiB): Node says
 * ERR_STRING_TOO_LONG, a browser throws a RangeError.
 */
export function isTextTooLong(reason: unknown): boolean {
  return (reason as { code?: unknown })?.code === 'ERR_STRING_TOO_LONG' || reason instanceof RangeError;
}

/** Why text of `bytes` bytes could not be read, in the words a refusal ends with. */
export function textTooLong(bytes: number): string {
  return `${bytes.toLocaleString('en-US')} bytes of text, more than one JavaScript string holds (about 512 MiB)`;
}
