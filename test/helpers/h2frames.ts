import net from "node:net";

// A bare HTTP/2 client over a socket, for frame orders and counts Node's own client never sends
// (body bytes and RST_STREAM in one write; more streams than the server allows): frames as RFC 9113
// lays them out, header blocks as HPACK literals without indexing or Huffman coding.

export const FRAME = { DATA: 0, HEADERS: 1, RST_STREAM: 3, SETTINGS: 4, GOAWAY: 7 } as const;
/** RST_STREAM / GOAWAY error codes used by the tests. */
export const H2_ERROR = { PROTOCOL_ERROR: 1, REFUSED_STREAM: 7, CANCEL: 8 } as const;

const u32 = (n: number) => Buffer.from([n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255]);

export function frame(type: number, flags: number, stream: number, payload: Buffer = Buffer.alloc(0)): Buffer {
  const head = Buffer.from([payload.length >>> 16, (payload.length >>> 8) & 255, payload.length & 255, type, flags]);
  return Buffer.concat([head, u32(stream), payload]);
}

function hpackString(s: string): Buffer {
  const b = Buffer.from(s);
  if (b.length >= 127) throw new Error("header too long for this encoder");
  return Buffer.concat([Buffer.from([b.length]), b]);
}

/** A HEADERS frame (END_HEADERS; END_STREAM only when `end`: otherwise the body is still to come). */
export const headersFrame = (stream: number, headers: Record<string, string>, end = false) =>
  frame(
    FRAME.HEADERS,
    end ? 5 : 4,
    stream,
    Buffer.concat(Object.entries(headers).flatMap(([k, v]) => [Buffer.from([0]), hpackString(k), hpackString(v)])),
  );

/** RST_STREAM with `code`. */
export const rstFrame = (stream: number, code: number) => frame(FRAME.RST_STREAM, 0, stream, u32(code));

interface ReceivedFrame {
  type: number;
  flags: number;
  stream: number;
  payload: Buffer;
}

export interface RawHttp2 {
  /** Writes the frames in ONE socket write. */
  send(frames: Buffer[]): void;
  /** Every frame the server has sent so far. */
  received: ReceivedFrame[];
  close(): void;
}

/** Connects, sends the preface, empty SETTINGS and the ACK of the server's SETTINGS (always its first frame). */
export async function rawHttp2(port: number): Promise<RawHttp2> {
  const s = net.connect(port, "127.0.0.1");
  await new Promise<void>((resolve, reject) => s.once("connect", resolve).once("error", reject));
  s.on("error", () => undefined);
  const received: ReceivedFrame[] = [];
  let pending = Buffer.alloc(0);
  s.on("data", (d: Buffer) => {
    pending = Buffer.concat([pending, d]);
    while (pending.length >= 9) {
      const length = (pending[0] << 16) | (pending[1] << 8) | pending[2];
      if (pending.length < 9 + length) break;
      received.push({
        type: pending[3],
        flags: pending[4],
        stream: pending.readUInt32BE(5) & 0x7fffffff,
        payload: pending.subarray(9, 9 + length),
      });
      pending = pending.subarray(9 + length);
    }
  });
  s.write(
    Buffer.concat([
      Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"),
      frame(FRAME.SETTINGS, 0, 0),
      frame(FRAME.SETTINGS, 1, 0),
    ]),
  );
  return { send: (frames) => s.write(Buffer.concat(frames)), received, close: () => s.destroy() };
}
