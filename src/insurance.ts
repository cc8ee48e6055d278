/**
 * The insurance store: when the main store fails, decide against a local store with every limit
 * multiplied by a share (e.g. 1 / the number of processes), so that the processes together admit
 * no more than the limits while the main store is gone.
 */
import type { CompiledConfig } from "./config.js";
import { knownKeys } from "./config-fields.js";
import { PolicyConfigError } from "./errors.js";
import { withNumbers } from "./limits.js";
import { isPolicyStore, type PolicyStore } from "./store.js";
import type { ReleaseTicket } from "./types.js";

/**
 * Options of `createPolicy({ insurance })`.
 *
 * @example
 * const insurance: Insurance = { store: new MemoryStore(), share: 1 / 4 }; // four processes
 */
export interface Insurance {
  /** Decides while the main store fails; a `MemoryStore` of this process, typically. */
  readonly store: PolicyStore;
  /**
   * This process's share of every limit, 0 < share ≤ 1: each budget's and cap's limit is multiplied
   * by it and rounded down. A limit that rounds down to 0 refuses everything under insurance.
   */
  readonly share: number;
}

/** Validates `createPolicy`'s `insurance` option (host input, DESIGN §10). */
export function assertInsurance(insurance: unknown): Insurance {
  const i = insurance as Partial<Insurance> | null;
  if (typeof i !== "object" || i === null) throw new PolicyConfigError("insurance", "must be an object { store, share }");
  // a misspelt or unsupported field (failOpen belongs to createPolicy's options) would be dropped without a word
  knownKeys(i as Record<string, unknown>, "insurance", ["store", "share"]);
  const s = i.store;
  if (!isPolicyStore(s)) throw new PolicyConfigError("insurance.store", "must be a PolicyStore (charge, release, read), e.g. new MemoryStore()");
  if (typeof i.share !== "number" || !Number.isFinite(i.share) || i.share <= 0 || i.share > 1) {
    throw new PolicyConfigError("insurance.share", `must be a number with 0 < share ≤ 1 (e.g. 1 / number of processes); got ${String(i.share)}`);
  }
  return { store: s, share: i.share };
}

/** A limit × share, rounded down: never more than the share (a hair of float error is forgiven). */
export function shareOf(limit: number, share: number): number {
  return Math.floor(limit * share + 1e-9);
}

const scaledConfigs = new WeakMap<CompiledConfig, Map<number, CompiledConfig>>();

/**
 * The config the insurance store decides with: every budget's and cap's limit × share, rounded
 * down; windows unchanged. Remembered per config.
 */
export function insured(config: CompiledConfig, share: number): CompiledConfig {
  let byShare = scaledConfigs.get(config);
  if (byShare === undefined) scaledConfigs.set(config, (byShare = new Map()));
  let scaled = byShare.get(share);
  if (scaled === undefined) {
    scaled = withNumbers(config, (b) => ({ limit: shareOf(b.limit, share), window: b.window }), {
      dispatch: shareOf(config.caps.dispatch.limit, share),
      testSend: shareOf(config.caps.testSend.limit, share),
    });
    byShare.set(share, scaled);
  }
  return scaled;
}

/**
 * How a release ticket of a cap charge the insurance store made begins its member: its release goes
 * to the insurance store, with the member that store named, however the ticket came back (the same
 * object, or through JSON or a job queue). Both stores number members alike (m1, m2, …): an insured
 * ticket sent to the main store would uncount one of its real charges. MemoryStore and RedisStore
 * members never begin so.
 */
const INSURED_MEMBER = "insured:";

/** The ticket of a cap charge the insurance store made, as the decision carries it (its member marked). */
export function insuredTicket(ticket: ReleaseTicket): ReleaseTicket {
  return Object.freeze({ ...ticket, member: INSURED_MEMBER + ticket.member });
}

/** The insurance store's own ticket behind an insured one ({@link insuredTicket}); undefined for a main store's ticket. */
export function insuranceStoreTicket(ticket: ReleaseTicket): ReleaseTicket | undefined {
  if (typeof ticket.member !== "string" || !ticket.member.startsWith(INSURED_MEMBER)) return undefined;
  return { ...ticket, member: ticket.member.slice(INSURED_MEMBER.length) };
}
