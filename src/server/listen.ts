import http from "node:http";
import http2 from "node:http2";
import net from "node:net";

// One port for HTTP/1.1 (REST, Connect) and cleartext HTTP/2 (gRPC, Connect): the first bytes of
// each connection decide. HTTP/2 prior-knowledge connections open with the "PRI * HTTP/2.0" preface.

type Handler = (req: http.IncomingMessage | http2.Http2ServerRequest, res: http.ServerResponse | http2.Http2ServerResponse) => void;

export interface Listener {
  port: number;
  close(): Promise<void>;
}

const PREFACE = Buffer.from("PRI * HTTP/2.0");

export async function listen(handler: Handler, host: string, port: number): Promise<Listener> {
  const h1 = http.createServer({ keepAliveTimeout: 65_000, requestTimeout: 120_000 }, handler);
  const h2 = http2.createServer({}, handler);
  const sockets = new Set<net.Socket>();
  const tcp = net.createServer((socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    let seen = Buffer.alloc(0);
    const sniff = () => {
      let chunk: Buffer | null;
      while ((chunk = socket.read()) !== null) seen = Buffer.concat([seen, chunk]);
      const n = Math.min(seen.length, PREFACE.length);
      const prefixMatches = seen.subarray(0, n).equals(PREFACE.subarray(0, n));
      if (prefixMatches && seen.length < PREFACE.length) return; // undecided: wait for more bytes
      socket.off("readable", sniff);
      socket.unshift(seen);
      (prefixMatches ? h2 : h1).emit("connection", socket);
    };
    socket.on("readable", sniff);
    socket.on("error", () => socket.destroy());
  });
  await new Promise<void>((resolve, reject) => {
    tcp.once("error", reject);
    tcp.listen(port, host, () => resolve());
  });
  let inflight = 0;
  const track = (_req: unknown, res: http.ServerResponse | http2.Http2ServerResponse) => {
    inflight++;
    res.once("close", () => inflight--);
  };
  h1.on("request", track);
  h2.on("request", track);

  return {
    port: (tcp.address() as net.AddressInfo).port,
    async close() {
      const closed = new Promise<void>((resolve) => tcp.close(() => resolve()));
      // Finish what is in flight (up to 10 s), closing idle keep-alive connections as they free up.
      const deadline = Date.now() + 10_000;
      while (inflight > 0 && Date.now() < deadline) {
        h1.closeIdleConnections();
        await new Promise((r) => setTimeout(r, 20));
      }
      h1.closeAllConnections();
      h2.close();
      for (const s of sockets) s.destroy();
      await closed;
    },
  };
}
