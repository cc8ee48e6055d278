/**
 * What the Redis benches share: driving decisions with a number in flight, and reading Redis's own
 * count and time of script calls. Keys are deleted with the tests' `cleanUp` (SCAN + UNLINK under a
 * prefix, never FLUSH: the Redis may be shared).
 */
import type { Redis } from "ioredis";

export { cleanUp } from "../test/redis/helpers.js";

/**
 * Runs `decide(0 … n-1)` with `inFlight` workers, each taking the next index when its last decision
 * settles.
 *
 * @returns the seconds it took and how many decisions were allowed.
 */
export async function drive(n: number, inFlight: number, decide: (i: number) => Promise<boolean>): Promise<{ seconds: number; allowed: number }> {
  let next = 0;
  let allowed = 0;
  const worker = async () => {
    for (let i = next++; i < n; i = next++) if (await decide(i)) allowed++;
  };
  const t0 = process.hrtime.bigint();
  await Promise.all(Array.from({ length: inFlight }, worker));
  return { seconds: Number(process.hrtime.bigint() - t0) / 1e9, allowed };
}

/** `EVALSHA` + `EVAL` calls Redis has counted, and the µs it spent in them (`INFO commandstats`): take deltas. */
export async function scriptStats(redis: Redis): Promise<{ calls: number; usec: number }> {
  const info = await redis.info("commandstats");
  let calls = 0;
  let usec = 0;
  for (const line of info.split("\n")) {
    const m = /^cmdstat_(evalsha|eval):calls=(\d+),usec=(\d+)/.exec(line.trim());
    if (m) {
      calls += Number(m[2]);
      usec += Number(m[3]);
    }
  }
  return { calls, usec };
}

/** Redis's µs per script call between two readings of {@link scriptStats}. */
export function usecPerCall(before: { calls: number; usec: number }, after: { calls: number; usec: number }): number {
  return (after.usec - before.usec) / (after.calls - before.calls);
}
