/** React glue for Lumino signals: views re-render when their model says it changed. */
import { ISignal } from '@lumino/signaling';
import * as React from 'react';

/** Re-render the calling component each time `signal` is emitted; disconnects on cleanup. */
export function useSignal(signal: ISignal<unknown, unknown>): void {
  const [, setVersion] = React.useState(0);
  React.useEffect(() => {
    const update = () => setVersion(v => v + 1);
    signal.connect(update);
    return () => {
      signal.disconnect(update);
    };
  }, [signal]);
}
