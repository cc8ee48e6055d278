/**
 * Charges gathered into batches: the charges a store is handed in one turn of the event loop go to
 * Redis together, as one `CHARGE_BATCH` (scripts/charge-batch.ts), or when alone as one `CHARGE_PLAIN`
 * (neither idempotency key nor cap: scripts/charge-plain.ts) or `CHARGE`.
 *
 * A busy server hands the store many charges per turn (every request whose previous await settled
 * in that turn); each would otherwise be one command: one write and one read on each side, and the
 * command's own cost in Redis, for a few microseconds of work. A lone caller waits for nothing: its
 * charge is sent at the end of the turn it was made in (`process.nextTick`, or a microtask where
 * there is no `process`), before any I/O.
 *
 * Every charge keeps its own nonce and memo, so a batch resent after a timeout is answered from each
 * charge's memo, never counted twice; the batch's deadline is the moment the store gives up on it,
 * which no charge in it has reached yet (each joined it in the same turn). `maxInFlight` counts
 * charges, not commands: charges past it are refused at once (`RedisOverloadError`), as before.
 */
import type { ChargeOutcome } from "../store.js";
import { RedisOverloadError, type Link } from "./client.js";
import { batchCall, CHARGE_BATCH, decodeBatch } from "./scripts/charge-batch.js";
import { decodeCharge, FIRST_ARG_TIMED, lateCharge, type ChargeCallInput } from "./scripts/charge.js";
import { loneCharge } from "./scripts/charge-plain.js";

interface Waiting {
  readonly input: ChargeCallInput;
  readonly resolve: (outcome: ChargeOutcome) => void;
  readonly reject: (error: unknown) => void;
  /** The outcome of a charge Redis made after its caller was answered that the store gave up (see `Link.run`). */
  readonly late: ((outcome: ChargeOutcome) => void) | undefined;
}

const defer: (task: () => void) => void =
  typeof process === "object" && process !== null && typeof process.nextTick === "function" ? (task) => process.nextTick(task) : (task) => queueMicrotask(task);

/** Gathers one store's charges per turn and sends them in batches of at most `max`. */
export class Batcher {
  private waiting: Waiting[] = [];
  private scheduled = false;

  /**
   * @param link - the store's link to Redis.
   * @param max - charges per round trip at most (1: each alone).
   */
  constructor(
    private readonly link: Link,
    private readonly max: number,
  ) {}

  /** Queues one charge (what `chargeCall` builds it from) for the end of this turn: sent alone as `CHARGE`, else in a batch. */
  charge(input: ChargeCallInput, late?: (outcome: ChargeOutcome) => void): Promise<ChargeOutcome> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ input, resolve, reject, late });
      if (!this.scheduled) {
        this.scheduled = true;
        defer(() => this.flush());
      }
    });
  }

  private flush(): void {
    this.scheduled = false;
    const waiting = this.waiting;
    this.waiting = [];
    // as many as maxInFlight still allows go; the rest are refused without sending, each at once
    const room = this.link.room;
    for (let i = room; i < waiting.length; i++) waiting[i]!.reject(new RedisOverloadError(this.link.maxInFlight));
    const admitted = Math.min(room, waiting.length);
    for (let i = 0; i < admitted; i += this.max) this.send(waiting.slice(i, Math.min(admitted, i + this.max)));
  }

  private send(batch: readonly Waiting[]): void {
    // a lone charge is CHARGE_PLAIN or CHARGE itself (for one charge, cheaper for Redis than a batch of one)
    if (batch.length === 1) {
      const { input, resolve, reject, late } = batch[0]!;
      const { script, call, timed } = loneCharge(input);
      this.link.run(script, "charge", call.keys, call.args, timed, 1, lateCharge(late)).then(decodeCharge).then(resolve, reject);
      return;
    }
    const { keys, args } = batchCall(batch.map((w) => w.input));
    const sizes = batch.map((w) => w.input.budgets.length);
    // only a charge the policy could undo carries a `late` (a cap, or a keyed write when the store can forget): most batches make no closure
    const lateBatch = !batch.some((w) => w.late !== undefined) ? undefined : (reply: unknown): void => {
      const outcomes = decodeBatch(reply, sizes);
      batch.forEach((w, j) => {
        const outcome = outcomes[j]!;
        if (!(outcome instanceof Error)) w.late?.(outcome);
      });
    };
    this.link
      .run(CHARGE_BATCH, "charge", keys, args, FIRST_ARG_TIMED, batch.length, lateBatch)
      .then((reply) => decodeBatch(reply, sizes))
      .then(
        // each charge answers its own caller: its outcome, or the error it met inside the batch
        (outcomes) => batch.forEach((w, j) => (outcomes[j] instanceof Error ? w.reject(outcomes[j]) : w.resolve(outcomes[j]!))),
        (error: unknown) => batch.forEach((w) => w.reject(error)),
      );
  }
}
