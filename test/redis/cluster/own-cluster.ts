/**
 * A Redis Cluster of our own on loopback: three primaries (ports 7001–7003, no replicas) started
 * from the machine's redis-server, each with its cluster config file and an AOF (`appendfsync
 * always`) in its own temp dir, so that a primary killed mid-drill comes back with its data. Stopped
 * by PID.
 */
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { Redis } from "ioredis";
import { OwnRedis } from "../server.js";

const run = promisify(execFile);
export const CLUSTER_PORTS = [7001, 7002, 7003] as const;

export class OwnCluster {
  readonly nodes: OwnRedis[];

  /** @param persistent - AOF with `appendfsync always` (the kill drill needs it; a benchmark does not want the fsyncs). */
  constructor(persistent = true) {
    this.nodes = CLUSTER_PORTS.map(
      (port) =>
        new OwnRedis(port, [
          "--cluster-enabled", "yes",
          "--cluster-config-file", `nodes-${port}.conf`,
          "--cluster-node-timeout", "1000",
          "--cluster-require-full-coverage", "no",
          ...(persistent ? ["--appendonly", "yes", "--appendfsync", "always"] : []),
        ]),
    );
  }

  /** Starts the three primaries, joins them with `redis-cli --cluster create`, waits for cluster_state:ok. */
  async start(): Promise<void> {
    await Promise.all(this.nodes.map((n) => n.start()));
    await run("redis-cli", ["--cluster", "create", ...CLUSTER_PORTS.map((p) => `127.0.0.1:${p}`), "--cluster-replicas", "0", "--cluster-yes"]);
    await this.waitOk();
  }

  /** Waits until every running node says cluster_state:ok and agrees on all 16 384 slots. */
  async waitOk(timeoutMs = 30_000): Promise<void> {
    const until = Date.now() + timeoutMs;
    for (;;) {
      const states = await Promise.all(
        CLUSTER_PORTS.map((port) => run("redis-cli", ["-p", String(port), "cluster", "info"]).then((r) => r.stdout, () => "")),
      );
      if (states.every((s) => s.includes("cluster_state:ok") && s.includes("cluster_slots_ok:16384"))) return;
      if (Date.now() > until) throw new Error(`cluster not ok: ${states.join(" | ")}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  /** Which port holds a key: CLUSTER KEYSLOT, then the node whose slot ranges hold that slot. */
  async portOf(key: string): Promise<number> {
    const admin = new Redis({ port: CLUSTER_PORTS[0], host: "127.0.0.1", lazyConnect: true });
    try {
      const slot = Number(await admin.call("CLUSTER", "KEYSLOT", key));
      const ranges = (await admin.call("CLUSTER", "SLOTS")) as Array<[number, number, [string, number, ...unknown[]], ...unknown[]]>;
      const owner = ranges.find(([from, to]) => slot >= from && slot <= to);
      if (owner === undefined) throw new Error(`no node holds slot ${slot}`);
      return Number(owner[2][1]);
    } finally {
      admin.disconnect();
    }
  }

  /** Every key under a prefix, on every primary (SCAN each node), with the port that holds it. */
  async keysUnder(prefix: string): Promise<Array<{ key: string; port: number }>> {
    const found: Array<{ key: string; port: number }> = [];
    for (const port of CLUSTER_PORTS) {
      const node = new Redis({ port, host: "127.0.0.1", lazyConnect: true });
      try {
        let cursor = "0";
        do {
          const [next, batch] = await node.scan(cursor, "MATCH", `${prefix}*`, "COUNT", 1000);
          cursor = next;
          for (const key of batch) found.push({ key, port });
        } while (cursor !== "0");
      } finally {
        node.disconnect();
      }
    }
    return found;
  }

  /** Deletes every key under a prefix on every primary. */
  async cleanUp(prefix: string): Promise<void> {
    const byPort = new Map<number, string[]>();
    for (const { key, port } of await this.keysUnder(prefix)) byPort.set(port, [...(byPort.get(port) ?? []), key]);
    for (const [port, keys] of byPort) {
      const node = new Redis({ port, host: "127.0.0.1", lazyConnect: true });
      try {
        for (const key of keys) await node.unlink(key);
      } finally {
        node.disconnect();
      }
    }
  }

  /** SCRIPT FLUSH on every primary (as after restarts or failovers). */
  async flushScripts(): Promise<void> {
    await Promise.all(CLUSTER_PORTS.map((port) => run("redis-cli", ["-p", String(port), "script", "flush"])));
  }

  async stop(): Promise<void> {
    await Promise.all(this.nodes.map((n) => n.stop()));
  }
}
