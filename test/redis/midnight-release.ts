/**
 * Two hosts sharing one store, their clocks 20 s apart across midnight: host A still on the day
 * before, host B on the new day. Each releases a send of its own day that failed downstream; a
 * release must uncount its own charge whatever the other host charged meanwhile (found by a Redis
 * drill: A's send after midnight moved the cap's "latest day" back, and B's release of a
 * new-day ticket then uncounted nothing, so B had one send fewer that day).
 */
import { createPolicy, type PolicyStore } from "../../src/index.js";
import { key, post } from "../fixtures.js";

export const MIDNIGHT = Date.UTC(2030, 0, 2);

/** A send, B send, A releases, A sends, B releases, B sends twice (dispatch cap 2): what each release answered, and B's two last statuses. */
export async function skewedMidnightReleases(store: PolicyStore, id: string): Promise<[boolean, boolean, number, number]> {
  const config = { caps: { dispatch: { limit: 2 } } };
  const a = createPolicy({ store, config, clock: () => MIDNIGHT - 10_000 });
  const b = createPolicy({ store, config, clock: () => MIDNIGHT + 10_000 });
  const newsletter = `nl_${id}`;
  const who = (name: string) => ({ credential: key({ [newsletter]: { content: "write", sending: "write" } }, false, `${name}_${id}`), roles: { [newsletter]: "owner" } });
  const send = (policy: typeof a, name: string, n: number) => policy.check(post(`/articles/a_${n}/send`, { newsletter, idempotencyKey: `${name}-${n}` }), who(name));
  const a1 = await send(a, "a", 1);
  const b1 = await send(b, "b", 1);
  if (!a1.allowed || !b1.allowed) throw new Error(`the first sends were refused: ${a1.status}, ${b1.status}`);
  const releasedA = await a.release(a1);
  if (!(await send(a, "a", 2)).allowed) throw new Error("A's second send was refused");
  const releasedB = await b.release(b1);
  const b2 = await send(b, "b", 2);
  const b3 = await send(b, "b", 3);
  return [releasedA, releasedB, b2.status, b3.status];
}

/**
 * Host B (10 s before midnight) sends with a key; host A (10 s after) releases it, and A's retry
 * counts again on A's day; then B retries: a replay (the send ran once more only). The decisions of
 * A's and B's retries: whether each was a replay, and the caps each charged.
 */
export async function retriedAcrossMidnight(store: PolicyStore, id: string): Promise<Array<[boolean, string[]]>> {
  const config = { caps: { dispatch: { limit: 5 } } };
  const behind = createPolicy({ store, config, clock: () => MIDNIGHT - 10_000 });
  const ahead = createPolicy({ store, config, clock: () => MIDNIGHT + 10_000 });
  const newsletter = `nl_${id}`;
  const who = { credential: key({ [newsletter]: { content: "write", sending: "write" } }, false, `k_${id}`), roles: { [newsletter]: "owner" } };
  const send = (policy: typeof behind) => policy.check(post("/articles/a_1/send", { newsletter, idempotencyKey: "K" }), who);
  const first = await send(behind);
  if (!first.allowed || !(await ahead.release(first))) throw new Error("the first send was refused, or its release uncounted nothing");
  const out: Array<[boolean, string[]]> = [];
  for (const policy of [ahead, behind]) {
    const d = await send(policy);
    out.push([d.reason.replay === true, d.charged.caps]);
  }
  return out;
}
