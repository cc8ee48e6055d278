/** Shared set-up for the Redis store tests: real Redis at 127.0.0.1:6379, a unique prefix per file. */
import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll } from "vitest";
import { createClient } from "redis";
import { Redis as Redis6 } from "ioredis6";
import { createClient as createClient6 } from "redis6";
import type { RedisCall } from "../../src/redis/index.js";

export const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";

/** A prefix no other test file (or run) uses; free of SCAN glob characters. */
export function uniquePrefix(file: string): string {
  return `np-test:${file}:${process.pid}.${randomBytes(4).toString("hex")}:`;
}

/** An ioredis connection. */
export function ioredis(): Redis {
  return new Redis(REDIS_URL, { lazyConnect: false, maxRetriesPerRequest: 1 });
}

/** An ioredis v6 connection (the major a new `npm install ioredis` gets). */
export function ioredis6(): Redis6 {
  return new Redis6(REDIS_URL, { lazyConnect: false, maxRetriesPerRequest: 1 });
}

/** The one-line ioredis adapter of docs/redis.md. */
export const ioredisCall = (redis: Redis): RedisCall => (command, args) => redis.call(command, args);

/** A node-redis v5 connection. */
export async function nodeRedis() {
  const client = createClient({ url: REDIS_URL });
  await client.connect();
  return client;
}

/** A node-redis v6 connection (the major a new `npm install redis` gets). */
export async function nodeRedis6() {
  const client = createClient6({ url: REDIS_URL });
  await client.connect();
  return client;
}

/** The one-line node-redis adapter of docs/redis.md. */
export const nodeRedisCall =
  (client: Awaited<ReturnType<typeof nodeRedis>>): RedisCall =>
  (command, args) =>
    client.sendCommand([command, ...args]);

/** Every key under a prefix. */
export async function keysUnder(redis: Redis, prefix: string): Promise<string[]> {
  const found: string[] = [];
  let cursor = "0";
  do {
    const [next, batch] = await redis.scan(cursor, "MATCH", `${prefix}*`, "COUNT", 1000);
    cursor = next;
    found.push(...batch);
  } while (cursor !== "0");
  return found;
}

/** Deletes every key under a prefix (never FLUSHALL: other files share this Redis). */
export async function cleanUp(redis: Redis, prefix: string): Promise<void> {
  const keys = await keysUnder(redis, prefix);
  for (let i = 0; i < keys.length; i += 500) await redis.unlink(...keys.slice(i, i + 500));
}

/**
 * The shared Redis for one test file: a connection and a prefix of the file's own; after the file's
 * tests, every key under the prefix is deleted and the connection closed.
 */
export function sharedRedis(file: string): { readonly redis: Redis; readonly root: string } {
  const redis = ioredis();
  const root = uniquePrefix(file);
  afterAll(async () => {
    await cleanUp(redis, root);
    redis.disconnect();
  });
  return { redis, root };
}

/** Counts calls through an adapter: round trips. */
export function counting(call: RedisCall): RedisCall & { calls: number; commands: string[] } {
  const counted = Object.assign(
    (command: "EVALSHA" | "EVAL", args: string[]) => {
      counted.calls++;
      counted.commands.push(command);
      return call(command, args);
    },
    { calls: 0, commands: [] as string[] },
  );
  return counted;
}

/**
 * A call function whose first command reaches Redis only after `ms` (a slow network, a stalled
 * socket); every later command goes at once. `original()` is the first command's reply, once Redis
 * has run it.
 */
export function lateFirstSend(call: RedisCall, ms: number): RedisCall & { calls: number; original: () => Promise<unknown> } {
  let first: Promise<unknown> | undefined;
  const late = Object.assign(
    (command: "EVALSHA" | "EVAL", args: string[]) => {
      late.calls++;
      if (first !== undefined) return call(command, args);
      first = new Promise((resolve) => setTimeout(resolve, ms)).then(() => call(command, args));
      return first;
    },
    { calls: 0, original: () => first ?? Promise.reject(new Error("nothing was sent")) },
  );
  return late;
}


/**
 * A call function that, once armed, runs the command after `skip` more at once in Redis but hands
 * its reply over only `ms` later (a reply Redis wrote behind a backlog, or a process too busy to
 * read it): the store gives up on a command Redis ran in time.
 */
export function lateReply(call: RedisCall): RedisCall & { arm: (ms: number, skip?: number) => void; delivered: Promise<void> } {
  let armed: { ms: number; skip: number } | undefined;
  let deliver: () => void = () => {};
  const late = Object.assign(
    (command: "EVALSHA" | "EVAL", args: string[]) => {
      const reply = call(command, args);
      if (armed === undefined || armed.skip-- > 0) return reply;
      const ms = armed.ms;
      armed = undefined;
      return reply.then((value) => new Promise((resolve) => setTimeout(() => (resolve(value), setTimeout(deliver, 0)), ms)));
    },
    {
      arm: (ms: number, skip = 0) => {
        armed = { ms, skip };
        late.delivered = new Promise<void>((resolve) => (deliver = resolve));
      },
      delivered: Promise.resolve(),
    },
  );
  return late;
}
