import type { StoredEvent } from "../shared/hooks.js";

// What a delivery carries. The envelope is decisions.md's http body:
// {"id": <delivery id>, "type": <event type>, "createdAt", "projectId", "data": <the event or incident>}.

export interface Envelope {
  id: string;
  type: string;
  createdAt: string;
  projectId: string;
  data: Record<string, unknown>;
}

/** The event as the API shows it (Resources: Event). */
export function eventData(e: StoredEvent): Record<string, unknown> {
  return {
    id: e.id,
    projectId: e.projectId,
    type: e.type,
    timestamp: e.timestamp.toISOString(),
    userId: e.userId,
    groupId: e.groupId,
    sourceId: e.sourceId,
    data: e.data,
    context: e.context,
    tags: e.tags,
    createdAt: e.createdAt.toISOString(),
  };
}

export function envelope(d: { id: string; eventType: string; createdAt: Date; projectId: string; payload: Record<string, unknown> }): Envelope {
  return { id: d.id, type: d.eventType, createdAt: d.createdAt.toISOString(), projectId: d.projectId, data: d.payload };
}
