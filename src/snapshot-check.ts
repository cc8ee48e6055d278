/**
 * What a snapshot's records must be before a decision reads them. A `Usage` is plain JSON a host
 * stores and restores; one changed after it was stored (by hand, by a bug, by someone who wanted
 * more than a budget) is a host mistake: a negative or a text count would never fill a budget, a
 * cap day whose members are not a list would count no one. Each record a decision reads is checked
 * here, and anything else a snapshot's shape breaks on the way is reported as one typed error
 * (found by a black-box review: `"count": -1000` admitted past a budget without end, and a `null`
 * record threw a TypeError).
 */
import { PolicyConfigError } from "./errors.js";
import type { CapDay, CapRecord, SnapshotWindow } from "./snapshot.js";
import type { KeyRecord, OtherWindow } from "./store.js";

/** The error for a snapshot that is not one this library wrote, naming what is wrong. */
export function notASnapshot(detail: string): PolicyConfigError {
  return new PolicyConfigError("usage", `is not a snapshot this library wrote (was it changed after it was stored?): ${detail}`);
}

/** An error met inside a snapshot's records, as the typed error: a host's own errors stay what they are. */
export function asSnapshotError(error: unknown): unknown {
  if (error instanceof PolicyConfigError) return error;
  return notASnapshot(error instanceof Error ? `${error.name}: ${error.message}` : String(error));
}

const isTime = (x: unknown): x is number => typeof x === "number" && Number.isFinite(x);
const isCount = (x: unknown): x is number => typeof x === "number" && Number.isSafeInteger(x) && x >= 0;

/** A budget window as read: a start and a whole count of at least 0, and an end when it has one. */
export function checkedWindow(record: SnapshotWindow | undefined, key: string): SnapshotWindow | undefined {
  if (record === undefined) return undefined;
  if (typeof record !== "object" || record === null || !isTime(record.start) || !isCount(record.count) || (record.expiresAt !== undefined && !isTime(record.expiresAt))) {
    throw notASnapshot(`the budget window ${key.slice(0, 80)} is not { start, count, expiresAt } of numbers (a count a whole number ≥ 0)`);
  }
  return record;
}

/**
 * The other window kept beside a budget's, as read (charge.ts `readBeside`, the only reader, when
 * the window does not hold the request): a start, a whole count and an end (a count cut out would
 * read it as none, and a clock on its side of a step would find room). Checked there, not with the
 * window: nearly every charge never reads it.
 */
export function checkedOther(other: OtherWindow | undefined, key: string): OtherWindow | undefined {
  if (other !== undefined && (typeof other !== "object" || other === null || !isTime(other.start) || !isCount(other.count) || !isTime(other.expiresAt))) {
    throw notASnapshot(`the budget window ${key.slice(0, 80)} keeps another window that is not { start, count, expiresAt } of numbers (a count a whole number ≥ 0)`);
  }
  return other;
}

/** A daily cap's day as read: when it ends, and the list of who counted. */
export function checkedCapDay(day: CapDay | undefined, key: string): CapDay | undefined {
  if (day === undefined) return undefined;
  if (typeof day !== "object" || day === null || !isTime(day.resetAt) || !Array.isArray(day.members) || !day.members.every((m) => typeof m === "string")) {
    throw notASnapshot(`a day of the daily cap ${key.slice(0, 80)} is not { resetAt, members: [...] }`);
  }
  return day;
}

/** A daily cap's record as read: the day of its latest charge and its days. */
export function checkedCap(record: CapRecord | undefined, key: string): CapRecord | undefined {
  if (record === undefined) return undefined;
  if (typeof record !== "object" || record === null || !isTime(record.latest) || typeof record.days !== "object" || record.days === null) {
    throw notASnapshot(`the daily cap ${key.slice(0, 80)} is not { latest, days }`);
  }
  return record;
}

/** An idempotency record as read: its fingerprint, its end, and the cap charge it carries, if any. */
export function checkedKey(record: KeyRecord | undefined, key: string): KeyRecord | undefined {
  if (record === undefined) return undefined;
  const counted = (record as { counted?: unknown } | null)?.counted as KeyRecord["counted"] | null | undefined;
  if (
    typeof record !== "object" ||
    record === null ||
    typeof record.fingerprint !== "string" ||
    !isTime(record.expiresAt) ||
    (counted !== undefined && (typeof counted !== "object" || counted === null || !isTime(counted.day) || typeof counted.member !== "string"))
  ) {
    throw notASnapshot(`the idempotency record ${key.slice(0, 80)} is not { fingerprint, expiresAt, counted? }`);
  }
  return record;
}
