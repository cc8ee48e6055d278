/**
 * Running a random store program through the reference (`MemoryStore`) and the store under test
 * side by side, comparing every outcome, release and reading.
 */
import { expect } from "../vitest-api.js";
import { dayOf } from "../../calendar.js";
import { releaseTicket } from "../../charge-request.js";
import type { BudgetCharge, ChargeRequest, PolicyStore, ResetRequest } from "../../store.js";
import type { CapName, ReleaseTicket } from "../../types.js";
import { comparableOutcome } from "./comparable.js";
import type { Program, ProgramOp } from "./program.js";
import { charge, read } from "./store-calls.js";

/** One program's run: the two stores, the program's budgets (keys namespaced by `prefix`), and the tickets of the charges so far. */
interface Run {
  readonly program: Program;
  readonly prefix: string;
  readonly budgets: readonly BudgetCharge[];
  readonly reference: PolicyStore;
  readonly store: PolicyStore;
  /** The ticket of each counted cap charge, as each store made it. */
  readonly tickets: { expected: ReleaseTicket; actual: ReleaseTicket }[];
}

type Op<K extends ProgramOp["op"]> = Extract<ProgramOp, { op: K }>;

/** Runs one program against the reference and the store under test, comparing at every step. */
export async function runProgram(program: Program, prefix: string, reference: PolicyStore, store: PolicyStore): Promise<void> {
  const budgets = program.budgets.map((b, i): BudgetCharge => ({ key: `${prefix}b${i}`, limit: b.limit, windowMs: b.windowMs }));
  const run: Run = { program, prefix, budgets, reference, store, tickets: [] };
  let now = program.start;
  for (let step = 0; step < program.ops.length; step++) {
    const op = program.ops[step]!;
    now += op.advance;
    const at = `step ${step} (${op.op} at +${now - program.start} ms)`;
    if (op.op === "reset") await resetBoth(run, op, now);
    else if (op.op === "read") await readBoth(run, op, now, at);
    else if (op.op === "release") await releaseBoth(run, op, now, at);
    else await chargeBoth(run, op, step, now, at);
  }
}

/** A credential-like reset: some windows, one cap's today, one scope of idempotency records. */
async function resetBoth({ program, prefix, budgets, reference, store }: Run, op: Op<"reset">, now: number): Promise<void> {
  const request: ResetRequest = {
    windows: op.budgets.map((i) => budgets[i]!.key),
    caps: op.cap === null ? [] : [{ key: `${prefix}c${op.cap}`, day: dayOf(now, program.offsetMs).day, offsetMs: program.offsetMs }],
    ...(op.scope !== null && { idempotencyScope: `${prefix}s${op.scope}` }),
  };
  await reference.reset!(request, now);
  await store.reset!(request, now);
}

/** The same windows read from both stores. */
async function readBoth({ budgets, reference, store }: Run, op: Op<"read">, now: number, at: string): Promise<void> {
  const chosen = op.budgets.map((i) => budgets[i]!);
  expect(await read(store, chosen, now), at).toEqual(await read(reference, chosen, now));
}

/** An earlier counted charge released in both stores, by the `pick`-th ticket (mod their number). */
async function releaseBoth({ program, tickets, reference, store }: Run, op: Op<"release">, now: number, at: string): Promise<void> {
  if (tickets.length === 0) return;
  const pair = tickets[op.pick % tickets.length]!;
  const expected = await reference.release(pair.expected, now);
  const actual = await store.release(pair.actual, now);
  // Releasing a past day's charge is unspecified: it no longer counts toward anything today, and
  // stores may differ in when they forget a past day (a release uncounts only while the day is held).
  if (pair.expected.day === dayOf(now, program.offsetMs).day) expect(actual, at).toBe(expected);
}

/** One charge made in both stores; a counted cap charge leaves a ticket for later releases. */
async function chargeBoth({ program, prefix, budgets, reference, store, tickets }: Run, op: Op<"charge">, step: number, now: number, at: string): Promise<void> {
  const [capIndex, capName] = op.cap ?? [0, "dispatch" as CapName];
  const request: ChargeRequest = {
    id: `${prefix}r${step}`,
    now,
    budgets: op.budgets.map((i) => budgets[i]!),
    refused: op.refused,
    // keys 0 and 2 in scope 0, key 1 in scope 1 (what a reset clears by scope)
    ...(op.idem && { idempotency: { key: `${prefix}s${op.idem[0] % 2}:k${op.idem[0]}`, fingerprint: `POST /f${op.idem[1]}`, ttlMs: program.ttlMs, scope: `${prefix}s${op.idem[0] % 2}` } }),
    ...(op.cap && {
      cap: { name: capName, key: `${prefix}c${capIndex}`, limit: program.capLimits[capIndex]!, offsetMs: program.offsetMs, ...dayOf(now, program.offsetMs) },
    }),
  };
  const expected = await charge(reference, request);
  const actual = await charge(store, request);
  expect(comparableOutcome(actual), at).toEqual(comparableOutcome(expected));
  if (expected.kind === "charged" && expected.member !== undefined && actual.kind === "charged" && actual.member !== undefined) {
    tickets.push({ expected: releaseTicket(request, expected.member), actual: releaseTicket(request, actual.member) });
  }
}
