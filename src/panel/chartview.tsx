/**
 * The session chart: allocated and reserved memory after each cell as step
 * lines, each step named under it by its prompt (`[3]`), OOM markers, a
 * dashed line where the kernel restarted, a dotted level at the session's
 * peak, the cells the diff compares highlighted (its later side strongly,
 * its earlier side faintly); allocated memory stacked by role on request,
 * when the kernel gave roles. The cells are a listbox with a roving focus (WAI-ARIA): hover names
 * a cell, click or the arrow keys select it, Home and End the first and last.
 */
import * as React from 'react';
import { TranslationBundle } from '@jupyterlab/translation';
import { formatBytes, roleLabel, ROLES } from '../engine';
import { chartLayout, IChartInput } from './chart';
import { useWidth } from './width';

/** Width before the panel is measured, and the height, in pixels. */
const DEFAULT_WIDTH = 320;
const HEIGHT = 134;
/** Baseline of the OOM labels, in the top margin. */
const OOM_LABEL_Y = 12;
/**
 * Baseline of the "restart" labels, a row below the OOM labels: a cell that
 * runs out of memory right after a restart shows both.
 */
const RESTART_LABEL_Y = 26;
/**
 * The widest a character of the 10px chart labels draws, in pixels: an
 * estimate on the safe side, so labels that might touch are treated as touching.
 */
const LABEL_CHAR_WIDTH = 6.5;
/** The same for brackets, spaces and punctuation, which draw about half as wide. */
const NARROW_CHAR_WIDTH = 4;

/** Props of SessionChart. */
export interface ISessionChartProps {
  inputs: readonly IChartInput[];
  /** The snapshot the diff shows (its later side); -1 when that is no cell of the chart. */
  selected: number;
  /** The snapshot the diff compares it with (its earlier side), marked fainter; -1 for no mark. */
  compared?: number;
  onSelect: (index: number) => void;
  /** The session's peak of allocated memory, drawn as a level over its kernel's steps; 0 for none. */
  peakBytes?: number;
  trans: TranslationBundle;
}

/** The session's memory over its cells. */
export function SessionChart(props: ISessionChartProps): JSX.Element {
  const { inputs, selected, onSelect, trans } = props;
  const compared = props.compared ?? -1;
  const figure = React.useRef<HTMLElement>(null);
  const bands = React.useRef<(SVGRectElement | null)[]>([]);
  const width = useWidth(figure, DEFAULT_WIDTH);
  const restartLabel = trans.__('restart');
  const oomLabel = trans.__('OOM');
  const peakBytes = props.peakBytes ?? 0;
  const layout = React.useMemo(
    () =>
      chartLayout(
        inputs,
        { width, height: HEIGHT },
        {
          restart: restartLabel.length * LABEL_CHAR_WIDTH,
          oom: oomLabel.length * LABEL_CHAR_WIDTH,
          cell: Math.max(0, ...inputs.map(p => Private.textWidth(p.tick ?? '')))
        },
        peakBytes
      ),
    [inputs, width, restartLabel, oomLabel, peakBytes]
  );
  const [byRole, setByRole] = React.useState(false);
  const stacked = byRole && layout.roleAreas.length > 0;
  // One band is in the tab order: the selected one, else the latest.
  const tabbable = selected >= 0 && selected < inputs.length ? selected : inputs.length - 1;
  const onKey = (event: React.KeyboardEvent, index: number) => {
    const target = Private.keyTarget(event.key, index, inputs.length);
    if (target === null) {
      return;
    }
    event.preventDefault();
    onSelect(target);
    // Focus goes with the selection, so the next key moves on from there.
    bands.current[target]?.focus();
  };
  return (
    <figure className={`jp-CudaMemdiffChart${stacked ? ' jp-mod-byRole' : ''}`} ref={figure}>
      {/* As tall before the panel is measured as after: a chart that changed height would move the sections below it. */}
      <svg
        viewBox={`0 0 ${width} ${HEIGHT}`}
        height={HEIGHT}
        role="group"
        aria-label={trans.__('GPU memory after each cell')}
      >
        {layout.ticks.map(t => (
          <g key={t.y} className="jp-CudaMemdiffChart-tick">
            <line x1={layout.plotLeft} x2={width} y1={t.y} y2={t.y} />
            <text x={layout.plotLeft - 4} y={t.y} dominantBaseline="middle" textAnchor="end">
              {t.label}
            </text>
          </g>
        ))}
        <g role="listbox" aria-label={trans.__('Cells')} aria-orientation="horizontal">
          {layout.points.map(p => (
            <rect
              key={`band-${p.index}`}
              ref={el => (bands.current[p.index] = el)}
              className={`jp-CudaMemdiffChart-band${
                p.index === selected ? ' jp-mod-selected' : p.index === compared ? ' jp-mod-compared' : ''
              }`}
              x={p.x}
              y={0}
              width={Math.max(1, p.width)}
              height={HEIGHT}
              tabIndex={p.index === tabbable ? 0 : -1}
              role="option"
              aria-selected={p.index === selected}
              onClick={() => onSelect(p.index)}
              onKeyDown={e => onKey(e, p.index)}
            >
              {/* One text for the hover and the band's name: a title beside an aria-label is read as its
                  description, the same words twice. */}
              <title>
                {Private.bandLabel(p, p.index === compared, trans) + (stacked ? Private.rolesTitle(p.roles) : '')}
              </title>
            </rect>
          ))}
        </g>
        {layout.restarts.map(r => (
          <g key={`restart-${r.index}`} className="jp-CudaMemdiffChart-restart">
            <line x1={r.x} x2={r.x} y1={0} y2={HEIGHT} />
            {r.label ? (
              <text x={r.label.x} y={RESTART_LABEL_Y} textAnchor={r.label.anchor}>
                {restartLabel}
              </text>
            ) : null}
            <title>{trans.__('The kernel restarted before %1', layout.points[r.index].label)}</title>
          </g>
        ))}
        {stacked
          ? layout.roleAreas.map(a => (
              <path key={`role-${a.role}`} className={`jp-CudaMemdiffChart-role jp-mod-${a.role}`} d={a.path} />
            ))
          : null}
        {layout.peak ? (
          <line
            className="jp-CudaMemdiffChart-peak"
            x1={layout.peak.x1}
            x2={layout.peak.x2}
            y1={layout.peak.y}
            y2={layout.peak.y}
          />
        ) : null}
        <path className="jp-CudaMemdiffChart-reserved" d={layout.reservedPath} />
        <path className="jp-CudaMemdiffChart-allocated" d={layout.allocatedPath} />
        {/* The bands name the cells to screen readers: the names under the steps are for the eye. */}
        <g className="jp-CudaMemdiffChart-cellLabels" aria-hidden="true">
          {layout.cellLabels.map(c => (
            <text
              key={`cell-${c.index}`}
              className={c.index === selected ? 'jp-mod-selected' : undefined}
              x={c.x}
              y={layout.cellLabelY}
              textAnchor="middle"
            >
              {c.text}
            </text>
          ))}
        </g>
        {layout.ooms
          .filter(m => m.label)
          .map(m => (
            <text
              key={`oom-${m.index}`}
              className="jp-CudaMemdiffChart-oom"
              x={m.x}
              y={OOM_LABEL_Y}
              textAnchor="middle"
            >
              {oomLabel}
            </text>
          ))}
      </svg>
      <figcaption className="jp-CudaMemdiffChart-legend">
        <span className="jp-CudaMemdiffChart-key jp-mod-allocated">{trans.__('allocated')}</span>{' '}
        <span className="jp-CudaMemdiffChart-key jp-mod-reserved">{trans.__('reserved')}</span>
        {layout.restarts.length ? (
          <>
            {' '}
            <span className="jp-CudaMemdiffChart-key jp-mod-restart">{trans.__('kernel restart')}</span>
          </>
        ) : null}
        {layout.peak ? (
          <>
            {' '}
            <span className="jp-CudaMemdiffChart-key jp-mod-peak">{trans.__('session peak')}</span>
          </>
        ) : null}
        {stacked
          ? layout.roleAreas.map(a => (
              <React.Fragment key={`key-${a.role}`}>
                {' '}
                <span className={`jp-CudaMemdiffChart-key jp-CudaMemdiffChart-roleKey jp-mod-${a.role}`}>
                  {trans.__(roleLabel(a.role))}
                </span>
              </React.Fragment>
            ))
          : null}
        {layout.roleAreas.length ? (
          <>
            {' '}
            <button
              type="button"
              className="jp-CudaMemdiffChart-byRole"
              aria-pressed={byRole}
              title={trans.__(
                'Stack allocated memory by what it is for: parameters, gradients, optimizer state, activations, ...'
              )}
              onClick={() => setByRole(!byRole)}
            >
              {trans.__('by role')}
            </button>
          </>
        ) : null}
      </figcaption>
    </figure>
  );
}

namespace Private {
  /** How wide a 10px chart label draws, on the safe side (see LABEL_CHAR_WIDTH). */
  export function textWidth(text: string): number {
    let width = 0;
    for (const c of text) {
      width += /[\p{L}\p{N}]/u.test(c) ? LABEL_CHAR_WIDTH : NARROW_CHAR_WIDTH;
    }
    return width;
  }

  /** The band to select for a key pressed on band `index` of `count`; null for a key the chart leaves alone. */
  export function keyTarget(key: string, index: number, count: number): number | null {
    switch (key) {
      case 'Enter':
      case ' ':
        return index;
      case 'ArrowLeft':
        return index > 0 ? index - 1 : null;
      case 'ArrowRight':
        return index < count - 1 ? index + 1 : null;
      case 'Home':
        return count ? 0 : null;
      case 'End':
        return count ? count - 1 : null;
      default:
        return null;
    }
  }

  /** A band's name and hover text: the cell, its memory, an OOM, and whether the diff compares against it. */
  export function bandLabel(p: IChartInput, compared: boolean, trans: TranslationBundle): string {
    const allocated = formatBytes(p.allocatedBytes);
    const reserved = formatBytes(p.reservedBytes);
    const text = p.oom
      ? trans.__('%1: %2 allocated, %3 reserved, out of memory', p.label, allocated, reserved)
      : trans.__('%1: %2 allocated, %3 reserved', p.label, allocated, reserved);
    return compared ? trans.__('%1; the diff compares against it', text) : text;
  }

  /** A snapshot's roles for its band's title, a line each: the roles that hold memory, largest first. */
  export function rolesTitle(roles: IChartInput['roles']): string {
    if (!roles) {
      return '';
    }
    const held = ROLES.filter(r => roles[r] > 0).sort((a, b) => roles[b] - roles[a]);
    return held.map(r => `\n${formatBytes(roles[r])} ${roleLabel(r)}`).join('');
  }
}
