import assert from "node:assert/strict";
import http from "node:http";
import net from "node:net";
import { describe, it } from "node:test";
import pg from "pg";
import { errorBody } from "../helpers/fixtures.js";
import { BlockedAddressError, isPublicAddress, type ResolvedAddress } from "../../src/webhooks/targets/address.js";
import { AGENT_OPTIONS, sendAttempt, type Target } from "../../src/webhooks/sender.js";
import { useReceiver, waitFor } from "./receiver.js";
import { useProject } from "../helpers/use.js";

// The webhook address rule (issue #13, point 1) for every type, with WEBHOOK_ALLOW_PRIVATE off:
// refused at creation and update (400 on `url`), and before every connection (nothing reaches the
// local receiver); refusals never say what a name resolved to; a connection opened for one
// resolution is never reused for another.

const TYPES = ["http", "discord"] as const;
const PUBLIC = "http://93.184.215.14/hook"; // an IP literal: no DNS needed, never contacted here
const REFUSED = new BlockedAddressError().message;

const { t, p } = useProject({
  WEBHOOK_ALLOW_PRIVATE: "false",
  WEBHOOK_BACKOFF_BASE_MS: "60000",
  WEBHOOK_TIMEOUT_MS: "2000",
  // An internal PagerDuty endpoint: the rule holds for it too (nothing listens on port 9 here; nothing is sent).
  PAGERDUTY_EVENTS_URL: "http://127.0.0.1:9/v2/enqueue",
});
const rx = useReceiver();

const base = () => `/v1/projects/${p.projectId}/webhooks`;
const owner = () => ({ cookie: p.owner.cookie });
const rxPort = () => new URL(rx.url).port;

/** Internal targets in the forms an attacker would try (IP literals, names, IPv6 embeddings of IPv4). */
const internal = () => [
  `http://127.0.0.1:${rxPort()}/internal`,
  "http://169.254.169.254/latest/meta-data/",
  `http://[::1]:${rxPort()}/x`,
  `http://[::127.0.0.1]:${rxPort()}/x`, // IPv4-compatible
  `http://[::ffff:7f00:1]:${rxPort()}/x`, // IPv4-mapped
  "http://[::a9fe:a9fe]/latest/meta-data/", // IPv4-compatible 169.254.169.254
  "http://[64:ff9b::7f00:1]/x", // NAT64 of 127.0.0.1
  "http://0.0.0.0/x",
  "http://10.1.2.3/x",
  "http://172.16.0.1/x",
  "http://192.168.1.1/x",
  "http://100.64.0.1/x",
  "http://224.0.0.1/x",
  "http://198.51.100.7/x",
  "http://[fd00::1]/x",
  "http://[fe80::1]/x",
  "http://[2001:db8::1]/x",
  "http://127.1/x", // the URL parser makes these 127.0.0.1
  "http://2130706433/x",
  `http://localhost:${rxPort()}/x`,
];

function assertRefusal(r: { status: number; body: any; text: string }, url: string) {
  assert.equal(r.status, 400, `${url}: ${r.text}`);
  const e = errorBody(r);
  assert.equal(e.code, "validation_failed", url);
  assert.deepEqual(e.details, [{ field: "url", message: REFUSED }], url);
  // Says nothing about what the name resolved to.
  for (const leak of ["127.0.0.1", "::1", "resolves", "loopback", "private", "linkLocal"])
    assert.ok(!e.message.includes(leak), `${url}: ${e.message}`);
}

describe("address rule at creation and update, every type", () => {
  for (const type of TYPES) {
    it(`${type}: internal targets are refused at create (400 on url)`, async () => {
      for (const url of internal())
        assertRefusal(await t.rest.post(base(), { type, url, events: ["x"] }, owner()), url);
    });

    it(`${type}: internal targets are refused on PATCH; the stored url is unchanged`, async () => {
      const c = await t.rest.post(base(), { type, url: PUBLIC, events: ["x"] }, owner());
      assert.equal(c.status, 201, c.text);
      for (const url of internal())
        assertRefusal(await t.rest.patch(`${base()}/${c.body.data.id}`, { url }, owner()), url);
      assert.equal((await t.rest.get(`${base()}/${c.body.data.id}`, owner())).body.data.url, PUBLIC);
    });
  }

  it("discord takes any public host; a name that does not resolve is a 400 too", async () => {
    const c = await t.rest.post(
      base(),
      { type: "discord", url: "https://93.184.215.14/api/webhooks/1/abc", events: ["deploy"] },
      owner(),
    );
    assert.equal(c.status, 201, c.text);
    const r = await t.rest.post(
      base(),
      { type: "discord", url: "http://no-such-host.invalid/x", events: ["x"] },
      owner(),
    );
    assert.equal(r.status, 400, r.text);
    assert.deepEqual(errorBody(r).details, [{ field: "url", message: "host could not be resolved" }]);
  });
});

describe("address rule at connect time (the stored URL moved to an internal address)", () => {
  async function moveTo(id: string, url: string) {
    const db = new pg.Client({ connectionString: t.databaseUrl });
    await db.connect();
    try {
      await db.query("UPDATE webhooks SET url = $2 WHERE id = $1", [id, url]);
    } finally {
      await db.end();
    }
  }

  for (const type of TYPES) {
    it(`${type}: a test delivery to loopback (by name and by literal) never connects; the attempt does not name the address`, async () => {
      for (const [i, form] of ["localhost", "127.0.0.1", "[::ffff:7f00:1]", "[::127.0.0.1]"].entries()) {
        const path = `/connect-${type}-${i}`;
        rx.on(path, () => ({ status: 200, body: "internal secret" }));
        const c = await t.rest.post(base(), { type, url: PUBLIC, events: ["x"] }, owner());
        assert.equal(c.status, 201, c.text);
        await moveTo(c.body.data.id, `http://${form}:${rxPort()}${path}`);
        const test = await t.rest.post(`${base()}/${c.body.data.id}/test`, {}, owner());
        assert.equal(test.status, 202, test.text);
        const d = await waitFor(async () => {
          const l = await t.rest.get(`${base()}/${c.body.data.id}/deliveries`, owner());
          return l.body.data[0]?.attempts.length ? l.body.data[0] : undefined;
        }, `the refused attempt (${form})`);
        assert.equal(d.status, "retrying", form);
        assert.deepEqual(
          [d.attempts[0].statusCode, d.attempts[0].error, d.attempts[0].responseBody],
          [null, REFUSED, null],
          form,
        );
        assert.equal(rx.at(path).length, 0, `${form}: the receiver saw a request`);
      }
    });
  }
});

describe("address rule for the chat and PagerDuty channels (the HTTP delivery they share)", () => {
  it("slack and mattermost: internal hook URLs are refused at create (400 on url)", async () => {
    for (const [type, hook] of [
      ["slack", "/services/T0001/B0001/token"],
      ["mattermost", "/hooks/" + "x1".repeat(13)],
    ] as const)
      for (const url of internal().map((u) => `${new URL(u).origin}${hook}`))
        assertRefusal(await t.rest.post(base(), { type, url, events: ["x"] }, owner()), url);
  });

  it("pagerduty: an internal PAGERDUTY_EVENTS_URL is refused before connecting, recorded as for http", async () => {
    const c = await t.rest.post(
      base(),
      { type: "pagerduty", routingKey: "k".repeat(32), events: ["incident.started"] },
      owner(),
    );
    assert.equal(c.status, 201, c.text);
    assert.equal((await t.rest.post(`${base()}/${c.body.data.id}/test`, {}, owner())).status, 202);
    const d = await waitFor(async () => {
      const l = await t.rest.get(`${base()}/${c.body.data.id}/deliveries`, owner());
      return l.body.data[0]?.attempts.length ? l.body.data[0] : undefined;
    }, "the refused attempt");
    assert.deepEqual(
      [d.status, d.attempts[0].statusCode ?? null, d.attempts[0].error, d.attempts[0].responseBody ?? null],
      ["retrying", null, REFUSED, null],
    );
  });
});

describe("address classification", () => {
  it("only public unicast: no IPv4-compatible, mapped, NAT64, 6to4, Teredo, documentation or reserved forms", () => {
    for (const a of ["8.8.8.8", "93.184.215.14", "2606:4700:4700::1111", "2a00:1450:4001::1", "::ffff:8.8.8.8"])
      assert.equal(isPublicAddress(a), true, a);
    for (const a of [
      "127.0.0.1",
      "127.8.9.10",
      "0.0.0.0",
      "0.1.2.3",
      "10.0.0.1",
      "172.31.255.255",
      "192.168.0.1",
      "169.254.169.254",
      "100.64.0.1",
      "100.127.255.254",
      "224.0.0.1",
      "239.255.255.250",
      "255.255.255.255",
      "240.0.0.1",
      "192.0.0.8",
      "192.0.2.1",
      "198.18.0.1",
      "198.51.100.1",
      "203.0.113.1",
      "::",
      "::1",
      "::7f00:1",
      "::a9fe:a9fe",
      "::a00:1",
      "::ffff:7f00:1",
      "::ffff:a9fe:a9fe",
      "::ffff:0:7f00:1",
      "64:ff9b::7f00:1",
      "64:ff9b:1::1",
      "100::1",
      "fc00::1",
      "fd12:3456::1",
      "fe80::1",
      "fe80::1%eth0",
      "fec0::1",
      "ff02::1",
      "2001:db8::1",
      "2001::1",
      "2002:7f00:1::",
      "3fff::1",
      "5f00::1",
      "localhost",
      "0x7f.1",
      "127.1",
      "",
    ])
      assert.equal(isPublicAddress(a), false, a);
  });
});

/** Connects every socket to the local receiver, recording the checked address the sender asked for. */
class MappingAgent extends http.Agent {
  readonly dialed: string[] = [];
  constructor(private readonly port: number) {
    super(AGENT_OPTIONS);
  }
  override createConnection(options: { host?: string }): net.Socket {
    this.dialed.push(String(options.host));
    return net.connect({ host: "127.0.0.1", port: this.port });
  }
}

describe("the sender pins the checked address (a switchable resolver)", () => {
  const env = { id: "whd_pin", type: "x", createdAt: new Date().toISOString(), projectId: "prj_1", data: {} };
  let answer: ResolvedAddress[] = [];
  const resolve = async (host: string) => {
    assert.equal(host, "hooks.example.test");
    return answer;
  };

  for (const type of TYPES) {
    it(`${type}: a name that re-resolves to loopback is refused before any connection; a new public address gets a new connection`, async () => {
      const path = `/pinned-${type}`;
      rx.on(path, () => ({ status: 200, body: "ok" }));
      const agent = new MappingAgent(Number(rxPort()));
      const target: Target = {
        type,
        url: `http://hooks.example.test:8080${path}`,
        secret: type === "http" ? "whsec_x" : null,
      };
      const send = () =>
        sendAttempt(target, env, "evt_1", {
          timeoutMs: 2000,
          allowPrivate: false,
          now: new Date(),
          resolve,
          agents: { http: agent },
        });
      try {
        answer = [{ address: "93.184.215.14", family: 4 }];
        const first = await send();
        assert.equal(first.record.statusCode, 200, JSON.stringify(first.record));
        assert.equal(rx.at(path)[0].headers.host, "hooks.example.test:8080");
        for (const bad of ["127.0.0.1", "::1", "::ffff:127.0.0.1", "::7f00:1", "169.254.169.254"]) {
          // A mix of public and internal answers is refused as well.
          for (const list of [
            [{ address: bad, family: bad.includes(":") ? 6 : 4 }],
            [
              { address: "93.184.215.14", family: 4 },
              { address: bad, family: bad.includes(":") ? 6 : 4 },
            ],
          ] as ResolvedAddress[][]) {
            answer = list;
            const refused = await send();
            assert.deepEqual(
              [refused.record.statusCode, refused.record.error, refused.record.responseBody, refused.outcome.ok],
              [null, REFUSED, null, false],
              bad,
            );
            assert.ok(!JSON.stringify(refused.record).includes(bad), bad);
          }
        }
        assert.equal(
          rx.at(path).length,
          1,
          "the kept-alive connection was reused after the name re-resolved to loopback",
        );
        answer = [{ address: "93.184.215.15", family: 4 }];
        assert.equal((await send()).record.statusCode, 200);
        assert.deepEqual(
          agent.dialed,
          ["93.184.215.14", "93.184.215.15"],
          "a socket opened for one address was reused for another",
        );
        answer = [{ address: "93.184.215.14", family: 4 }];
        assert.equal((await send()).record.statusCode, 200);
        assert.equal(agent.dialed.length, 2, "keep-alive still works for the same checked address");
        assert.equal(rx.at(path).length, 3);
      } finally {
        agent.destroy();
      }
    });
  }

  it("resolution counts toward the timeout; nothing is sent after it fired", async () => {
    const path = "/slow-dns";
    rx.on(path, () => ({ status: 200 }));
    const slow = async () => {
      await new Promise((r) => setTimeout(r, 300));
      return [{ address: "127.0.0.1", family: 4 as const }];
    };
    const r = await sendAttempt(
      { type: "http", url: `http://slow.example.test:${rxPort()}${path}`, secret: null },
      env,
      "evt_1",
      { timeoutMs: 100, allowPrivate: true, now: new Date(), resolve: slow },
    );
    assert.match(String(r.record.error), /^timeout/);
    await new Promise((r) => setTimeout(r, 400));
    assert.equal(rx.at(path).length, 0);
  });

  it("a resolver that answers a name (not an address) is not followed", async () => {
    answer = [{ address: "localhost", family: 4 }];
    const r = await sendAttempt({ type: "discord", url: "http://hooks.example.test/x", secret: null }, env, "evt_1", {
      timeoutMs: 2000,
      allowPrivate: true,
      now: new Date(),
      resolve,
    });
    assert.deepEqual([r.record.statusCode, r.record.error], [null, "host could not be resolved"]);
  });

  it("with WEBHOOK_ALLOW_PRIVATE the local receiver works for both types, by name and by literal", async () => {
    for (const type of TYPES) {
      for (const host of ["localhost", "127.0.0.1"]) {
        const path = `/allowed-${type}-${host}`;
        rx.on(path, () => ({ status: 204 }));
        const r = await sendAttempt({ type, url: `http://${host}:${rxPort()}${path}`, secret: null }, env, "evt_1", {
          timeoutMs: 2000,
          allowPrivate: true,
          now: new Date(),
        });
        assert.equal(r.record.statusCode, 204, `${type} ${host}: ${JSON.stringify(r.record)}`);
        assert.equal(rx.at(path).length, 1);
      }
    }
  });
});
