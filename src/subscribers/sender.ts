import { randomUUID } from "node:crypto";
import type { Logger } from "pino";
import type { BackgroundTasks } from "../shared/background.js";
import type { Clock } from "../shared/clock.js";
import { forEachLimited } from "../shared/limited.js";
import { CoalescedPump } from "../shared/pump.js";
import type { Db } from "../storage/db.js";
import { envelope } from "../webhooks/targets/envelope.js";
import { postJson } from "../webhooks/targets/http-post.js";
import { MAIL_TRANSPORT_CONNECTIONS, type MailMessage, type MailReply } from "../webhooks/targets/mailer.js";
import { SIGNATURE_HEADER, signatureHeader } from "../webhooks/targets/signature.js";
import { pageUrl, noticeMail } from "./mail.js";
import { isNoticeType, type NoticeType, MAX_MAIL_ATTEMPTS, retryDelayMs, unsubscribeToken } from "./model.js";
import type { NoticeContent } from "./notices.js";
import { claimMails, finishMails, nextMailDue, removeSubscriber, type ClaimedMail } from "./store.js";

// The sender of subscribers' notices (worker nodes): claims due page_mails rows under a lease (SKIP
// LOCKED: no two nodes send the same notice at once; a crashed node's rows fall due again when its
// lease ends) and sends each: an email subscriber's through the SMTP transport of the email channel
// (one mail transport), a webhook subscriber's as a signed JSON POST through the webhooks' HTTP
// delivery (its public-address checks, timeout and answer cap: one HTTP delivery). The rows sent
// are deleted. A refused or failed one is tried again later (retryDelayMs), at most
// MAX_MAIL_ATTEMPTS times; a receiver answering 410 Gone removes its webhook subscriber. Woken by
// the NOTIFY of the transaction that queued them, at start-up (what a crash left), after a LISTEN
// reconnection, and by a timer at the next due retry.

export interface SenderOptions {
  db: Db;
  clock: Clock;
  log: Logger;
  tasks: BackgroundTasks;
  mail: (m: MailMessage) => Promise<MailReply | undefined>;
  /** PUBLIC_URL: the links of mails (an email subscriber's notice waits for it) and a webhook body's page URL. */
  publicUrl: string | undefined;
  sessionSecret: string;
  /** The webhooks' delivery settings (WEBHOOK_TIMEOUT_MS, WEBHOOK_ALLOW_PRIVATE). */
  http: { timeoutMs: number; allowPrivate: boolean };
  /** Mails claimed per pass. */
  batch?: number;
  /** A claimed mail's lease: longer than a send may take. */
  leaseMs: number;
}

const MAX_TIMER_MS = 5 * 60_000;

export class MailSender {
  private readonly pump: CoalescedPump;

  constructor(private readonly o: SenderOptions) {
    this.pump = new CoalescedPump({
      tasks: o.tasks,
      log: o.log,
      name: "subscriber mails",
      expectedMs: MAX_TIMER_MS,
      maxTimerMs: MAX_TIMER_MS,
      failure: "subscribers: mail pass failed; retrying in 1 s",
      pass: async (stopped) => {
        await this.drain(stopped);
        const next = await nextMailDue(this.o.db);
        return next ? next.getTime() - this.o.clock().getTime() : null;
      },
    });
  }

  start(): void {
    this.pump.start();
  }

  wake(): void {
    this.pump.wake();
  }

  stop(): Promise<void> {
    return this.pump.stop();
  }

  private async drain(stopped: () => boolean): Promise<void> {
    const batch = this.o.batch ?? 100;
    while (!stopped()) {
      const now = this.o.clock();
      const token = randomUUID();
      const rows = await claimMails(this.o.db, now, new Date(now.getTime() + this.o.leaseMs), token, batch);
      if (!rows.length) return;
      // As many at once as the mail transport has connections: more would only build messages ahead
      // of their turn, in bursts that hold up the event loop (the public page's reads among others).
      const results: boolean[] = [];
      await forEachLimited([...rows.keys()], MAIL_TRANSPORT_CONNECTIONS, async (i) => {
        results[i] = await this.send(rows[i]);
      });
      const done: { noticeId: string; subscriberId: string }[] = [];
      const retry: { noticeId: string; subscriberId: string; dueAt: Date }[] = [];
      rows.forEach((r, i) => {
        const key = { noticeId: r.notice_id, subscriberId: r.subscriber_id };
        if (results[i] || r.attempts >= MAX_MAIL_ATTEMPTS) done.push(key);
        else retry.push({ ...key, dueAt: new Date(this.o.clock().getTime() + retryDelayMs(r.attempts)) });
      });
      await finishMails(this.o.db, token, done, retry);
      if (rows.length < batch) return;
    }
  }

  /** True when the notice is done with: sent, or not ours to send. */
  private async send(r: ClaimedMail): Promise<boolean> {
    if (!isNoticeType(r.event_type)) return true; // not ours to send: dropped
    const error = r.url !== null ? await this.post(r, r.url) : await this.mail(r, r.event_type);
    if (error === undefined) return true;
    this.o.log.warn(
      { notice: r.notice_id, subscriber: r.subscriber_id, attempts: r.attempts, error },
      "subscribers: a notice was not accepted; trying again later",
    );
    return false;
  }

  /** An email subscriber's mail; undefined when the SMTP server took it, else why not. */
  private async mail(r: ClaimedMail, type: NoticeType): Promise<string | undefined> {
    const publicUrl = this.o.publicUrl;
    if (r.email === null || publicUrl === undefined) return "no PUBLIC_URL for the mail's links";
    const token = unsubscribeToken(this.o.sessionSecret, r.subscriber_id);
    const m = noticeMail(r.email, r.page_title, type, r.payload as unknown as NoticeContent, {
      page: pageUrl(publicUrl, r.page_slug, ""),
      unsubscribe: pageUrl(publicUrl, r.page_slug, "unsubscribe", token),
    });
    const reply = await this.o.mail(m);
    return reply?.ok ? undefined : (reply?.error ?? "no SMTP_URL");
  }

  /**
   * A webhook subscriber's POST: the webhooks' envelope (`id` the notice's, `type` its event type,
   * `data` the page and what the mail would say), signed with the subscriber's secret. Undefined
   * when the receiver answered 2xx, or 410 Gone (the subscriber is removed), else why not.
   */
  private async post(r: ClaimedMail, url: string): Promise<string | undefined> {
    const now = this.o.clock();
    const body = JSON.stringify(
      envelope({
        id: r.notice_id,
        eventType: r.event_type,
        createdAt: r.notice_at,
        projectId: r.project_id,
        payload: {
          page: {
            slug: r.page_slug,
            title: r.page_title,
            url: this.o.publicUrl === undefined ? null : pageUrl(this.o.publicUrl, r.page_slug, ""),
          },
          ...r.payload,
        },
      }),
    );
    const headers: Record<string, string> = { "x-vigil-event-id": r.notice_id };
    if (r.secret) headers[SIGNATURE_HEADER] = signatureHeader(r.secret, body, Math.floor(now.getTime() / 1000));
    const { record, outcome } = await postJson({ url, body, headers }, { ...this.o.http, now });
    if (outcome.ok) return undefined;
    if (record.statusCode === 410) {
      await removeSubscriber(this.o.db, r.page_id, r.subscriber_id);
      this.o.log.info({ subscriber: r.subscriber_id }, "subscribers: a webhook receiver answered 410 Gone; removed");
      return undefined;
    }
    return record.error ?? `HTTP ${record.statusCode}`;
  }
}
