/** The node:http guard on a real node:http server (see scenario.ts for the cases). */
import { createServer, type IncomingMessage } from "node:http";
import { connect, type AddressInfo } from "node:net";
import { describe, expect, it } from "vitest";
import { createPolicy, MemoryStore } from "../../src/index.js";
import { newsletterPolicy } from "../../src/adapters/node.js";
import { describeAdapter, Unauthenticated, type Host, type Running } from "./scenario.js";

async function readJson(req: IncomingMessage): Promise<unknown> {
  let raw = "";
  for await (const chunk of req) raw += chunk;
  return raw === "" ? undefined : JSON.parse(raw);
}

async function start(host: Host): Promise<Running> {
  const guard = newsletterPolicy({
    policy: host.policy,
    who: (req) => host.who(req.headers.authorization),
    newsletter: (_req, { segments }) => host.newsletter(segments),
    onDecision: (decision) => host.onDecision(decision),
    onHookError: (error) => host.onHookError(error),
    onReplay: (decision, req, res) => {
      const stored = host.replay(decision, req.headers["idempotency-key"] as string | undefined);
      if (stored !== undefined) res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ replayed: stored }));
    },
  });
  const server = createServer(async (req, res) => {
    const json = (status: number, value: unknown) => void res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(value));
    try {
      const body = await readJson(req);
      const decision = await guard(req, res, body);
      if (!decision) return;
      const path = (req.url ?? "/").split("?")[0]!;
      const send = /^\/articles\/([^/]+)\/send$/.exec(path);
      if (send) {
        // a router's parameter: decoded
        const result = host.send(decodeURIComponent(send[1]!), req.headers["x-fail"] as string | undefined, req.headers["idempotency-key"] as string | undefined, decision);
        return json(result.status, result.body);
      }
      const testSend = /^\/articles\/([^/]+)\/test-send$/.exec(path);
      if (testSend) return json(200, { to: (body as { to: string[] }).to });
      return json(200, host.read(decision));
    } catch (error) {
      // a handler that throws answers 500, as a server should: the guard then releases the send
      json(error instanceof Unauthenticated ? 401 : 500, { error: error instanceof Unauthenticated ? "unauthenticated" : "internal" });
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

describeAdapter("node:http", start);

// A raw client can send a "#" in the request target, and Node keeps it in req.url; the policy cut the
// query at it while a handler's parser read past it: ?status=sent#&status=draft passed a read-only key
// to a handler that saw status sent# and draft (found by a black-box review).

describe("node:http guard: a raw request target with a '#'", () => {
  it("spec §7 #4/#5: is refused 400 naming path, never reaches the handler, whatever follows the '#'", async () => {
    const policy = createPolicy({ store: new MemoryStore(), config: { docsUrl: "https://docs.example/errors" } });
    const guard = newsletterPolicy({ policy, who: () => ({ credential: { id: "ro", kind: "api_key", newsletters: { nl_1: { content: "read" } } }, roles: { nl_1: "owner" } }) });
    let reached = 0;
    const server = createServer(async (req, res) => {
      if (!(await guard(req, res))) return;
      reached++;
      res.writeHead(200).end("handler");
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const port = (server.address() as AddressInfo).port;
    const send = (target: string) =>
      new Promise<string>((resolve, reject) => {
        const socket = connect(port, "127.0.0.1", () => socket.end(`GET ${target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`));
        let text = "";
        socket.on("data", (chunk) => (text += chunk));
        socket.on("end", () => resolve(text));
        socket.on("error", reject);
      });
    try {
      for (const target of ["/newsletters/nl_1/articles?status=sent#&status=draft", "/newsletters/nl_1/articles?#&tag=launch", "/newsletters/nl_1/articles#x"]) {
        const answer = await send(target);
        expect(answer.split("\r\n")[0], target).toBe("HTTP/1.1 400 Bad Request");
        expect(answer, target).toContain('"param":"path"');
      }
      expect(reached).toBe(0);
      expect((await send("/newsletters/nl_1/articles?status=sent")).split("\r\n")[0]).toBe("HTTP/1.1 200 OK");
      expect(reached).toBe(1);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

// An adapter told its onDecision hook before it acted on the decision, and handed it the decision
// itself: a hook that "normalised" allowed for its log schema let sends past the daily cap (found by
// an operating review). The decision is made read-only before the hook sees it.
describe("node:http guard: an onDecision hook cannot change what the guard does", () => {
  it("a hook that sets allowed on every decision lets no send past a cap of 1; its writes go to onHookError", async () => {
    const policy = createPolicy({ store: new MemoryStore(), config: { caps: { dispatch: { limit: 1 } } } });
    const credential = { id: "k1", kind: "api_key" as const, newsletters: { nl_1: { sending: "write" as const } } };
    const hookErrors: unknown[] = [];
    let ran = 0;
    const guard = newsletterPolicy({
      policy,
      who: () => ({ credential, roles: { nl_1: "owner" } }),
      newsletter: () => "nl_1",
      onDecision: (decision) => {
        Object.assign(decision, { allowed: true, status: 200 });
      },
      onHookError: (error) => hookErrors.push(error),
    });
    const server = createServer(async (req, res) => {
      if (!(await guard(req, res, {}))) return;
      ran++;
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const statuses: number[] = [];
      for (const article of ["a_1", "a_2", "a_3"]) statuses.push((await fetch(`${base}/articles/${article}/send`, { method: "POST" })).status);
      expect(statuses).toEqual([200, 429, 429]);
      expect(ran).toBe(1);
      expect(hookErrors).toHaveLength(3);
    } finally {
      await new Promise((resolve) => server.close(() => resolve(undefined)));
    }
  });
});
