import { spawn, type ChildProcess } from "node:child_process";
import path from "node:path";
import readline from "node:readline";
import { after } from "node:test";

// A real SMTP server process on loopback for the email webhook tests: aiosmtpd (PyPI), run by
// test/helpers/smtp_server.py. npm test's preflight (test/preflight.ts) installs aiosmtpd into
// .tmp/aiosmtpd when a selected file imports this helper and Python cannot import it; the path is
// handed down as VIGIL_TEST_PYTHONPATH. The server prints each message it accepted as a JSON line;
// `messages` holds them: envelope, login, headers, text and HTML as a mail client shows them.

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), "../..");

export interface ReceivedMail {
  id: number;
  mailFrom: string;
  rcptTos: string[];
  /** The AUTH login used (null without AUTH). */
  login: string | null;
  /** Header names in lower case. */
  headers: Record<string, string>;
  text: string | null;
  html: string | null;
}

export interface SmtpServerOptions {
  /** Require AUTH with this login. */
  user?: string;
  password?: string;
}

export class SmtpServer {
  readonly messages: ReceivedMail[] = [];
  port = 0;
  private child!: ChildProcess;

  static async start(opts: SmtpServerOptions = {}): Promise<SmtpServer> {
    const s = new SmtpServer();
    const args = [path.join(root, "test/helpers/smtp_server.py")];
    if (opts.user) args.push("--user", opts.user, "--password", opts.password ?? "");
    const pythonPath = process.env.VIGIL_TEST_PYTHONPATH ?? path.join(root, ".tmp/aiosmtpd");
    s.child = spawn(process.env.PYTHON ?? "python3", args, {
      env: { ...process.env, PYTHONPATH: [pythonPath, process.env.PYTHONPATH].filter(Boolean).join(path.delimiter) },
      stdio: ["pipe", "pipe", "pipe"],
    });
    let stderr = "";
    s.child.stderr!.on("data", (c: Buffer) => (stderr += c.toString()));
    const lines = readline.createInterface({ input: s.child.stdout! });
    await new Promise<void>((resolve, reject) => {
      s.child.once("exit", (code) =>
        reject(new Error(`the SMTP server (aiosmtpd) exited (${code}) before listening: ${stderr.trim()}`)),
      );
      lines.on("line", (line) => {
        const m = JSON.parse(line) as { port?: number } & ReceivedMail;
        if (m.port !== undefined) {
          s.port = m.port;
          resolve();
        } else s.messages.push(m);
      });
    });
    return s;
  }

  /** SMTP_URL for this server (credentials percent-encoded). */
  url(user?: string, password?: string): string {
    const cred = user ? `${encodeURIComponent(user)}:${encodeURIComponent(password ?? "")}@` : "";
    return `smtp://${cred}127.0.0.1:${this.port}`;
  }

  async close(): Promise<void> {
    if (this.child.exitCode !== null) return;
    const exited = new Promise((r) => this.child.once("exit", r));
    this.child.stdin!.end();
    const kill = setTimeout(() => this.child.kill("SIGKILL"), 3000);
    await exited;
    clearTimeout(kill);
  }
}

/**
 * An SMTP server for this file, started on first use (so a useProject env function may await it,
 * whatever order the file's before() hooks run in) and closed after the file's tests.
 */
export function useSmtpServer(opts: SmtpServerOptions = {}): () => Promise<SmtpServer> {
  let started: Promise<SmtpServer> | undefined;
  after(async () => (await started?.catch(() => undefined))?.close());
  return () => (started ??= SmtpServer.start(opts));
}
