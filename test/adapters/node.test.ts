/** The node:http guard on a real node:http server (see scenario.ts for the cases). */
import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
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
    newsletter: (req) => host.newsletter(req.url ?? "/"),
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
        const result = host.send(send[1]!, req.headers["x-fail"] as string | undefined, req.headers["idempotency-key"] as string | undefined, decision);
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
