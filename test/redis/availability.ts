/**
 * Which Redis test files can run here. Read by vitest.config.ts once per `vitest` run:
 *
 * - the files that use the shared Redis (127.0.0.1:6379, or REDIS_URL) need it to answer PING;
 * - the files that start redis-servers of their own (stall drill, Redis Cluster) need the
 *   `redis-server` and `redis-cli` binaries.
 *
 * When something is missing and `CI` is not `"true"`, those files are skipped with ONE loud line
 * saying how to get it. Under `CI=true` nothing is skipped, so the files fail.
 */
import { spawnSync } from "node:child_process";
import { connect } from "node:net";

/** Files that start their own redis-server (ports 6380–6389, 7001–7003). */
export const OWN_SERVER_FILES = ["test/redis/own-server/**", "test/redis/cluster/**", "test/operating/outage.test.ts"];
/** Files that use the shared Redis at REDIS_URL. */
export const SHARED_REDIS_FILES = ["test/redis/*.test.ts", "test/operating/limits.test.ts", "test/operating/reset.test.ts", "test/operating/telemetry.test.ts"];

function ping(url: string, timeoutMs: number): Promise<boolean> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect(Number(port || 6379), hostname || "127.0.0.1");
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once("connect", () => socket.write("PING\r\n"));
    socket.once("data", (data) => done(/^(\+PONG|-NOAUTH)/.test(data.toString())));
    socket.once("error", () => done(false));
  });
}

function hasBinary(name: string): boolean {
  const result = spawnSync(name, ["--version"], { stdio: "ignore" });
  return result.status === 0;
}

/**
 * Globs to leave out of this run, after printing one line per missing piece.
 *
 * @returns vitest `exclude` globs (empty when everything is there, or under CI=true).
 */
export async function redisTestExcludes(): Promise<string[]> {
  const url = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
  const [shared, binaries] = await Promise.all([ping(url, 1_000), Promise.resolve(hasBinary("redis-server") && hasBinary("redis-cli"))]);
  if ((shared && binaries) || process.env.CI === "true") return [];
  const loud = (text: string) => console.warn(`\n\x1b[1;33m!!! ${text}\x1b[0m\n`);
  if (!shared && !binaries) {
    loud(`SKIPPING every Redis test (${[...SHARED_REDIS_FILES, ...OWN_SERVER_FILES].join(", ")}): no Redis at ${url} and no redis-server binary. Install Redis 7, then: redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no   (under CI=true these tests fail instead)`);
    return [...SHARED_REDIS_FILES, ...OWN_SERVER_FILES];
  }
  if (!shared) {
    loud(`SKIPPING the Redis tests that use ${url} (${SHARED_REDIS_FILES.join(", ")}): Redis is not answering. Start it: redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no   (under CI=true these tests fail instead)`);
    return SHARED_REDIS_FILES;
  }
  loud(`SKIPPING the Redis drill and cluster tests (${OWN_SERVER_FILES.join(", ")}): no redis-server/redis-cli binary on PATH. Install Redis 7 (e.g. apt-get install redis-server)   (under CI=true these tests fail instead)`);
  return OWN_SERVER_FILES;
}
