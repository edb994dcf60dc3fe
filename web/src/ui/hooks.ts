import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import { errorText } from "../api.js";

export interface Async<T> {
  data: T | undefined;
  /** The failure in words (errorText), undefined while loading or after a success. */
  error: string | undefined;
  loading: boolean;
  /** Runs the load again (after a change the screen made). */
  reload: () => void;
}

/**
 * Loads `load()` when `deps` change; a load that finishes after a newer one started is dropped (a
 * fast typist never sees an older answer replace a newer one). Errors are kept in words.
 */
export function useAsync<T>(load: (signal: AbortSignal) => Promise<T>, deps: unknown[]): Async<T> {
  const [state, setState] = useState<{ data?: T; error?: string; loading: boolean }>({ loading: true });
  const [tick, setTick] = useState(0);
  useEffect(() => {
    const ctl = new AbortController();
    setState((s) => ({ ...s, loading: true }));
    load(ctl.signal).then(
      (data) => !ctl.signal.aborted && setState({ data, loading: false }),
      (err) => !ctl.signal.aborted && setState((s) => ({ data: s.data, error: errorText(err), loading: false })),
    );
    return () => ctl.abort();
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [...deps, tick]);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  return { data: state.data, error: state.error, loading: state.loading, reload };
}

/** Calls `f` every `ms` while the page is visible (and once when it becomes visible again). */
export function useInterval(f: () => void, ms: number | undefined): void {
  const saved = useRef(f);
  saved.current = f;
  useEffect(() => {
    if (ms === undefined) return;
    let timer: ReturnType<typeof setInterval> | undefined;
    const start = () => {
      stop();
      if (document.visibilityState === "visible") timer = setInterval(() => saved.current(), ms);
    };
    const stop = () => timer !== undefined && clearInterval(timer);
    const onVisibility = () => {
      if (document.visibilityState === "visible") saved.current();
      start();
    };
    start();
    document.addEventListener("visibilitychange", onVisibility);
    return () => {
      stop();
      document.removeEventListener("visibilitychange", onVisibility);
    };
  }, [ms]);
}

/**
 * A submit handler's state: `run(f)` marks the action busy, keeps its error in words (and the
 * field violations), and returns f's result (undefined when it failed).
 */
export function useAction() {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  const run = useCallback(async <T>(f: () => Promise<T>): Promise<T | undefined> => {
    setBusy(true);
    setError(undefined);
    try {
      return await f();
    } catch (err) {
      setError(err);
      return undefined;
    } finally {
      setBusy(false);
    }
  }, []);
  return { busy, error, run, clear: () => setError(undefined) };
}
