/** The leak finder (find.ts), its shapes, and its worker operation. */
export * from './types';
export * from './find';
export * from './transfer';
export * from './op';
export { LIBRARY_WORKSPACE_BYTES } from './context';
export { bytesFreedByFixes } from './parts';
