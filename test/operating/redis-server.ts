/** A redis-server of our own on a given port (never the shared 6379), stopped by its PID. */
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";

export interface OwnRedis {
  readonly port: number;
  readonly pid: number;
  stop(): Promise<void>;
}

export async function startRedis(port: number): Promise<OwnRedis> {
  const child: ChildProcess = spawn("redis-server", ["--port", String(port), "--save", "", "--appendonly", "no", "--daemonize", "no"], { stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`redis-server on ${port} did not start: ${out}`)), 20_000);
    child.stdout!.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes("Ready to accept connections")) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`redis-server on ${port} exited (${code}): ${out}`));
    });
  });
  const pid = child.pid!;
  return {
    port,
    pid,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = once(child, "exit");
      process.kill(pid, "SIGKILL");
      await exited;
    },
  };
}
