/**
 * A redis-server of our own, for drills that pause, kill or restart Redis (never the shared one at
 * 6379): started with no persistence on a given port, stopped by its PID.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** Resolves once something accepts TCP connections on the port and answers PING. */
export async function waitForPing(port: number, timeoutMs = 10_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const socket = connect(port, "127.0.0.1");
      socket.setTimeout(500);
      socket.once("connect", () => socket.write("PING\r\n"));
      socket.once("data", (data) => {
        socket.destroy();
        resolve(data.toString().startsWith("+PONG"));
      });
      socket.once("error", () => resolve(false));
      socket.once("timeout", () => {
        socket.destroy();
        resolve(false);
      });
    });
    if (ok) return;
    if (Date.now() > until) throw new Error(`redis-server on port ${port} did not answer PING within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** One redis-server process of ours. */
export class OwnRedis {
  private child: ChildProcess | undefined;
  readonly dir: string;

  /**
   * @param port - one of our assigned ports (6380–6389 for single servers, 7001–7003 for the cluster).
   * @param extra - more redis-server arguments (e.g. cluster mode).
   */
  constructor(
    readonly port: number,
    private readonly extra: readonly string[] = [],
  ) {
    this.dir = mkdtempSync(join(tmpdir(), `np-redis-${port}-`));
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** Starts the server (again, after `kill`) and waits for PING. */
  async start(): Promise<void> {
    const args = ["--port", String(this.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--daemonize", "no", "--dir", this.dir, ...this.extra];
    const child = spawn("redis-server", args, { stdio: ["ignore", "ignore", "inherit"] });
    this.child = child;
    await new Promise<void>((resolve, reject) => {
      child.once("spawn", () => resolve());
      child.once("error", reject);
    });
    await waitForPing(this.port);
  }

  /** SIGSTOP: the process stays, its sockets stay open, nothing is answered. */
  pause(): void {
    this.signal("SIGSTOP");
  }

  /** SIGCONT after `pause`. */
  resume(): void {
    this.signal("SIGCONT");
  }

  /** SIGKILL, and waits for the process to be gone (its data is lost: no persistence). */
  async kill(): Promise<void> {
    const child = this.child;
    if (child === undefined || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once("exit", resolve));
    child.kill("SIGCONT");
    child.kill("SIGKILL");
    await exited;
  }

  /** Kills the server and removes its directory. */
  async stop(): Promise<void> {
    await this.kill();
    rmSync(this.dir, { recursive: true, force: true });
  }

  private signal(signal: NodeJS.Signals): void {
    if (this.child?.pid === undefined) throw new Error("redis-server is not running");
    process.kill(this.child.pid, signal);
  }
}
