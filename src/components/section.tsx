/**
 * A section of the panel: a heading that collapses it and stays in sight
 * while its section scrolls, and an error boundary, so a bad snapshot or a
 * bug in one view shows a one-line message there instead of blanking the
 * whole panel.
 */
import * as React from 'react';
import { TranslationBundle } from '@jupyterlab/translation';
import { caretDownIcon, caretRightIcon } from '@jupyterlab/ui-components';

/** Props of SectionBoundary. */
export interface ISectionBoundaryProps {
  trans: TranslationBundle;
  /** When this changes, a failed section tries again (e.g. another snapshot was picked). */
  resetKey?: unknown;
  children?: React.ReactNode;
}

interface ISectionBoundaryState {
  error: Error | null;
  resetKey: unknown;
}

/** Renders its children, or one line saying why they could not be shown. */
export class SectionBoundary extends React.Component<ISectionBoundaryProps, ISectionBoundaryState> {
  constructor(props: ISectionBoundaryProps) {
    super(props);
    this.state = { error: null, resetKey: props.resetKey };
  }

  static getDerivedStateFromError(error: unknown): Partial<ISectionBoundaryState> {
    return { error: error instanceof Error ? error : new Error(String(error)) };
  }

  static getDerivedStateFromProps(
    props: ISectionBoundaryProps,
    state: ISectionBoundaryState
  ): Partial<ISectionBoundaryState> | null {
    return props.resetKey !== state.resetKey ? { error: null, resetKey: props.resetKey } : null;
  }

  render(): React.ReactNode {
    const { error } = this.state;
    if (error) {
      return (
        <p className="jp-CudaMemdiffSection-error" role="alert">
          {this.props.trans.__('This part of the panel could not be shown: %1', error.message || error.name)}
        </p>
      );
    }
    return this.props.children ?? null;
  }
}

/** Props of Section. */
export interface ISectionProps {
  /** Stable name, also the `data-cuda-memdiff-section` attribute tests and actions use. */
  name: string;
  title: string;
  expanded: boolean;
  onToggle: () => void;
  trans: TranslationBundle;
  resetKey?: unknown;
  /** Buttons at the right of the heading. */
  actions?: React.ReactNode;
  children?: React.ReactNode;
}

/** A collapsible, failure-contained part of the panel. */
export const Section = React.forwardRef<HTMLElement, ISectionProps>(function Section(props, ref) {
  const { name, title, expanded, trans } = props;
  const headingId = `jp-CudaMemdiffSection-${name}`;
  const Caret = expanded ? caretDownIcon : caretRightIcon;
  return (
    <section
      ref={ref}
      className={`jp-CudaMemdiffSection${expanded ? '' : ' jp-mod-collapsed'}`}
      data-cuda-memdiff-section={name}
      aria-labelledby={headingId}
    >
      <div className="jp-CudaMemdiffSection-head">
        <h3 className="jp-CudaMemdiffSection-title">
          <button
            id={headingId}
            className="jp-CudaMemdiffSection-toggle"
            aria-expanded={expanded}
            onClick={props.onToggle}
          >
            <Caret.react tag="span" className="jp-CudaMemdiffSection-caret" />
            {title}
          </button>
        </h3>
        {props.actions}
      </div>
      {expanded ? (
        <div className="jp-CudaMemdiffSection-body">
          <SectionBoundary trans={trans} resetKey={props.resetKey}>
            {props.children}
          </SectionBoundary>
        </div>
      ) : null}
    </section>
  );
});

/**
 * The heading button of a Section's element (not of a section nested in its
 * body): where the keyboard goes when the panel brings the section to it.
 */
export function sectionHeading(section: Element): HTMLElement | null {
  return section.querySelector<HTMLElement>(':scope > .jp-CudaMemdiffSection-head .jp-CudaMemdiffSection-toggle');
}
