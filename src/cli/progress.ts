/**
 * The replay's progress bar on a terminal's stderr, drawn by `cli-progress`; nothing at all when
 * stderr is not a TTY (pipes, CI logs, tests). The package is bundled into the `bin` at build time
 * (a dev dependency), so the library's users install nothing for it: `immer` stays the only
 * runtime dependency.
 */
import { SingleBar } from "cli-progress";

export interface Progress {
  update(done: number, total: number): void;
  done(): void;
}

/** A progress bar for `label` on `stream`, redrawn at most every 100 ms, cleared when done. */
export function progressLine(label: string, stream: NodeJS.WriteStream = process.stderr): Progress {
  if (!stream.isTTY) return { update() {}, done() {} };
  const bar = new SingleBar({
    stream,
    format: `${label} [{bar}] {percentage}% {value}/{total}`,
    barCompleteChar: "#",
    barIncompleteChar: ".",
    barsize: Math.max(10, Math.min(40, (stream.columns ?? 80) - label.length - 30)),
    clearOnComplete: true,
    hideCursor: false,
    fps: 10,
  });
  let started = false;
  return {
    update(done, total) {
      if (!started) {
        bar.start(total, done);
        started = true;
      } else {
        bar.update(done);
      }
    },
    done() {
      if (started) bar.stop();
    },
  };
}
