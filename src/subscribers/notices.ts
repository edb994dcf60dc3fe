import type { PoolClient } from "pg";
import { isNoticeType, type NoticeType } from "./model.js";
import { queueNotice } from "./store.js";

// From a stored cause to the mails of the pages it concerns: the incident listener (wired in
// server/features.ts with the webhooks' one) runs inside the transaction that opened, updated or
// resolved an incident, or started or ended a maintenance window, and queues one notice per page
// listing one of its monitors, with one mail per confirmed subscriber (store.ts queueNotice).
// What a mail says is taken from the notice's payload now, so the sender needs nothing else.

/** What a page's subscribers are told of one notice (page_notices.payload). */
export interface NoticeContent {
  title: string;
  message: string | null;
  /** The incident's workflow status (`investigating` ... `resolved`, `open` for a monitor's), or null. */
  status: string | null;
  impact: string | null;
  /** The names of the monitors concerned. */
  monitors: string[];
  at: string;
}

/** The notice as the trigger path hands it over (uptime's IncidentNotice; maintenance's notices too). */
export interface CauseNotice {
  type: string;
  projectId: string;
  dedupeKey: string;
  payload: Record<string, unknown>;
  at: Date;
}

type Obj = Record<string, unknown>;
const obj = (v: unknown): Obj | undefined =>
  typeof v === "object" && v !== null && !Array.isArray(v) ? (v as Obj) : undefined;
const str = (v: unknown): string | null => (typeof v === "string" && v !== "" ? v : null);
const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : []);
const named = (v: unknown): { id: string | null; name: string | null }[] =>
  (Array.isArray(v) ? v : v === undefined ? [] : [v]).map((m) => ({ id: str(obj(m)?.id), name: str(obj(m)?.name) }));

/** The monitors a notice concerns and what its mail says, from its payload; undefined when it concerns none. */
function readNotice(
  type: NoticeType,
  payload: Obj,
  at: Date,
): { monitorIds: string[]; content: NoticeContent } | undefined {
  const maintenance = type === "maintenance.started" || type === "maintenance.completed";
  const subject = (maintenance ? obj(payload.maintenance) : obj(payload.incident)) ?? payload;
  const monitors = [...named(payload.monitor), ...named(payload.monitors)];
  const monitorIds = [
    ...new Set([
      ...strings(subject.monitorIds),
      ...monitors.flatMap((m) => (m.id ? [m.id] : [])),
      ...(str(subject.monitorId) ? [str(subject.monitorId)!] : []),
    ]),
  ];
  if (!monitorIds.length) return undefined;
  const names = monitors.flatMap((m) => (m.name ? [m.name] : []));
  const title =
    str(subject.title) ??
    (names.length ? `${names.join(", ")} ${type === "incident.recovered" ? "is up again" : "is down"}` : "Incident");
  return {
    monitorIds,
    content: {
      title,
      message: str(obj(payload.update)?.message) ?? str(subject.description),
      status: str(obj(payload.update)?.status) ?? str(subject.status),
      impact: str(subject.impact),
      monitors: names,
      at: at.toISOString(),
    },
  };
}

/** The listener: queues the notice's mails in the cause's transaction (nothing for types subscribers are not told). */
export async function queueSubscriberMails(c: PoolClient, n: CauseNotice): Promise<void> {
  if (!isNoticeType(n.type)) return;
  const read = readNotice(n.type, n.payload, n.at);
  if (!read) return;
  await queueNotice(c, {
    projectId: n.projectId,
    monitorIds: read.monitorIds,
    eventType: n.type,
    dedupeKey: n.dedupeKey,
    payload: { ...read.content },
    now: n.at,
  });
}
