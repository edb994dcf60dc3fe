import type { Logger } from "pino";

// A background pass run every `intervalMs`, never two at once; stop() waits for the running one.
// The pass should check `stopped()` between units of work so that shutdown is prompt.

export interface Periodic {
  stop(): Promise<void>;
}

export function startPeriodic(
  log: Logger,
  name: string,
  intervalMs: number,
  pass: (stopped: () => boolean) => Promise<void>,
): Periodic {
  let stopped = false;
  let running: Promise<void> | undefined;
  const timer = setInterval(() => {
    if (running || stopped) return;
    running = pass(() => stopped)
      .catch((err) => log.error({ err }, `${name} failed`))
      .finally(() => (running = undefined));
  }, intervalMs);
  timer.unref();
  return {
    async stop() {
      stopped = true;
      clearInterval(timer);
      await running;
    },
  };
}
