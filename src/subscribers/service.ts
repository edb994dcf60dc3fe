import type { HandlerContext } from "@connectrpc/connect";
import { PageSubscriberService } from "../../gen/vigil/v1/pages_pb.js";
import type { Deps } from "../platform/deps.js";
import { conflict, notFound } from "../shared/errors.js";
import { bind, type Feature } from "../shared/feature.js";
import { newId, randomToken, sha256Hex } from "../shared/ids.js";
import { hashedKey } from "../shared/ratelimit.js";
import { validate } from "../shared/validate.js";
import { checkPublicUrl } from "../webhooks/targets/http-post.js";
import type { MailMessage, MailReply } from "../webhooks/targets/mailer.js";
import { newWebhookSecret } from "../webhooks/targets/signature.js";
import { createSubscriberHttp, unknownLink, type SubscriberActions } from "./http.js";
import { confirmationMail, pageUrl } from "./mail.js";
import { subscriberMessage } from "./messages.js";
import { CONFIRM_TOKEN_RE, CONFIRM_TTL_MS, readUnsubscribeToken } from "./model.js";
import { createSchema, listSchema, subscribeSchema, subscriberCursor } from "./requests.js";
import { MailSender } from "./sender.js";
import * as store from "./store.js";

// Status page subscribers (decisions.md "Status communication"; docs/pages.md "Subscribers"): the
// public subscribe / confirm / unsubscribe routes of email subscribers (http.ts), the owners'
// webhook subscribers, list and removal (PageSubscriberService: owners and admins; members and API
// keys 403; another project's page 404), and the sender of what notices queue (notices.ts,
// sender.ts). Mail goes through the email channel's SMTP transport (webhooks' `mail`), webhook
// subscribers' POSTs through the webhooks' HTTP delivery: one transport of each in the code.
// Without SMTP_URL (or PUBLIC_URL, which every link needs) the public routes are 404s and no mail
// is sent; webhook subscribers need neither.

export type SubscribersDeps = Pick<
  Deps,
  "db" | "clock" | "config" | "auth" | "limits" | "log" | "sessionSecret" | "background" | "notifications"
>;

export function createSubscribersFeature(
  deps: SubscribersDeps,
  mail: (m: MailMessage) => Promise<MailReply | undefined>,
): Feature {
  const { db, clock, config, auth, limits, log } = deps;
  const publicUrl = config.publicUrl;
  const enabled = config.mail.smtpUrl !== undefined && publicUrl !== undefined;
  const owner = (ctx: HandlerContext, projectId: string) => auth.project(ctx, projectId, "admin");
  const pageOf = async (projectId: string, pageId: string) => {
    if (!(await store.projectPage(db, projectId, pageId))) throw notFound("page");
  };
  const published = async (slug: string) => {
    const p = await store.publishedPage(db, slug);
    if (!p) throw notFound("status page");
    return p;
  };
  const unsubscriberOf = (token: string) => {
    const id = readUnsubscribeToken(deps.sessionSecret, token);
    if (!id) throw unknownLink();
    return id;
  };

  const actions: SubscriberActions = {
    enabled,
    async subscribe(slug, body) {
      const page = await published(slug);
      const { email } = validate(subscribeSchema, body);
      await limits.take("subscribeEmail", hashedKey(email));
      const token = `psc_${randomToken(32)}`;
      const now = clock();
      const outcome = await store.subscribe(db, page, {
        id: newId("psub"),
        email,
        confirmHash: sha256Hex(token),
        expiresAt: new Date(now.getTime() + CONFIRM_TTL_MS),
        now,
        max: config.statusPages.maxSubscribers,
      });
      if (outcome.action === "none") {
        if (outcome.why === "full")
          log.warn({ page: page.id }, "subscribers: the page is full; a subscription was not taken");
        return;
      }
      // After the commit; the answer is the same 202 whatever the SMTP server says (it tells nothing of the address).
      const reply = await mail(
        confirmationMail(email, page.title, {
          page: pageUrl(publicUrl!, page.slug, ""),
          confirm: pageUrl(publicUrl!, page.slug, "confirm", token),
        }),
      );
      if (!reply?.ok)
        log.warn({ page: page.id, error: reply?.error }, "subscribers: a confirmation mail was not accepted");
    },
    async confirmable(slug, token) {
      const page = await published(slug);
      if (!CONFIRM_TOKEN_RE.test(token)) throw unknownLink();
      return page;
    },
    async confirm(slug, token) {
      const page = await published(slug);
      if (!CONFIRM_TOKEN_RE.test(token) || !(await store.confirm(db, page.id, sha256Hex(token), clock())))
        throw unknownLink();
      return page;
    },
    async unsubscribable(slug, token) {
      const page = await published(slug);
      unsubscriberOf(token);
      return page;
    },
    async unsubscribe(slug, token) {
      const page = await published(slug);
      // Already removed: the same answer (a mail client may send the one-click POST twice).
      await store.removeSubscriber(db, page.id, unsubscriberOf(token));
      return page;
    },
  };

  let sender: MailSender | undefined;
  const subscription = deps.notifications.subscribe({
    channels: [store.MAILS_CHANNEL],
    onMessage: () => sender?.wake(),
    onReconnect: () => sender?.wake(),
  });

  return {
    name: "subscribers",
    services: [
      bind(
        PageSubscriberService,
        {
          async createPageSubscriber(req, ctx) {
            const { projectId } = await owner(ctx, req.projectId);
            await limits.take("writes", projectId);
            const { url } = validate(createSchema, { url: req.url });
            await checkPublicUrl(url, config.webhooks.allowPrivate);
            const secret = newWebhookSecret();
            const max = config.statusPages.maxSubscribers;
            const outcome = await store.addWebhookSubscriber(db, {
              id: newId("psub"),
              projectId,
              pageId: req.pageId,
              url,
              secret,
              now: clock(),
              max,
            });
            if (!outcome) throw notFound("page");
            if ("refused" in outcome)
              throw outcome.refused === "full"
                ? conflict(`this page has reached its limit of ${max} subscribers; remove one before adding another`, [
                    { field: "url", message: `at most ${max} subscribers per page` },
                  ])
                : conflict("this page already has that url as a subscriber", [
                    { field: "url", message: "already a subscriber of this page" },
                  ]);
            const m = subscriberMessage(outcome.added);
            return {
              data: {
                id: outcome.added.id,
                kind: "webhook",
                url,
                status: m.status,
                createdAt: m.createdAt,
                confirmedAt: m.confirmedAt,
                secret,
              },
            };
          },
          async listPageSubscribers(req, ctx) {
            const { projectId } = await owner(ctx, req.projectId);
            const input = validate(listSchema, { limit: req.limit, cursor: req.cursor });
            await pageOf(projectId, req.pageId);
            const rows = await store.listSubscribers(
              db,
              req.pageId,
              input.limit,
              input.cursor ? subscriberCursor.read(input.cursor) : undefined,
            );
            const hasMore = rows.length > input.limit;
            const list = rows.slice(0, input.limit);
            const last = list[list.length - 1];
            return {
              data: list.map(subscriberMessage),
              pagination: {
                hasMore,
                nextCursor: hasMore ? subscriberCursor.encode({ createdAt: last.created_at, id: last.id }) : undefined,
              },
            };
          },
          async deletePageSubscriber(req, ctx) {
            const { projectId } = await owner(ctx, req.projectId);
            await limits.take("writes", projectId);
            await pageOf(projectId, req.pageId);
            if (!(await store.removeSubscriber(db, req.pageId, req.subscriberId))) throw notFound("subscriber");
            return {};
          },
        },
        { rules: { createPageSubscriber: createSchema, listPageSubscribers: listSchema } },
      ),
    ],
    http: createSubscriberHttp({ actions, limits, maxBodyBytes: 16 * 1024, log }),
    async start() {
      sender = new MailSender({
        db,
        clock,
        log,
        tasks: deps.background,
        mail,
        publicUrl,
        sessionSecret: deps.sessionSecret,
        http: { timeoutMs: config.webhooks.timeoutMs, allowPrivate: config.webhooks.allowPrivate },
        leaseMs: config.webhooks.timeoutMs * 2 + 5_000,
      });
      sender.start();
    },
    async stop() {
      await sender?.stop();
      subscription.close();
    },
  };
}
