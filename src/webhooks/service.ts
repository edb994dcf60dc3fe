import type { HandlerContext } from "@connectrpc/connect";
import { WebhookService } from "../../gen/vigil/v1/webhooks_pb.js";
import type { Deps } from "../platform/deps.js";
import { ApiError, badRequest, notFound } from "../shared/errors.js";
import { bind, type Feature } from "../shared/feature.js";
import { newId } from "../shared/ids.js";
import { jsonProblem, problemField } from "../shared/json.js";
import { validate } from "../shared/validate.js";
import { tx } from "../storage/db.js";
import { OutboxExpander } from "./expander.js";
import { OUTBOX_PAYLOAD } from "./outbox.js";
import { toDelivery, toWebhook } from "./messages.js";
import {
  checkTarget,
  checkUpdateAddress,
  createSchema,
  decodeCursor,
  encodeCursor,
  filtersInput,
  listSchema,
  recoverSchema,
  rotateSchema,
  updateSchema,
} from "./requests.js";
import { channelSettings, openChannels, type OpenChannels } from "./channels.js";
import { WebhookMetrics } from "./metrics.js";
import { DeliveryScheduler } from "./scheduler.js";
import { newWebhookSecret } from "./targets/signature.js";
import * as store from "./store.js";
import type { SubscriptionCache } from "./subscriptions.js";
import { targetOf, WEBHOOK_TYPES, type WebhookType } from "./targets/index.js";
import {
  createTemporalDispatch,
  createWebhookActivities,
  reconcileDeliveries,
  type TemporalDispatch,
  type WebhookActivities,
  type WebhookActivitiesV1,
} from "./temporal.js";
import { startPeriodic, type Periodic } from "../shared/periodic.js";
import { noteOutcomes } from "./failing.js";
import { getJob, insertJob } from "../jobs/store.js";
import { toJob } from "../jobs/messages.js";

// Webhook management (owner or admin), the triggers that enqueue deliveries (events through the
// outbox and its expander), and the runner that sends them: the embedded scheduler, or Temporal
// when TEMPORAL_ADDRESS is set.

export interface WebhooksFeature extends Feature {
  /** The delivery activities the Temporal worker serves on the webhooks queue (server/features.ts). */
  activities: WebhookActivities & WebhookActivitiesV1;
  /** Mail through the email channel's SMTP transport (undefined without SMTP_URL): status page subscribers use it. */
  mail: OpenChannels["mail"];
}

/** A webhook's name when the create gives none: the URL's host, the first address, or the type's own. */
function defaultName(type: WebhookType, d: { url: string | null; to: string[] | null }): string {
  if (d.url) return new URL(d.url).hostname;
  if (d.to?.length) return d.to.length > 1 ? `${d.to[0]} and ${d.to.length - 1} more` : d.to[0];
  return targetOf(type).defaultName ?? type;
}

/** A 400 for rotating the secret of a type that has none. */
function noSecret(type: WebhookType, field: string): ApiError {
  return badRequest(`invalid request: ${field}: ${type} webhooks have no secret`, [
    { field, message: `${type} webhooks have no secret` },
  ]);
}

/**
 * `cache`: the subscriptions the triggers (triggers.ts, wired into the ingest pipeline and uptime's
 * incidents in server/features.ts) read; this feature invalidates it when webhooks change.
 */
export function createWebhooksFeature(
  deps: Pick<
    Deps,
    | "db"
    | "clock"
    | "auth"
    | "config"
    | "limits"
    | "log"
    | "telemetry"
    | "pressure"
    | "temporal"
    | "background"
    | "notifications"
  >,
  cache: SubscriptionCache,
): WebhooksFeature {
  const { db, clock, auth, config, limits } = deps;
  const metrics = new WebhookMetrics(deps.telemetry.registry);
  /** Every type's channel (email's SMTP pool among them), for both runners. */
  const channels = openChannels(channelSettings(db, config));
  /** What a destination is checked against on create and update. */
  const checks = { allowPrivate: config.webhooks.allowPrivate, config };
  /** Management writes count per project (RATE_LIMIT_WRITES_PER_MINUTE); test and retry send requests (RATE_LIMIT_WEBHOOK_SENDS_PER_MINUTE). */
  const admin = async (ctx: HandlerContext, projectId: string, limit: "writes" | "webhookSends") => {
    const scope = await auth.project(ctx, projectId, "admin");
    await limits.take(limit, scope.projectId);
    return scope;
  };

  let temporal: TemporalDispatch | undefined;
  let reconciler: Periodic | undefined;
  let scheduler: DeliveryScheduler | undefined;
  let expander: OutboxExpander | undefined;
  const subscription = deps.notifications.subscribe({
    channels: [store.DUE_CHANNEL, store.CHANGED_CHANNEL],
    onMessage: (channel, payload) => {
      if (channel === store.CHANGED_CHANNEL) {
        cache.invalidate(payload || undefined);
        // A PATCH or DELETE may have held a webhook row the expander skipped.
        expander?.wake();
      } else if (payload === OUTBOX_PAYLOAD) expander?.wake();
      else scheduler?.wake();
    },
    onReconnect: () => {
      cache.invalidate();
      expander?.wake();
      scheduler?.wake();
    },
  });
  // Every node listens (API nodes too: their subscription caches follow changes made elsewhere).

  async function webhookOf(projectId: string, id: string) {
    const w = await store.getWebhook(db, projectId, id);
    if (!w) throw notFound("webhook");
    return w;
  }

  async function changed(projectId: string) {
    cache.invalidate(projectId);
    await store.notifyChanged(db, projectId);
  }

  /** The failing streaks after each recorded attempt, in both runners (failing.ts). */
  const failing = {
    db,
    channels,
    log: deps.log,
    disableAfterMs: config.webhooks.disableAfterDays * 86_400_000,
    publicUrl: config.publicUrl,
  };
  const note = (outcomes: { webhookId: string; ok: boolean }[], now: Date) =>
    noteOutcomes(failing, outcomes, now).catch((err: unknown) =>
      deps.log.error({ err }, "webhooks: could not note failing webhooks; the next outcome will"),
    );

  return {
    name: "webhooks",
    activities: createWebhookActivities(deps, metrics, channels, note),
    mail: (m) => channels.mail(m),
    services: [
      bind(
        WebhookService,
        {
          async createWebhook(req, ctx) {
            const scope = await admin(ctx, req.projectId, "writes");
            const input = validate(createSchema, {
              name: req.name,
              type: req.type,
              url: req.url,
              to: req.to.length ? req.to : undefined,
              routingKey: req.routingKey,
              events: req.events,
              enabled: req.enabled,
              maxPerSecond: req.maxPerSecond,
            });
            const filters = filtersInput(req.filters, config.analyticsLimits.maxFilterNodes) ?? null;
            const dest = { url: input.url ?? null, to: input.to ?? null, routingKey: input.routingKey ?? null };
            await checkTarget(input.type, { ...dest, secret: null }, checks);
            const secret = targetOf(input.type).signed ? newWebhookSecret() : null;
            const row = await store.insertWebhook(db, config.webhooks.maxPerProject, {
              type: input.type,
              events: input.events,
              enabled: input.enabled,
              url: dest.url,
              to: dest.to,
              routing_key: dest.routingKey,
              filters,
              max_per_second: input.maxPerSecond ?? null,
              id: newId("wh"),
              projectId: scope.projectId,
              name: input.name ?? defaultName(input.type, dest),
              secret,
              now: clock(),
            });
            await changed(scope.projectId);
            return { data: { ...toWebhook(row), secret: secret ?? undefined } };
          },
          async listWebhooks(req, ctx) {
            const scope = await auth.project(ctx, req.projectId, "admin");
            return { data: (await store.listWebhooks(db, scope.projectId)).map(toWebhook) };
          },
          async getWebhook(req, ctx) {
            const scope = await auth.project(ctx, req.projectId, "admin");
            return { data: toWebhook(await webhookOf(scope.projectId, req.webhookId)) };
          },
          async updateWebhook(req, ctx) {
            const scope = await admin(ctx, req.projectId, "writes");
            const input = validate(updateSchema, {
              name: req.name,
              url: req.url,
              to: req.to.length ? req.to : undefined,
              routingKey: req.routingKey,
              events: req.events.length ? req.events : undefined,
              enabled: req.enabled,
              rotateSecret: req.rotateSecret,
              maxPerSecond: req.maxPerSecond,
            });
            const filters = filtersInput(req.filters, config.analyticsLimits.maxFilterNodes);
            const w = await webhookOf(scope.projectId, req.webhookId);
            if (input.rotateSecret && !targetOf(w.type).signed) throw noSecret(w.type, "rotateSecret");
            checkUpdateAddress(w.type, input);
            const address = targetOf(w.type).address;
            if (input[address] !== undefined)
              await checkTarget(
                w.type,
                {
                  url: input.url ?? null,
                  to: input.to ?? null,
                  routingKey: input.routingKey ?? null,
                  secret: null,
                },
                checks,
              );
            const secret = input.rotateSecret ? newWebhookSecret() : null;
            const now = clock();
            const row = await tx(db, async (c) => {
              const updated = await store.updateWebhook(c, scope.projectId, w.id, { ...input, filters, secret }, now);
              if (!updated) throw notFound("webhook");
              if (input.enabled !== undefined && input.enabled !== w.enabled)
                await store.setDeliveriesPaused(c, w.id, !input.enabled, now);
              return updated;
            });
            await changed(scope.projectId);
            return { data: { ...toWebhook(row), secret: secret ?? undefined } };
          },
          // decisions.md: the new secret once; the old one signs too until the overlap ends.
          async rotateWebhookSecret(req, ctx) {
            const scope = await admin(ctx, req.projectId, "writes");
            const input = validate(rotateSchema, { overlapSeconds: req.overlapSeconds });
            const w = await webhookOf(scope.projectId, req.webhookId);
            if (!targetOf(w.type).signed) throw noSecret(w.type, "type");
            const secret = newWebhookSecret();
            const now = clock();
            const until = new Date(now.getTime() + input.overlapSeconds * 1000);
            const row = await store.rotateSecret(db, scope.projectId, w.id, secret, until, now);
            if (!row) throw notFound("webhook");
            return { data: { ...toWebhook(row), secret } };
          },
          // decisions.md: a job that attempts again the abandoned deliveries created in the range.
          async recoverDeliveries(req, ctx) {
            const scope = await admin(ctx, req.projectId, "webhookSends");
            const input = validate(recoverSchema, { since: req.since, until: req.until });
            const now = clock();
            const w = await webhookOf(scope.projectId, req.webhookId);
            const job = await tx(db, async (c) => {
              // One open recovery per webhook: a repeated request answers it (idempotent).
              await c.query("SELECT 1 FROM webhooks WHERE id = $1 FOR UPDATE", [w.id]);
              const open = await store.openRecovery(c, scope.projectId, w.id);
              if (open) return (await getJob(c, scope.projectId, open))!;
              return insertJob(
                c,
                scope.projectId,
                "webhook.recover",
                {
                  webhookId: w.id,
                  since: input.since.toISOString(),
                  until: (input.until ?? now).toISOString(),
                },
                now,
              );
            });
            return { data: toJob(job) };
          },
          async deleteWebhook(req, ctx) {
            const scope = await admin(ctx, req.projectId, "writes");
            if (!(await store.deleteWebhook(db, scope.projectId, req.webhookId))) throw notFound("webhook");
            await changed(scope.projectId);
            return {};
          },
          async listDeliveries(req, ctx) {
            const scope = await auth.project(ctx, req.projectId, "admin");
            const input = validate(listSchema, { limit: req.limit, status: req.status, cursor: req.cursor });
            const w = await webhookOf(scope.projectId, req.webhookId);
            const rows = await store.listDeliveries(db, w.id, {
              limit: input.limit,
              status: input.status,
              after: input.cursor ? decodeCursor(input.cursor) : undefined,
            });
            const hasMore = rows.length > input.limit;
            const page = rows.slice(0, input.limit);
            return {
              data: page.map(toDelivery),
              pagination: { hasMore, nextCursor: hasMore ? encodeCursor(page[page.length - 1]) : undefined },
            };
          },
          async getDelivery(req, ctx) {
            const scope = await auth.project(ctx, req.projectId, "admin");
            const w = await webhookOf(scope.projectId, req.webhookId);
            const row = await store.getDelivery(db, w.id, req.deliveryId);
            if (!row) throw notFound("delivery");
            return { data: toDelivery(row) };
          },
          async retryDelivery(req, ctx) {
            const scope = await admin(ctx, req.projectId, "webhookSends");
            const w = await webhookOf(scope.projectId, req.webhookId);
            if (!(await store.getDelivery(db, w.id, req.deliveryId))) throw notFound("delivery");
            const row = await store.scheduleRetryNow(db, w.id, req.deliveryId, clock());
            if (!row)
              throw new ApiError(
                409,
                "conflict",
                "an attempt of this delivery is in progress; retry when it has finished",
              );
            scheduler?.wake();
            return { data: toDelivery(row) };
          },
          async testWebhook(req, ctx) {
            const scope = await admin(ctx, req.projectId, "webhookSends");
            const w = await webhookOf(scope.projectId, req.webhookId);
            const data = req.data ?? { message: "This is a test delivery from Vigil.", webhookId: w.id };
            const problem = jsonProblem(data);
            if (problem)
              throw badRequest(`invalid request: ${problemField("data", problem)} ${problem.message}`, [
                { field: problemField("data", problem), message: problem.message },
              ]);
            const id = newId("whd");
            await store.insertDeliveries(
              db,
              [
                {
                  id,
                  webhook_id: w.id,
                  project_id: scope.projectId,
                  event_id: newId("evt_test"),
                  event_type: "webhook.test",
                  payload: data,
                },
              ],
              clock(),
              config.webhooks.maxAttempts,
            );
            scheduler?.wake();
            return { data: toDelivery((await store.getDelivery(db, w.id, id))!) };
          },
          // The table of targets (targets/index.ts) as the one list of types clients offer.
          async listWebhookTypes(_req, ctx) {
            await auth.session(ctx);
            return {
              data: WEBHOOK_TYPES.map((type) => {
                const t = targetOf(type);
                return { type, signed: t.signed, address: t.address, available: t.available?.(config) ?? true };
              }),
            };
          },
        },
        {
          rules: {
            createWebhook: createSchema,
            updateWebhook: updateSchema,
            listDeliveries: listSchema,
            rotateWebhookSecret: rotateSchema,
            recoverDeliveries: recoverSchema,
          },
        },
      ),
    ],
    async start() {
      // The first passes (below) run once the NOTIFY channels are listened to: a row committed before
      // that is found by them, one after it wakes them. (Started before LISTEN, an ingest's wake in
      // between was lost until the safety net, 30 s later; in Temporal mode nothing else awaited it.)
      await subscription.listening;
      if (deps.temporal) {
        temporal = createTemporalDispatch(deps, deps.temporal);
        reconciler = startPeriodic(
          deps.background,
          "webhook reconciler",
          deps.temporal.config.reconcileMs,
          async () => {
            if ((await reconcileDeliveries(db, clock())) > 0) scheduler?.wake();
          },
        );
      }
      scheduler = new DeliveryScheduler({
        db,
        clock,
        log: deps.log,
        tasks: deps.background,
        telemetry: deps.telemetry,
        metrics,
        webhooks: config.webhooks,
        channels,
        noteOutcomes: note,
        temporal,
        yieldTo: deps.pressure,
      });
      scheduler.start();
      expander = new OutboxExpander({
        db,
        clock,
        log: deps.log,
        tasks: deps.background,
        attemptLimit: () => config.webhooks.maxAttempts,
        onExpanded: () => scheduler?.wake(),
        yieldTo: deps.pressure,
      });
      // Also expands what a crashed process left in the outbox.
      expander.start();
    },
    async stop() {
      await expander?.stop();
      await scheduler?.stop();
      await reconciler?.stop();
      subscription.close();
      channels.close();
    },
  };
}
