/**
 * A host process that stalls (a synchronous 300 ms) while its charges are out: what Redis answered
 * in time is the answer. A file of its own, with every script it uses cached first: the failure
 * tests flush Redis's scripts, and a script dropped that way was answered NOSCRIPT during the stall
 * (its EVAL sent after it, too late).
 */
import { describe, expect, it } from "vitest";
import { execFileSync } from "node:child_process";
import { createPolicy, type Decision } from "../../src/index.js";
import { RedisStore } from "../../src/redis/index.js";
import { get, key, post } from "../fixtures.js";
import { ioredis, ioredisCall, REDIS_URL, uniquePrefix } from "./helpers.js";

const prefix = () => uniquePrefix("stall");

describe("a process that stalls while its charges are out: what Redis answered in time is the answer", () => {
  it("replies that arrived during a 300 ms synchronous stall answer the checks (200), not 503s that still counted (found by a multi-process drill: 40 of 40 answered 503, all 40 charged)", async () => {
    // a client of its own, so that no other test's commands share its socket
    const own = ioredis();
    const at = prefix();
    const policy = createPolicy({ store: new RedisStore({ redis: ioredisCall(own), prefix: at, timeoutMs: 100, retries: 0 }) });
    const sender = { credential: key({ nl_1: { sending: "write", audience: "read" } }, false, "key_stall"), roles: { nl_1: "owner" } };
    const round = () => {
      const pending: Promise<Decision>[] = [];
      for (let i = 0; i < 10; i++) pending.push(policy.check(post("/articles/a_1/test-send", { newsletter: "nl_1", body: { to: ["a@x.test"] } }), sender), policy.check(get("/newsletters/nl_1/subscribers"), sender));
      return pending;
    };
    // connected, and every script the round uses cached in Redis (a batch of sends and reads): a
    // script another test's SCRIPT FLUSH had dropped was answered NOSCRIPT during the stall, and its
    // EVAL sent after it, too late (every charge a RedisTimeoutError in 3 runs of 4)
    expect((await Promise.all(round())).every((d) => d.status === 200)).toBe(true);
    const pending = round();
    await new Promise((resolve) => setImmediate(resolve)); // the commands are written; Redis answers during the stall
    const until = Date.now() + 300;
    // the host's event loop is blocked from here: a PING on another connection, answered after Redis
    // has run what reached it before (the commands above), makes sure their replies arrived during
    // the stall, however loaded the machine (a fixed spin alone failed when Redis itself was slow)
    const url = new URL(REDIS_URL);
    execFileSync("redis-cli", ["-h", url.hostname, "-p", url.port || "6379", "PING"], { stdio: "ignore" });
    while (Date.now() < until) {
      // still blocked: the store's timers come due
    }
    const decisions = await Promise.all(pending);
    expect(decisions.map((d) => d.status)).toEqual(Array(20).fill(200));
    const status = await policy.status(sender.credential);
    expect(status.budgets.audience!.remaining).toBe(60 - 20);
    own.disconnect();
  });
});

