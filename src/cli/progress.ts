/**
 * A one-line progress bar on a terminal's stderr; nothing at all when stderr is not a TTY (pipes,
 * CI logs, tests). Twenty lines rather than a dependency: a package's `dependencies` install for
 * every user of the library, which promises `immer` as its only runtime dependency.
 */
export interface Progress {
  update(done: number, total: number): void;
  done(): void;
}

/** A progress line for `label` on `stream`, redrawn at most once per percent. */
export function progressLine(label: string, stream: NodeJS.WriteStream = process.stderr): Progress {
  if (!stream.isTTY) return { update() {}, done() {} };
  let shown = -1;
  return {
    update(done, total) {
      const percent = total === 0 ? 100 : Math.floor((done / total) * 100);
      if (percent === shown) return;
      shown = percent;
      const width = Math.max(10, Math.min(40, (stream.columns ?? 80) - label.length - 30));
      const full = Math.round((percent / 100) * width);
      stream.write(`\r${label} [${"#".repeat(full)}${".".repeat(width - full)}] ${String(percent).padStart(3)}% ${done}/${total}`);
    },
    done() {
      if (shown >= 0) stream.write("\r\x1b[2K");
    },
  };
}
