/** The figures the benches print: a median over rounds, and the machine's load average. */
import { loadavg } from "node:os";

/** The middle value (the mean of the two middle ones for an even count). */
export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/** The 1, 5 and 15 minute load averages, as printed beside the figures. */
export async function load(): Promise<string> {
  return loadavg()
    .map((x) => x.toFixed(2))
    .join(" ");
}
