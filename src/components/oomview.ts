/**
 * A snapshot file's out-of-memory post-mortem: the request against the free
 * memory, fragmentation, and what filled the device, in the words of the
 * panel's OOM view (oomFacts). The one drawing of it, whichever way the file
 * came: first in the file's view, and in the panel above the diff that shows
 * the file (opened or dropped alike).
 */
import { TranslationBundle } from '@jupyterlab/translation';
import { oomFacts } from './oomwords';
import { keepFiguresWhole } from './nobreak';
import { setSoftBreaks } from './softbreaks';
import { frameText } from './stack';
import { HOLDER_HEADS_CLASS, holderColumns } from './holdercolumns';
import { CellCodeNames, formatBytes } from '../engine';
import type { IFileOom } from '../worker/files';

/** The post-mortem's section, under its heading; holders' frames are named by `cells` as the panel names them. */
export function oomSection(oom: IFileOom, cells: CellCodeNames, trans: TranslationBundle): HTMLElement {
  const section = document.createElement('section');
  section.className = 'jp-CudaMemdiffFile-oom';
  const heading = document.createElement('h3');
  heading.textContent = trans.__('Out of memory on cuda:%1', oom.device);
  section.appendChild(heading);
  section.append(...oomDetails(oom, cells, trans));
  return section;
}

// The post-mortems whose error was read out.
const ANNOUNCED = new WeakSet<IFileOom>();

/** What the post-mortem says, without a heading (the panel's section gives it one). */
export function oomDetails(oom: IFileOom, cells: CellCodeNames, trans: TranslationBundle): HTMLElement[] {
  const details: HTMLElement[] = [];
  const words = oomFacts(oom, trans);
  details.push(paragraph(words.summary, 'jp-CudaMemdiffMoment-summary'));
  // An alert is read out each time it is inserted: the error once a file, not again when the panel draws it
  // after the file's view, or at a new cell name, or when its section is opened again.
  if (!ANNOUNCED.has(oom)) {
    ANNOUNCED.add(oom);
    details[0].setAttribute('role', 'alert');
  }
  const facts = document.createElement('dl');
  facts.className = 'jp-CudaMemdiffMoment-facts';
  for (const [label, value] of words.facts) {
    facts.appendChild(document.createElement('dt')).textContent = label;
    facts.appendChild(document.createElement('dd')).textContent = value;
  }
  details.push(facts);
  if (words.advice) {
    details.push(paragraph(words.advice, 'jp-CudaMemdiffMoment-advice'));
  }
  if (!oom.atError) {
    details.push(
      paragraph(
        trans.__(
          "This file was written after the error (its trace goes on): the segments' free space and the holders are from then."
        ),
        'jp-CudaMemdiffMoment-advice'
      )
    );
  }
  if (oom.holders.length) {
    const table = document.createElement('table');
    table.className = 'jp-CudaMemdiffMoment-table';
    table.dataset.cudaMemdiffHolders = 'site';
    table.createCaption().textContent = trans.__('What filled the device, by site');
    const heads = table.createTHead();
    heads.className = HOLDER_HEADS_CLASS;
    const headRow = heads.insertRow();
    for (const text of holderColumns('site', trans)) {
      const head = document.createElement('th');
      head.scope = 'col';
      head.textContent = text;
      headRow.appendChild(head);
    }
    const body = table.createTBody();
    for (const h of oom.holders) {
      const row = body.insertRow();
      const bytes = row.insertCell();
      bytes.className = 'jp-CudaMemdiffMoment-bytes';
      bytes.textContent = formatBytes(h.bytes);
      setSoftBreaks(
        row.insertCell(),
        keepFiguresWhole(h.site ? frameText(h.site, cells, trans) : trans.__('no Python stack'))
      );
    }
    details.push(table);
  }
  return details;
}

function paragraph(text: string, className: string): HTMLParagraphElement {
  const p = document.createElement('p');
  p.className = className;
  p.textContent = text;
  return p;
}
