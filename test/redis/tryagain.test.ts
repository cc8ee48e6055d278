/**
 * A cluster's TRYAGAIN (a slot migrating key by key; the script did not run) is sent again, paced,
 * and never after the call gave up. No Redis needed: a call that always answers TRYAGAIN. (Found by
 * a mutation review: without the pause 27 716 sends went out in 200 ms, and without the give-up
 * check sends went on after the call had rejected; the cluster test only shows that it is retried.)
 */
import { expect, it } from "vitest";
import { RedisStore, type RedisCall } from "../../src/redis/index.js";

const T0 = Date.UTC(2030, 0, 1, 12);

const WRAPPED = "Too many Cluster redirections. Last error: ReplyError: TRYAGAIN Multiple keys request during rehashing of slot";

it.each([
  ["node-redis's cluster client, as Redis says it", "TRYAGAIN Multiple keys request during rehashing of slot", { timeoutMs: 200, retries: 0 }],
  // ioredis's Cluster after its own maxRedirections sends (a Redis drill: 6 826 of 9 000 decisions
  // 503 while a slot migrated); with retries, so that a charge is answered from its memo
  ["ioredis's Cluster, after its own sends", WRAPPED, { timeoutMs: 100, retries: 1 }],
])("TRYAGAIN (%s) is sent again every ~20 ms, and not after the call gave up", async (_client, text, timing) => {
  const times: number[] = [];
  const call: RedisCall = async () => {
    times.push(performance.now());
    throw new Error(text);
  };
  const store = new RedisStore({ redis: call, prefix: "probe:", ...timing });
  const start = performance.now();
  await expect(store.read([{ key: "b", limit: 1, windowMs: 1000 }], T0)).rejects.toThrow();
  const after = times.length;
  // paced: about 200 / 20 sends, not thousands (with a retry, the second send after the first
  // timeout paces its own TRYAGAINs beside the first's: twice as many at most)
  expect(after).toBeGreaterThanOrEqual(3);
  expect(after).toBeLessThanOrEqual(timing.retries === 0 ? 15 : 25);
  if (timing.retries === 0) for (let i = 1; i < times.length; i++) expect(times[i]! - times[i - 1]!).toBeGreaterThanOrEqual(15);
  // nothing is sent once the call has given up
  await new Promise((resolve) => setTimeout(resolve, 150));
  expect(times.length).toBe(after);
  // the last send about when the call gave up (the store's 200 ms start a little after `start`:
  // measured from it the last send was at 200.9 ms once, on a loaded machine)
  expect(times.at(-1)! - start).toBeLessThanOrEqual(210);
});

/** How many times a read is sent when every send fails with `text` (retries: 0), after it rejects with that error. */
async function sendsFailingWith(text: string): Promise<number> {
  let sends = 0;
  const call: RedisCall = async () => {
    sends++;
    throw new Error(text);
  };
  const store = new RedisStore({ redis: call, prefix: "probe:", timeoutMs: 200, retries: 0 });
  await expect(store.read([{ key: "b", limit: 1, windowMs: 1000 }], T0)).rejects.toThrow(text);
  return sends;
}

it("other errors, a redirection's included, are not sent again: the call fails at once", async () => {
  for (const text of ["Too many Cluster redirections. Last error: Error: Connection is closed.", "ERR something else", "CLUSTERDOWN The cluster is down"]) {
    expect(await sendsFailingWith(text), text).toBe(1);
  }
});

it("ioredis's wrapped TRYAGAIN is not sent again with retries: 0: an earlier send in ioredis's own count may have run, and without retries no memo answers a repeat (a review)", async () => {
  expect(await sendsFailingWith(WRAPPED)).toBe(1);
});
