import { create } from "@bufbuild/protobuf";
import { GetStatusPageResponseSchema, StatusPageSchema, type StatusPage } from "../../gen/vigil/v1/status_pb.js";
import { messageToRestJson } from "../transcoding/json.js";
import type { MaintenanceView, PageView } from "./model.js";

const maintenance = (m: MaintenanceView) => ({
  title: m.title,
  description: m.description ?? undefined,
  startsAt: m.startsAt.toISOString(),
  endsAt: m.endsAt.toISOString(),
  monitors: m.monitors,
});

// A page view as the API message (what gRPC and Connect callers get) and as the bytes of its REST
// answer: exactly what the transcoder would write for that message (src/transcoding/json.ts), made
// once per snapshot instead of once per request. No field of the view that the decisions.md shape
// lacks (a monitor's slug) is copied.

export function statusPageMessage(v: PageView): StatusPage {
  return create(StatusPageSchema, {
    title: v.title,
    description: v.description ?? undefined,
    status: v.status,
    monitors: v.monitors.map((m) => ({
      name: m.name,
      section: m.section ?? undefined,
      status: m.status,
      uptimePercentage24h: m.uptimePercentage24h ?? undefined,
      days: m.days.map((d) => ({
        date: d.date,
        status: d.status,
        uptimePercentage: d.uptimePercentage ?? undefined,
        downtimeMs: BigInt(Math.round(d.downtimeMs)),
      })),
    })),
    incidents: v.incidents.map((i) => ({
      title: i.title,
      description: i.description ?? undefined,
      status: i.status,
      kind: i.kind,
      impact: i.impact,
      startedAt: i.startedAt.toISOString(),
      endedAt: i.endedAt?.toISOString(),
      updates: i.updates.map((u) => ({ at: u.at.toISOString(), message: u.message, status: u.status ?? undefined })),
    })),
    maintenances: {
      active: v.maintenances.active.map(maintenance),
      upcoming: v.maintenances.upcoming.map(maintenance),
    },
  });
}

/** The REST body of GET /v1/status/{slug}: `{"data": ...}` as the transcoder writes the response message. */
export function statusPageJson(page: StatusPage): Buffer {
  const response = create(GetStatusPageResponseSchema, { data: page });
  return Buffer.from(
    JSON.stringify(messageToRestJson(GetStatusPageResponseSchema, response as unknown as Record<string, unknown>)),
  );
}
