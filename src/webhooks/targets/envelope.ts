// What a delivery carries. The envelope is decisions.md's http body:
// {"id": <delivery id>, "type": <event type>, "createdAt", "projectId", "data": <the event or incident>}.

export interface Envelope {
  id: string;
  type: string;
  createdAt: string;
  projectId: string;
  data: Record<string, unknown>;
}

export function envelope(d: {
  id: string;
  eventType: string;
  createdAt: Date;
  projectId: string;
  payload: Record<string, unknown>;
}): Envelope {
  return { id: d.id, type: d.eventType, createdAt: d.createdAt.toISOString(), projectId: d.projectId, data: d.payload };
}
