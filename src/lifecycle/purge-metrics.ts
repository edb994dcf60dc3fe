import { Counter, Gauge, type Registry } from "prom-client";

// The purge sweeper's Prometheus metrics (METRICS_PORT; docs/operations.md), on the process's registry.

export class PurgeMetrics {
  /** Rows of deleted projects this node removed (every table, metric points and rollups included). */
  readonly rows: Counter;
  /** Deleted projects whose purge this node finished (their deleted_projects row removed). */
  readonly finished: Counter;
  /** Deleted projects still to purge, as the node holding the sweeper's lock last saw them. */
  readonly pending: Gauge;

  constructor(registry: Registry) {
    this.rows = new Counter({
      name: "vigil_purge_rows_deleted_total",
      help: "Rows of deleted projects removed by the purge sweeper",
      registers: [registry],
    });
    this.finished = new Counter({
      name: "vigil_purge_projects_finished_total",
      help: "Deleted projects whose purge finished (nothing of theirs is left)",
      registers: [registry],
    });
    this.pending = new Gauge({
      name: "vigil_purge_pending_projects",
      help: "Deleted projects still being purged, at the start of the last pass that held the sweeper's lock",
      registers: [registry],
    });
  }
}
