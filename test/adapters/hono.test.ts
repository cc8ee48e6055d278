/** The Hono adapter on a real Hono 4 server through @hono/node-server (see scenario.ts for the cases). */
import { connect, type AddressInfo } from "node:net";
import { serve, type ServerType } from "@hono/node-server";
import { Hono } from "hono";
import { expect, it } from "vitest";
import { newsletterPolicy, type PolicyEnv } from "../../src/adapters/hono.js";
import { describeAdapter, Unauthenticated, type Host, type Running } from "./scenario.js";

async function start(host: Host): Promise<Running> {
  const app = new Hono<PolicyEnv>();
  app.use(
    newsletterPolicy({
      policy: host.policy,
      who: (c) => host.who(c.req.header("authorization")),
      newsletter: (_c, { segments }) => host.newsletter(segments),
      onDecision: (decision) => host.onDecision(decision),
      onHookError: (error) => host.onHookError(error),
      onReplay: (decision, c) => {
        if (c.req.header("x-replay") === "throw") throw new Error("the stored results are down");
        const stored = host.replay(decision, c.req.header("idempotency-key"));
        return stored === undefined ? undefined : c.json({ replayed: stored });
      },
    }),
  );
  for (const path of ["/newsletters/:id/subscribers", "/newsletters/:id/articles", "/newsletters/:id/threads", "/newsletters/:id/insights"]) {
    app.get(path, (c) => c.json(host.read(c.get("decision"))));
  }
  app.post("/articles/:id/send", (c) => {
    const result = host.send(c.req.param("id"), c.req.header("x-fail"), c.req.header("idempotency-key"), c.get("decision"));
    return c.json(result.body, result.status as 200);
  });
  // a handler that reads the raw body (an upload): nothing has spent it
  app.post("/newsletters/:id/articles", async (c) => c.json({ bytes: (await c.req.raw.arrayBuffer()).byteLength }));
  app.post("/articles/:id/test-send", async (c) => {
    const body = (await c.req.json()) as { to: string[] }; // Hono caches the body the adapter read: still readable here
    return c.json({ to: body.to });
  });
  app.onError((error, c) => (error instanceof Unauthenticated ? c.json({ error: "unauthenticated" }, 401) : c.json({ error: "internal" }, 500)));
  const server: ServerType = await new Promise((resolve) => {
    const s = serve({ fetch: app.fetch, port: 0, hostname: "127.0.0.1" }, () => resolve(s));
  });
  return {
    base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** What a raw client is answered, up to the end of the status line and headers, within `ms`; "" when nothing came. */
function rawAnswer(base: string, request: string, ms: number): Promise<string> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve) => {
    let got = "";
    const socket = connect(Number(port), hostname, () => socket.write(request));
    const done = (): void => {
      socket.destroy();
      resolve(got);
    };
    const timer = setTimeout(done, ms);
    socket.on("data", (chunk) => {
      got += String(chunk);
      if (got.includes("\r\n\r\n")) {
        clearTimeout(timer);
        done();
      }
    });
    socket.on("error", () => undefined);
  });
}

describeAdapter("Hono 4", start, ({ call, base, host }) => {
  it("DESIGN Adapters: `who` answers before the body is read: a request without a credential that announces 50 MB is answered 401 before it has sent its body (the adapter read and parsed a 150 MB body first; found by an adapter review)", async () => {
    const head = "POST /articles/a_1/send HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer nobody\r\nContent-Type: application/json\r\nContent-Length: 50000000\r\n\r\n{";
    expect((await rawAnswer(base(), head, 5_000)).split("\r\n")[0]).toBe("HTTP/1.1 401 Unauthorized");
  });

  it("a body that is not JSON is left to the handler: a raw read gets every byte, and a multipart upload retried under its Idempotency-Key is a replay (reading every body spent raw reads and made a retry with a new boundary a 409; found by a diff review)", async () => {
    const raw = await call("/newsletters/nl_1/articles", "owner-raw", { method: "POST", headers: { "content-type": "application/octet-stream" }, raw: "x".repeat(1000) });
    expect(raw.status).toBe(200);
    expect(raw.json).toEqual({ bytes: 1000 });
    // as fetch sends FormData: a new random boundary on every send
    const upload = (boundary: string) =>
      call("/newsletters/nl_1/articles", "owner-raw", {
        method: "POST",
        headers: { "content-type": `multipart/form-data; boundary=${boundary}`, "idempotency-key": "hono-upload-1" },
        raw: `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.txt"\r\n\r\nhello\r\n--${boundary}--\r\n`,
      });
    expect((await upload("b1")).status).toBe(200);
    expect((await upload("b2")).status).toBe(200);
    expect(host.decisions.at(-1)!.reason).toEqual({ rule: "allowed", replay: true }); // a replay, not a 409
  });

  it("DESIGN §7: JSON sent as text/plain (fetch's default for a string) is judged as c.req.json() reads it: one Idempotency-Key with two such bodies is 409, and a test send's `to` is counted (found by reviews)", async () => {
    const headers = { "content-type": "text/plain;charset=UTF-8", "idempotency-key": "hono-text-1" };
    expect((await call("/articles/a_1/send", "owner-text", { method: "POST", headers, raw: '{"title":"A"}' })).status).toBe(200);
    const second = await call("/articles/a_1/send", "owner-text", { method: "POST", headers, raw: '{"title":"B"}' });
    expect(second.status).toBe(409);
    const ok = await call("/articles/a_1/test-send", "owner-text", { method: "POST", headers: { "content-type": "text/plain" }, raw: '{"to":["a@example.com"]}' });
    expect(ok.status).toBe(200);
    const six = await call("/articles/a_1/test-send", "owner-text", { method: "POST", headers: { "content-type": "text/plain" }, raw: JSON.stringify({ to: ["a", "b", "c", "d", "e", "f"].map((x) => `${x}@example.com`) }) });
    expect(six.status).toBe(400);
  });

  it("DESIGN §7: a body that is not JSON is judged as its bytes: `x` and `\"x\"` under one key, or two bodies that are not JSON, are 409, and the same text again a replay (both read as one body; found by a diff review)", async () => {
    const send = (key: string, type: string, raw: string) => call("/articles/a_1/send", "owner-bytes", { method: "POST", headers: { "content-type": type, "idempotency-key": key }, raw });
    expect((await send("hono-bytes-1", "text/plain", "x")).status).toBe(200);
    expect((await send("hono-bytes-1", "text/plain", '"x"')).status).toBe(409);
    expect((await send("hono-bytes-1", "text/plain", "x")).status).toBe(200);
    expect(host.decisions.at(-1)!.reason).toEqual({ rule: "allowed", replay: true });
    expect((await send("hono-bytes-2", "application/json", "{bad1")).status).toBe(200);
    expect((await send("hono-bytes-2", "application/json", "{bad2")).status).toBe(409);
  });

  it("a media type is read by its type alone: `json` in a multipart boundary leaves the upload unread (a binary part came to the handler re-encoded; found by a review)", async () => {
    const boundary = "--json--";
    const raw = `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.bin"\r\n\r\n${"x".repeat(100)}\r\n--${boundary}--\r\n`;
    const upload = await call("/newsletters/nl_1/articles", "owner-raw", { method: "POST", headers: { "content-type": `multipart/form-data; boundary=${boundary}` }, raw });
    expect(upload.status).toBe(200);
    expect(upload.json).toEqual({ bytes: raw.length }); // the raw body, unread by the adapter
  });

  it("DESIGN §7: a JSON body is judged: one Idempotency-Key with two JSON bodies is 409", async () => {
    const headers = { "idempotency-key": "hono-json-1" };
    expect((await call("/articles/a_1/send", "owner-json", { method: "POST", headers, body: { title: "A" } })).status).toBe(200);
    const second = await call("/articles/a_1/send", "owner-json", { method: "POST", headers, body: { title: "B" } });
    expect(second.status).toBe(409);
    expect(second.json.error).toMatchObject({ code: "conflict", param: "Idempotency-Key" });
  });

  it("spec §1.3: an onReplay that throws is answered by onError with the RateLimit-* headers (they were missing; found by an adapter review)", async () => {
    const headers = { "idempotency-key": "hono-replay-throw" };
    expect((await call("/articles/a_1/send", "owner-replay-throw", { method: "POST", headers })).status).toBe(200);
    // call() checks every RateLimit-* header is present
    const failed = await call("/articles/a_1/send", "owner-replay-throw", { method: "POST", headers: { ...headers, "x-replay": "throw" } });
    expect(failed.status).toBe(500);
  });

  it("malformed JSON reads as no body: a test send is then 400 naming `to`, with the rate-limit headers", async () => {
    const malformed = await call("/articles/a_1/test-send", "owner-malformed", { method: "POST", raw: '{"to": ["a@x.io"' });
    expect(malformed.status).toBe(400);
    expect(malformed.json.error).toMatchObject({ code: "invalid_request", param: "to" });
  });
});
