import { randomUUID } from "node:crypto";
import type { Logger } from "pino";
import type { BackgroundTasks } from "../shared/background.js";
import type { Clock } from "../shared/clock.js";
import { forEachLimited } from "../shared/limited.js";
import { CoalescedPump } from "../shared/pump.js";
import type { Db } from "../storage/db.js";
import { MAIL_TRANSPORT_CONNECTIONS, type MailMessage, type MailReply } from "../webhooks/targets/mailer.js";
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
}
