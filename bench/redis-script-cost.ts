/**
 * `npm run bench:redis:script`: where Redis's time goes inside `CHARGE`, the charge script (issue 10).
 *
 * Runs the allowed two-budget charge of the race (1 000 credentials rotating, a fresh nonce per call)
 * as the real script and as the same script cut short at successive points, pipelined, and reads
 * Redis's own time per call (`usec` of `cmdstat_evalsha`, before and after: deltas, so a shared Redis
 * is not reset). Each cut is the real source with one line replaced, so the differences between rows
 * are what each part of the script costs Redis per call. Then the same charge in batches of 16
 * (`CHARGE_BATCH`), per charge: by the batch's plain path (a charge with neither idempotency key nor
 * cap, as the store sends it) and, for comparison, by `CHARGE` composed in (the way every charge of a
 * batch ran before the plain path). Keys live under a prefix unique to this run and are deleted at
 * the end (SCAN + UNLINK, never FLUSH). REDIS_URL changes the server.
 */
import { Redis } from "ioredis";
import { CHARGE, chargeCall, type ChargeCallInput } from "../src/redis/scripts/charge.js";
import { batchCall, CHARGE_BATCH } from "../src/redis/scripts/charge-batch.js";
import { cleanUp, scriptStats, usecPerCall } from "./redis-common.js";
import { median } from "./stats.js";

const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
const N = Number(process.env.BENCH_N ?? 20_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const PREFIX = `np-script:${process.pid}:${Date.now()}:`;

const source = CHARGE.source;
function cut(line: string, by: string): string {
  if (!source.includes(line)) throw new Error(`CHARGE no longer holds: ${line}`);
  return source.replace(line, by);
}
const DEADLINE = "if deadline ~= '' and rt > deadline + 0 then return { 'e', rt_us } end";
// the budget steps' charging half (once in CHARGE's source: in budget_steps)
const CHARGING = "if not spent then\n";

/** [row, script source, memo ttl ms (0 = no memo, as with `retries: 0`)] */
const variants: [string, string, number][] = [
  ["EVALSHA of `return 1` (same KEYS/ARGV)", "return 1", 0],
  ["… + KEYS/ARGV named, `num`, TIME, the clock, closures", cut(DEADLINE, "do return { 'c' } end"), 0],
  ["… + the budget steps without charging (HMGET both, the reply)", cut(CHARGING, "if false then\n"), 0],
  ["… + charging both budgets (HSET): CHARGE with retries: 0", source, 0],
  ["… + the retry memo (HSET, PEXPIRE): CHARGE as by default", source, 60_000],
];

/** The race's allowed charge `i` (credential i % 1 000, two budgets), a fresh nonce per call. */
function chargeInput(i: number, now: number, tag: string, memoTtlMs: number): ChargeCallInput {
  const budgets = ["general", "audience"].map((b) => ({ key: `b:${i % 1000}:${b}`, limit: 1e9, windowMs: 60_000 }));
  return { clock: "h", now: now + i, nonce: `${tag}.${i}`, memoTtlMs, refused: false, budgets, idempotency: undefined, cap: undefined, memo: `memo:${tag}`, key: (k) => `${PREFIX}${k}` };
}

async function perCall(redis: Redis, script: string, memoTtlMs: number, tag: string): Promise<number> {
  const sha = (await redis.script("LOAD", script)) as string;
  const now = Date.now();
  const before = await scriptStats(redis);
  for (let from = 0; from < N; from += 100) {
    const pipeline = redis.pipeline();
    for (let i = from; i < from + 100; i++) {
      const { keys, args } = chargeCall(chargeInput(i, now, tag, memoTtlMs));
      pipeline.evalsha(sha, keys.length, ...keys, ...args);
    }
    for (const [error] of (await pipeline.exec())!) if (error) throw error;
  }
  return usecPerCall(before, await scriptStats(redis));
}

const BATCH = 16;

/** Redis µs per charge of `CHARGE_BATCH`, batches of 16 charges, each plain (`plain`) or run as CHARGE. */
async function perBatchedCharge(redis: Redis, plain: boolean, tag: string): Promise<number> {
  const now = Date.now();
  const before = await scriptStats(redis);
  for (let from = 0; from < N; from += 100 * BATCH) {
    const pipeline = redis.pipeline();
    for (let i = from; i < from + 100 * BATCH; i += BATCH) {
      const inputs = Array.from({ length: BATCH }, (_, j) => chargeInput(i + j, now, tag, 60_000));
      const { keys, args } = batchCall(inputs, () => plain);
      pipeline.evalsha(CHARGE_BATCH.sha, keys.length, ...keys, ...args);
    }
    for (const [error] of (await pipeline.exec())!) if (error) throw error;
  }
  return usecPerCall(before, await scriptStats(redis)) / BATCH;
}

async function main(): Promise<void> {
  const redis = new Redis(REDIS_URL);
  try {
    console.log(`Redis ${(await redis.info("server")).match(/redis_version:(\S+)/)?.[1]} at ${REDIS_URL}; ${ROUNDS} rounds of ${N.toLocaleString("en")} pipelined calls per row, rows interleaved`);
    const times = variants.map(() => [] as number[]);
    for (let round = 0; round < ROUNDS; round++) {
      for (const [v, [, script, memo]] of variants.entries()) times[v]!.push(await perCall(redis, script, memo, `r${round}v${v}`));
    }
    let previous = 0;
    console.log(`\n${"Redis µs per call (median)".padStart(28)}  ${"this part".padStart(9)}  row`);
    for (const [v, [row]] of variants.entries()) {
      const m = median(times[v]!);
      console.log(`${m.toFixed(2).padStart(28)}  ${(v === 0 ? "" : `+${(m - previous).toFixed(2)}`).padStart(9)}  ${row}   (rounds: ${times[v]!.map((t) => t.toFixed(2)).join(", ")})`);
      previous = m;
    }
    await redis.script("LOAD", CHARGE_BATCH.source);
    const batched: [string, boolean][] = [
      ["a plain charge (the batch's own path, as the store sends a charge with neither idempotency key nor cap)", true],
      ["the same charge run as CHARGE composed in (charge_one: how every batched charge ran before)", false],
    ];
    const perCharge = batched.map(() => [] as number[]);
    for (let round = 0; round < ROUNDS; round++) {
      for (const [v, [, plain]] of batched.entries()) perCharge[v]!.push(await perBatchedCharge(redis, plain, `b${round}v${v}`));
    }
    console.log(`\n${"Redis µs per charge (median)".padStart(28)}  in batches of ${BATCH}`);
    for (const [v, [row]] of batched.entries()) console.log(`${median(perCharge[v]!).toFixed(2).padStart(28)}  ${row}   (rounds: ${perCharge[v]!.map((t) => t.toFixed(2)).join(", ")})`);
  } finally {
    await cleanUp(redis, PREFIX);
    redis.disconnect();
  }
}

await main();
