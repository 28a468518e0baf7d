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
