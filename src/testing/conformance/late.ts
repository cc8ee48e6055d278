/**
 * Scripted cases of `ChargeRequest.late` (DESIGN §12), run on a store the host can make answer
 * too late (`StoreConformanceOptions.lateReplies`): a charge the store gave up on (it threw) but
 * made after all is handed to its own `late`, once, with an outcome the policy can undo it by (a
 * cap place's member for `release`, a record's end for `forget`).
 */
import { expect } from "../vitest-api.js";
import type { ChargeOutcome, ChargeRequest, PolicyStore } from "../../store.js";
import { comparableOutcome } from "./comparable.js";
import type { ScriptKit } from "./kit.js";
import { charge } from "./store-calls.js";

/** How a late case makes the store answer too late, and how long it waits for `late`. */
export interface LateHooks {
  /** Makes the store's next charge (the charges of the next turn) be made but answered after the store gives up. */
  readonly arm: () => Promise<void>;
  /** How long to wait for the store to call `late` (ms). */
  readonly waitMs: number;
}

/** One case of `late`. */
export interface LateCase {
  readonly title: string;
  readonly run: (store: PolicyStore, k: ScriptKit, hooks: LateHooks) => Promise<void>;
}

/** How long after its first call a case watches for a second call of one `late` (ms). */
const SECOND_CALL_MS = 250;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** `request` with a `late` (not enumerable, as createPolicy sets it) that keeps what it is handed. */
function recording(request: ChargeRequest): { sent: ChargeRequest; outcomes: ChargeOutcome[] } {
  const outcomes: ChargeOutcome[] = [];
  const sent = { ...request };
  Object.defineProperty(sent, "late", { value: (outcome: ChargeOutcome) => void outcomes.push(outcome), enumerable: false });
  return { sent, outcomes };
}

/**
 * Charges `requests` in one turn on the armed store, then waits for the `late` of each charge the
 * store threw on: the outcome each was handed (undefined for a charge the store answered), after
 * checking that each came once. At least one charge must throw (the one armed).
 */
async function chargedLate(store: PolicyStore, requests: readonly ChargeRequest[], { arm, waitMs }: LateHooks): Promise<(ChargeOutcome | undefined)[]> {
  const recorded = requests.map(recording);
  await arm();
  const settled = await Promise.allSettled(recorded.map(({ sent }) => Promise.resolve().then(() => store.charge(sent))));
  const threw = settled.map((s) => s.status === "rejected");
  expect(threw.some(Boolean), "an armed charge: the store gives up on it (throws), as past its deadline").toBe(true);
  const deadline = Date.now() + waitMs;
  const waiting = () => recorded.some(({ outcomes }, i) => threw[i] && outcomes.length === 0);
  while (waiting() && Date.now() < deadline) await sleep(10);
  recorded.forEach(({ outcomes }, i) => {
    if (threw[i]) expect(outcomes.length, `ChargeRequest.late of ${requests[i]!.id}: called with the outcome of the charge the store made after it gave up, within ${waitMs} ms`).toBeGreaterThan(0);
  });
  // a second call would undo twice
  await sleep(SECOND_CALL_MS);
  return recorded.map(({ outcomes }, i) => {
    expect(outcomes.length, `ChargeRequest.late of ${requests[i]!.id}: called once, and only for a charge the store threw on`).toBe(threw[i] ? 1 : 0);
    return outcomes[0];
  });
}

export const lateCases: readonly LateCase[] = [
  {
    title: "DESIGN §12 ChargeRequest.late: a send the store gave up on (it threw) but counted is handed to late once, with its member; the place it holds is freed by that member's ticket, and the key runs again",
    run: async (store, k, hooks) => {
      const { start } = k;
      const g = k.budget("general", 100, 60);
      // a first charge of the same kind, answered: whatever the store sets up on its first such call is done
      await charge(store, k.request(0, [g], { cap: k.cap("warm", 5, start), idempotency: k.key("k0", "POST /articles/a_1/send") }));
      const lost = k.send(1, [g], 1, "k1");
      const [outcome] = await chargedLate(store, [lost], hooks);
      expect(comparableOutcome(outcome!)).toMatchObject({ kind: "charged", replay: false, counted: true, windows: [{ count: 2 }] });
      expect(outcome!.kind === "charged" && typeof outcome!.member, "the late outcome names the cap charge's member").toBe("string");
      // it holds its place: the cap of 1 is reached
      expect(comparableOutcome(await charge(store, k.send(2, [g], 1)))).toMatchObject({ kind: "cap_reached", count: 1 });
      // what the policy does when it answered 503: release the place by the late outcome's member
      expect(await store.release(k.ticket(lost, outcome!), start + 3)).toBe(true);
      expect(comparableOutcome(await charge(store, k.send(4, [g], 1, "k1")))).toMatchObject({ kind: "charged", replay: false, counted: true });
    },
  },
  {
    title: "DESIGN §12 ChargeRequest.late: two sends of one turn the store gave up on are each handed to their own late, with their own outcome (a batch's replies not crossed)",
    run: async (store, k, hooks) => {
      const { start } = k;
      const [ga, gb] = [k.budget("a", 100, 60), k.budget("b", 100, 60)];
      // two of the same kind in one turn, answered (a store that batches them has what it needs for a batch)
      const warm = (key: string) => charge(store, k.request(0, [ga], { cap: k.cap("warm", 5, start), idempotency: k.key(key, "POST /articles/a_1/send") }));
      await Promise.all([warm("k0"), warm("k00")]);
      // budget a counted twice before, b three times: each outcome's window tells whose it is
      for (const at of [1, 2, 2]) await charge(store, k.request(at, [gb]));
      const sends = [k.request(3, [ga], { cap: k.cap("nl_a", 1, start + 3), idempotency: k.key("ka", "POST /articles/a_1/send") }), k.request(3, [gb], { cap: k.cap("nl_b", 1, start + 3), idempotency: k.key("kb", "POST /articles/a_2/send") })];
      const outcomes = await chargedLate(store, sends, hooks);
      for (const [i, counted] of [[0, 3], [1, 4]] as const) {
        const outcome = outcomes[i];
        if (outcome === undefined) continue; // answered in time: nothing late to check
        expect(comparableOutcome(outcome), `the late outcome of send ${i + 1} is its own`).toMatchObject({ kind: "charged", replay: false, counted: true, windows: [{ count: counted }] });
        // its member releases its own cap's place, which then takes another send
        expect(await store.release(k.ticket(sends[i]!, outcome), start + 4)).toBe(true);
        expect(comparableOutcome(await charge(store, k.request(5, [i === 0 ? ga : gb], { cap: k.cap(i === 0 ? "nl_a" : "nl_b", 1, start + 5) })))).toMatchObject({ kind: "charged", counted: true });
      }
    },
  },
  {
    title: "DESIGN §7, §12 ChargeRequest.late (a store with forget): a keyed write the store gave up on (it threw) but recorded is handed to late once; forget finds its record by the late outcome, and the key's next use runs again",
    run: async (store, k, hooks) => {
      // createPolicy hands a keyed write without a cap a late only when the store can forget its record
      if (store.forget === undefined) return;
      const g = k.budget("general", 100, 60);
      await charge(store, k.request(0, [g], { idempotency: k.scopedKey("key_1", "w0", "POST /newsletters/nl_1/articles") }));
      const idem = k.scopedKey("key_1", "w1", "POST /newsletters/nl_1/articles");
      const lost = k.request(1, [g], { idempotency: idem });
      const [outcome] = await chargedLate(store, [lost], hooks);
      expect(comparableOutcome(outcome!)).toMatchObject({ kind: "charged", replay: false, windows: [{ count: 2 }] });
      // the record's end, by the clock the store decided at (its own, when it reports one), as the policy computes it
      const record = { key: idem.key, fingerprint: idem.fingerprint, expiresAt: (outcome!.now ?? lost.now) + idem.ttlMs, scope: idem.scope };
      expect(await store.forget(record, lost.now)).toBe(true);
      expect(comparableOutcome(await charge(store, k.request(2, [g], { idempotency: idem })))).toMatchObject({ kind: "charged", replay: false });
    },
  },
];
