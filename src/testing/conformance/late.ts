/**
 * Scripted cases of `ChargeRequest.late` (DESIGN §12), run on a store the host can make answer
 * too late (`StoreConformanceOptions.lateReplies`): a charge the store gave up on (it threw) but
 * made after all is handed to `late`, once, with an outcome the policy can undo it by (a cap
 * place's member for `release`, a record's end for `forget`).
 */
import { expect } from "../vitest-api.js";
import type { ChargeOutcome, ChargeRequest, PolicyStore } from "../../store.js";
import { comparableOutcome } from "./comparable.js";
import type { ScriptKit } from "./kit.js";
import { charge } from "./store-calls.js";

/** How a late case makes the store answer too late, and how long it waits for `late`. */
export interface LateHooks {
  /** Makes the store's next charge be made but answered after the store gives up. */
  readonly arm: () => Promise<void>;
  /** How long to wait for the store to call `late` (ms). */
  readonly waitMs: number;
}

/** One case of `late`. */
export interface LateCase {
  readonly title: string;
  readonly run: (store: PolicyStore, k: ScriptKit, hooks: LateHooks) => Promise<void>;
}

/**
 * Charges `request` on the armed store, which must throw (it gave up), then waits for its `late`:
 * the outcome it was handed, after checking it came once.
 */
async function chargedLate(store: PolicyStore, request: ChargeRequest, { arm, waitMs }: LateHooks): Promise<ChargeOutcome> {
  const outcomes: ChargeOutcome[] = [];
  const sent = { ...request };
  Object.defineProperty(sent, "late", { value: (outcome: ChargeOutcome) => void outcomes.push(outcome), enumerable: false });
  await arm();
  let threw = false;
  try {
    await store.charge(sent);
  } catch {
    threw = true;
  }
  expect(threw, "an armed charge: the store gives up on it (throws), as past its deadline").toBe(true);
  const deadline = Date.now() + waitMs;
  while (outcomes.length === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
  expect(outcomes.length, `ChargeRequest.late: called with the outcome of a charge the store made after it gave up, within ${waitMs} ms`).toBeGreaterThan(0);
  // anything more would come soon after the first: a second call would undo twice
  await new Promise((resolve) => setTimeout(resolve, 100));
  expect(outcomes.length, "ChargeRequest.late: called once").toBe(1);
  return outcomes[0]!;
}

export const lateCases: readonly LateCase[] = [
  {
    title: "DESIGN §12 ChargeRequest.late: a send the store gave up on (it threw) but counted is handed to late once, with its member; the place it holds is freed by that member's ticket, and the key runs again",
    run: async (store, k, hooks) => {
      const { start } = k;
      const g = k.budget("general", 100, 60);
      // a first charge, answered: whatever the store sets up on its first call is done
      await charge(store, k.request(0, [g]));
      const lost = k.send(1, [g], 1, "k1");
      const outcome = await chargedLate(store, lost, hooks);
      expect(comparableOutcome(outcome)).toMatchObject({ kind: "charged", replay: false, counted: true, windows: [{ count: 2 }] });
      expect(outcome.kind === "charged" && typeof outcome.member, "the late outcome names the cap charge's member").toBe("string");
      // it holds its place: the cap of 1 is reached
      expect(comparableOutcome(await charge(store, k.send(2, [g], 1)))).toMatchObject({ kind: "cap_reached", count: 1 });
      // what the policy does when it answered 503: release the place by the late outcome's member
      expect(await store.release(k.ticket(lost, outcome), start + 3)).toBe(true);
      expect(comparableOutcome(await charge(store, k.send(4, [g], 1, "k1")))).toMatchObject({ kind: "charged", replay: false, counted: true });
    },
  },
  {
    title: "DESIGN §7, §12 ChargeRequest.late: a keyed write the store gave up on (it threw) but recorded is handed to late once; a store with forget forgets that record by the late outcome, and the key's next use runs again",
    run: async (store, k, hooks) => {
      const g = k.budget("general", 100, 60);
      await charge(store, k.request(0, [g]));
      const idem = k.scopedKey("key_1", "w1", "POST /newsletters/nl_1/articles");
      const lost = k.request(1, [g], { idempotency: idem });
      const outcome = await chargedLate(store, lost, hooks);
      expect(comparableOutcome(outcome)).toMatchObject({ kind: "charged", replay: false, windows: [{ count: 2 }] });
      if (store.forget === undefined) {
        // recorded: its retry is a replay (only a store that can forget lets the policy undo it)
        expect(comparableOutcome(await charge(store, k.request(2, [g], { idempotency: idem })))).toMatchObject({ kind: "charged", replay: true });
        return;
      }
      // the record's end, by the clock the store decided at (its own, when it reports one), as the policy computes it
      const record = { key: idem.key, fingerprint: idem.fingerprint, expiresAt: (outcome.now ?? lost.now) + idem.ttlMs, scope: idem.scope };
      expect(await store.forget(record, lost.now)).toBe(true);
      expect(comparableOutcome(await charge(store, k.request(2, [g], { idempotency: idem })))).toMatchObject({ kind: "charged", replay: false });
    },
  },
];
