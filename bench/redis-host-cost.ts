/**
 * `npm run bench:redis:host`: the host's own time per `RedisStore.charge`, with no Redis: the
 * `redis` call function answers every command at once with a fixed charged reply. What is left is
 * the store's side of a charge: the batcher's turn, the script's KEYS/ARGV, `Link.run` (its timer,
 * its promises) and decoding the reply. Lone charges one after another (each its own turn, so each
 * is sent as `CHARGE_PLAIN`), then 64 at a time (batches). Median of 5 rounds; compare runs on one machine.
 */
import { RedisStore } from "../src/redis/index.js";
import { CHARGE_BATCH } from "../src/redis/scripts/charge-batch.js";
import { median } from "./stats.js";

const N = Number(process.env.BENCH_N ?? 100_000);
let t = Date.UTC(2026, 10, 23, 12);
// a plain charge's reply (CHARGE_PLAIN's, and each plain charge's in a batch): C, Redis time (µs), now, then the windows
const charged = (budgets: number) => ["C", t * 1000, "", ...Array.from({ length: budgets }, () => [1, t + 60_000]).flat()];
const budgets = ["general", "audience"].map((name) => ({ key: `b:7.k.key_1:${name}`, limit: 1e9, windowMs: 60_000 }));

/** An instant Redis: a lone charge gets a charged reply; a batch gets one per charge it carries, one after another (flat). */
const store = new RedisStore({
  redis: (_command, args) => {
    const sha = args[0];
    if (sha === CHARGE_BATCH.sha) {
      const reply: unknown[] = ["b", t * 1000];
      for (let j = Number(args[Number(args[1]) + 3]); j > 0; j--) reply.push(...charged(2));
      return Promise.resolve(reply);
    }
    return Promise.resolve(charged(2));
  },
});

const charge = () => store.charge({ id: "x", now: t++, budgets, refused: false });

/** µs per charge of N charges made `atOnce` at a time. */
async function perCharge(atOnce: number): Promise<number> {
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < N; i += atOnce) await Promise.all(Array.from({ length: atOnce }, charge));
  return Number(process.hrtime.bigint() - t0) / N / 1000;
}

const rows: [string, () => Promise<number>, number[]][] = [
  ["lone charges, one after another (CHARGE_PLAIN each)", () => perCharge(1), []],
  ["64 at a time (batches of 16)", () => perCharge(64), []],
];
for (let round = 0; round < 5; round++) for (const [, run, times] of rows) times.push(await run());
for (const [name, , times] of rows) console.log(`${median(times).toFixed(2).padStart(6)} µs per charge on the host  ${name}   (rounds: ${times.map((x) => x.toFixed(2)).join(", ")})`);
