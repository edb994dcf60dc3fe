import { randomUUID } from "node:crypto";
import type { Logger } from "pino";
import type { BackgroundTasks } from "../shared/background.js";
import type { Clock } from "../shared/clock.js";
import { Coalescer } from "../shared/coalesce.js";
import { failureLevel } from "../shared/periodic.js";
import type { Db } from "../storage/db.js";
import type { MailMessage, MailReply } from "../webhooks/targets/mailer.js";
import { pageUrl, noticeMail } from "./mail.js";
import { isNoticeType, MAX_MAIL_ATTEMPTS, retryDelayMs, unsubscribeToken } from "./model.js";
import type { NoticeContent } from "./notices.js";
import { claimMails, finishMails, nextMailDue, type ClaimedMail } from "./store.js";

// The sender of subscribers' mails (worker nodes): claims due page_mails rows under a lease (SKIP
// LOCKED: no two nodes send the same mail at once; a crashed node's mails fall due again when its
// lease ends), hands each to the SMTP transport of the email channel (one mail transport), and
// deletes the rows it sent. A refused or failed mail is tried again later (retryDelayMs), at most
// MAX_MAIL_ATTEMPTS times. Woken by the NOTIFY of the transaction that queued mails, at start-up
// (what a crash left), after a LISTEN reconnection, and by a timer at the next due retry.

export interface SenderOptions {
  db: Db;
  clock: Clock;
  log: Logger;
  tasks: BackgroundTasks;
  mail: (m: MailMessage) => Promise<MailReply | undefined>;
  publicUrl: string;
  sessionSecret: string;
  /** Mails claimed per pass. */
  batch?: number;
  /** A claimed mail's lease: longer than a send may take. */
  leaseMs: number;
}

const MAX_TIMER_MS = 5 * 60_000;

export class MailSender {
  private readonly passes = new Coalescer<void>({ flush: () => this.pump() });
  private stopped = true;
  private timer?: NodeJS.Timeout;

  constructor(private readonly o: SenderOptions) {}

  start(): void {
    this.stopped = false;
    this.wake();
  }

  wake(): void {
    if (this.stopped) return;
    void this.passes.submit();
  }

  private async pump(): Promise<void> {
    clearTimeout(this.timer);
    const task = this.o.tasks.record("subscriber mails", MAX_TIMER_MS);
    try {
      await task.run(() => this.drain());
      const next = await nextMailDue(this.o.db);
      if (next) this.arm(next.getTime() - this.o.clock().getTime());
    } catch (err) {
      this.o.log[failureLevel(err)]({ err }, "subscribers: mail pass failed; retrying in 1 s");
      this.arm(1_000);
    }
  }

  private async drain(): Promise<void> {
    const batch = this.o.batch ?? 100;
    while (!this.stopped) {
      const now = this.o.clock();
      const token = randomUUID();
      const rows = await claimMails(this.o.db, now, new Date(now.getTime() + this.o.leaseMs), token, batch);
      if (!rows.length) return;
      const results = await Promise.all(rows.map((r) => this.send(r)));
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

  /** True when the SMTP server took the mail. */
  private async send(r: ClaimedMail): Promise<boolean> {
    if (!isNoticeType(r.event_type)) return true; // not ours to send: dropped
    const token = unsubscribeToken(this.o.sessionSecret, r.subscriber_id);
    const m = noticeMail(r.email, r.page_title, r.event_type, r.payload as unknown as NoticeContent, {
      page: pageUrl(this.o.publicUrl, r.page_slug, ""),
      unsubscribe: pageUrl(this.o.publicUrl, r.page_slug, "unsubscribe", token),
    });
    const reply = await this.o.mail(m);
    if (reply?.ok) return true;
    this.o.log.warn(
      { notice: r.notice_id, subscriber: r.subscriber_id, attempts: r.attempts, error: reply?.error ?? "no SMTP_URL" },
      "subscribers: a mail was not accepted; trying again later",
    );
    return false;
  }

  private arm(ms: number): void {
    if (this.stopped) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.wake(), Math.max(0, Math.min(ms, MAX_TIMER_MS)));
    this.timer.unref?.();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.passes.idle();
  }
}
