/**
 * The panel plugin: adds the side panel (restored across reloads), makes it
 * follow the active notebook, and registers the commands that open it,
 * that reveal a cell line from a stack frame, and that find the leaking cell.
 * Its schema (schema/panel.json) puts the View menu entry and the notebook
 * toolbar buttons of those commands, so users can move or hide them.
 */
import { ILayoutRestorer, JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { CommandToolbarButton, ICommandPalette } from '@jupyterlab/apputils';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { ITranslator, nullTranslator } from '@jupyterlab/translation';
import * as React from 'react';
import { codeCellSources } from '../components/cells';
import { openDroppedFiles } from '../files/open';
import { MemdiffPanel } from '../panel';
import { highlightCell } from '../leaks/highlight';
import { leakIcon, memoryIcon } from '../panel/icon';
import { IFollowedNotebook } from '../panel/model';
import { CommandIDs, ICaptureRegistry, IDiffPanel, IEngineWorker, PACKAGE_NAME } from '../tokens';
import { EngineWorker } from '../worker/client';

/** Rank among right-side panels: after the debugger and property inspector. */
const PANEL_RANK = 900;

export const panelPlugin: JupyterFrontEndPlugin<IDiffPanel> = {
  id: `${PACKAGE_NAME}:panel`,
  description: 'The CUDA Memory side panel and the commands that open it and reveal cells.',
  autoStart: true,
  requires: [INotebookTracker, ICaptureRegistry],
  optional: [ILayoutRestorer, ICommandPalette, ITranslator, IEngineWorker],
  provides: IDiffPanel,
  activate: (
    app: JupyterFrontEnd,
    tracker: INotebookTracker,
    captures: ICaptureRegistry,
    restorer: ILayoutRestorer | null,
    palette: ICommandPalette | null,
    translator: ITranslator | null,
    worker: IEngineWorker | null
  ): IDiffPanel => {
    const trans = (translator ?? nullTranslator).load('jupyterlab_cuda_memdiff');
    const notebookOf = (cellId: string) => tracker.find(nb => nb.content.widgets.some(c => c.model.id === cellId));
    const panel = new MemdiffPanel({
      translator: translator ?? nullTranslator,
      worker: worker ?? undefined,
      onReveal: ({ cell, line }) =>
        void app.commands.execute(
          CommandIDs.revealCell,
          line === null ? { cellId: cell.id } : { cellId: cell.id, line }
        ),
      onShowCell: cellId => {
        const notebook = notebookOf(cellId);
        if (notebook) {
          app.shell.activateById(notebook.id);
          void highlightCell(notebook, cellId);
        }
      }
    });
    app.shell.add(panel, 'right', { rank: PANEL_RANK });
    restorer?.add(panel, panel.id);

    // One followed-notebook object per panel, so re-following keeps the selection.
    const followed = new WeakMap<NotebookPanel, IFollowedNotebook>();
    const follow = () => {
      const notebook = tracker.currentWidget;
      const capture = notebook ? captures.captureFor(notebook) : undefined;
      if (!notebook || !capture) {
        panel.model.setNotebook(null);
        return;
      }
      let entry = followed.get(notebook);
      if (!entry) {
        entry = {
          get title() {
            return notebook.title.label;
          },
          store: capture.store,
          requestHolders: blocks => capture.requestHolders(blocks),
          cells: () => codeCellSources(Array.from(notebook.content.model?.cells ?? [])),
          cellsChanged: notebook.content.model?.cells.changed,
          contentChanged: notebook.content.model?.contentChanged
        };
        followed.set(notebook, entry);
      }
      panel.model.setNotebook(entry);
    };
    tracker.currentChanged.connect(follow);
    captures.changed.connect(follow);
    follow();

    app.commands.addCommand(CommandIDs.openPanel, {
      label: trans.__('Open CUDA Memory Panel'),
      caption: trans.__('Show GPU memory snapshots and diffs per notebook cell'),
      icon: memoryIcon,
      describedBy: {
        args: {
          type: 'object',
          properties: { focus: { type: 'boolean', description: 'Give the keyboard to the panel' } }
        }
      },
      // From the palette the keyboard follows (it would stay in the notebook, tabs away); from a toolbar
      // button it stays where it is, as JupyterLab's buttons leave it.
      execute: args => {
        app.shell.activateById(panel.id);
        if (args.focus === true) {
          panel.focusContent();
        }
      }
    });
    palette?.addItem({ command: CommandIDs.openPanel, category: trans.__('CUDA Memory'), args: { focus: true } });

    app.commands.addCommand(CommandIDs.revealCell, {
      label: trans.__('Reveal Notebook Cell Line'),
      describedBy: {
        args: {
          type: 'object',
          properties: { cellId: { type: 'string' }, line: { type: 'number' } },
          required: ['cellId']
        }
      },
      // Without a line (the code a frame names is no longer in the cell) the cell is selected, in command mode.
      execute: async args => {
        const cellId = args.cellId as string;
        const notebook = notebookOf(cellId);
        if (!notebook) {
          return;
        }
        app.shell.activateById(notebook.id);
        const index = notebook.content.widgets.findIndex(c => c.model.id === cellId);
        notebook.content.activeCellIndex = index;
        await notebook.content.scrollToItem(index, 'center');
        const cell = notebook.content.widgets[index];
        if (args.line === undefined || args.line === null) {
          notebook.content.mode = 'command';
          notebook.activate();
          return;
        }
        const line = Math.max(1, Number(args.line));
        notebook.content.mode = 'edit';
        cell.editor?.setCursorPosition({ line: line - 1, column: 0 });
        cell.editor?.focus();
      }
    });

    app.commands.addCommand(CommandIDs.showCellDiff, {
      label: trans.__('Show Cell GPU Memory Diff'),
      describedBy: {
        args: { type: 'object', properties: { cellId: { type: 'string' } }, required: ['cellId'] }
      },
      // A badge's click: the panel follows the notebook in front, which holds the cell clicked.
      execute: args => {
        const notebook = notebookOf(args.cellId as string);
        if (notebook) {
          app.shell.activateById(notebook.id);
        }
        app.shell.activateById(panel.id);
        const record = panel.model.notebook?.store.shownForCell(args.cellId as string);
        if (record) {
          panel.model.select(record);
          panel.model.reveal('diff');
        }
      }
    });

    app.commands.addCommand(CommandIDs.findLeakingCell, {
      label: trans.__('Find Leaking Cell'),
      caption: trans.__('Rank cells by the GPU memory they left alive, say who holds it, and jump to the first'),
      icon: leakIcon,
      execute: async () => {
        const notebook = tracker.currentWidget;
        app.shell.activateById(panel.id);
        const run = panel.leaks.run();
        panel.model.reveal('leaks');
        // The ranking runs in the engine worker: the page stays responsive meanwhile.
        const findings = await run.findings;
        const refined = run.refined;
        const first = findings?.top?.record.cellId ?? null;
        if (notebook) {
          await highlightCell(notebook, first);
        }
        // The kernel's holders can change the ranking: follow it.
        const final = await refined;
        const top = final?.top?.record.cellId ?? null;
        if (notebook && !notebook.isDisposed && top !== first) {
          await highlightCell(notebook, top);
        }
        return { cellId: top, label: final?.top?.label ?? null };
      }
    });
    palette?.addItem({ command: CommandIDs.findLeakingCell, category: trans.__('CUDA Memory') });
    panel.toolbar.addItem(
      'cuda-memdiff-panel-find-leaking-cell',
      new CommandToolbarButton({ commands: app.commands, id: CommandIDs.findLeakingCell, icon: leakIcon })
    );
    // Closing the findings takes the highlight away.
    panel.leaks.changed.connect(() => {
      if (!panel.leaks.findings) {
        tracker.forEach(nb => void highlightCell(nb, null));
      }
    });

    const diffPanel: IDiffPanel = {
      addFile: (name, snapshot, path, oom) => {
        // Not urgent, so a transition: React renders the file's diff and
        // segment map in slices that give the page a turn every few
        // milliseconds, instead of in one task as long as the whole render.
        React.startTransition(() => {
          const file = panel.model.addFile(name, snapshot, path ?? null, oom ?? null);
          panel.model.reveal(panel.model.openingSection(file));
        });
      },
      fileUnreadable: (name, reason) => panel.model.fileUnreadable(name, reason),
      filesDropped: panel.filesDropped,
      reveal: () => app.shell.activateById(panel.id),
      cellNames: () => panel.model.cellNames(),
      shownSnapshot: () => {
        const after = panel.model.comparison?.after;
        if (!after || after.kind === 'file') {
          return null;
        }
        const name =
          after.kind === 'record'
            ? `${(panel.model.notebook?.title ?? 'notebook').replace(/\.ipynb$/, '')}-cell${after.record.executionCount ?? ''}`
            : 'empty';
        return { name, snapshot: panel.model.snapshotOf(after) };
      }
    };
    // Files dropped on the panel open here, not in the files plugin: the drop
    // is the panel's own (its empty state invites it) and needs only the
    // engine, so it still works when the files plugin is disabled.
    const engine = worker ?? new EngineWorker();
    panel.filesDropped.connect((_, files) => void openDroppedFiles(files, diffPanel, engine));
    return diffPanel;
  }
};
