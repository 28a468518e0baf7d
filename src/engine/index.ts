/**
 * The snapshot engine: pure TypeScript, no JupyterLab imports, shared by the
 * CLI, the panel and the badges.
 */
export * from './budget';
export * from './bytes';
export * from './cells';
export * from './diff';
export * from './edits';
export * from './errors';
export * from './frames';
export * from './model';
export * from './normalize';
export * from './pickle';
export * from './read';
export * from './session';
export * from './manifest';
export * from './snapshot';
export * from './units';
export * from './wire';
export * from './export';
export * from './pickler';
export * from './retention';
export * from './source';
export * from './holders';
export * from './findings';
export * from './leaks';
export * from './history';
export * from './peak';
export * from './births';
export * from './oom';
export * from './timeline';
export * from './transfer';
export * from './roles';
export * from './ranks';
export * from './runs';
export * from './leftOut';
export * from './runMismatch';
