/**
 * The engine worker plugin: one Web Worker for the page, started at the first
 * operation, shared by the panel, the leak finder and the file viewer.
 */
import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { IEngineWorker, PACKAGE_NAME } from '../tokens';
import { spawnEngineWorker } from '../worker/browser';
import { EngineWorker } from '../worker/client';

export const workerPlugin: JupyterFrontEndPlugin<IEngineWorker> = {
  id: `${PACKAGE_NAME}:engine-worker`,
  description: 'Runs snapshot parsing and leak ranking off the main thread.',
  autoStart: true,
  provides: IEngineWorker,
  activate: (app: JupyterFrontEnd): IEngineWorker => new EngineWorker(spawnEngineWorker)
};
