/**
 * The stateful way through: the same plan → charge → decide → render as `evaluate`, with the
 * counters in a store (in memory, or shared through Redis) and time and ids from injected
 * functions. `check` is in policy-check.ts; the other methods are here.
 */
import { budgetCharges } from "./charge-request.js";
import { resolveConfig } from "./config.js";
import { knownKeys, record } from "./config-fields.js";
import { describeThrown, PolicyConfigError } from "./errors.js";
import { figures } from "./headers.js";
import { hooksOf } from "./hooks.js";
import { assertCredential, assertNow } from "./host-input.js";
import { assertInsurance, insured, insuranceStoreTicket } from "./insurance.js";
import { applyLimits } from "./limits.js";
import { MemoryStore } from "./memory-store.js";
import { check, type PolicyContext } from "./policy-check.js";
import { randomId, requestIds } from "./request-id.js";
import type { CreatePolicyOptions, Policy, StatusOptions } from "./policy-types.js";
import { checkedReadings, isPolicyStore } from "./store.js";
import { assertTarget, resetRequest, type ResetTarget } from "./reset.js";
import { subjectKeysOf } from "./store-keys.js";
import type { Credential, Decision, RateLimitStatus } from "./types.js";


/** `policy.release`: the store that made the cap charge uncounts it (an insured ticket says so: insurance.ts). */
async function release(ctx: PolicyContext, decision: Pick<Decision, "release">): Promise<boolean> {
  const ticket = decision?.release;
  if (ticket === undefined) return false;
  const theirs = insuranceStoreTicket(ticket);
  if (theirs === undefined) return ctx.store.release(ticket, ctx.now());
  // never sent to the main store, whose members are numbered alike; without insurance there is nothing to uncount
  return ctx.insurance === undefined ? false : ctx.insurance.store.release(theirs, ctx.now());
}

/** `policy.reset`: both stores clear what the target names. */
async function reset(ctx: PolicyContext, target: ResetTarget): Promise<void> {
  assertTarget(target, "target");
  const t = ctx.now();
  const request = resetRequest(target, ctx.config, t);
  const { store, insurance } = ctx;
  const stores = insurance === undefined ? [store] : [store, insurance.store];
  for (const s of stores) {
    if (typeof s.reset !== "function") {
      throw new PolicyConfigError(s === store ? "store.reset" : "insurance.store.reset", "is missing: this store cannot reset counters (MemoryStore and RedisStore can)");
    }
  }
  // each store is asked whatever the other does, a store that throws as one that rejects (a main
  // store that threw left the insurance store uncleared, one that rejected did not; found by an
  // operating review): a reset is idempotent, so the host tries it again after a failure
  const results = await Promise.allSettled(stores.map(async (s) => s.reset!(request, t)));
  const failed = results.find((r) => r.status === "rejected");
  if (failed !== undefined) throw (failed as PromiseRejectedResult).reason;
}

/** `policy.status`: every budget's figures, read without charging (from the insurance store when the main one fails). */
async function status(ctx: PolicyContext, credential: Credential, options: StatusOptions | undefined): Promise<RateLimitStatus> {
  assertCredential(credential);
  // { limts: paid } would answer the config's numbers while check enforced the plan's
  if (options !== undefined) knownKeys(record(options, "options", "an object { limits? }"), "options", ["limits"]);
  const effective = applyLimits(ctx.config, options?.limits, "limits");
  const t = ctx.now();
  const keys = subjectKeysOf(credential);
  let budgets = effective.budgets;
  let readings;
  try {
    readings = checkedReadings(budgets.length, await ctx.store.read(budgetCharges(keys, budgets), t));
  } catch (error) {
    if (ctx.insurance === undefined) throw error;
    budgets = insured(effective, ctx.insurance.share).budgets;
    readings = checkedReadings(budgets.length, await ctx.insurance.store.read(budgetCharges(keys, budgets), t));
  }
  // every budget is set below, the spec's three among them (a config cannot remove them)
  const out = {} as RateLimitStatus["budgets"];
  budgets.forEach((b, i) => {
    out[b.name] = figures(b, readings[i]!, t);
  });
  return { budgets: out };
}

const OPTIONS = ["store", "config", "clock", "generateId", "failOpen", "onStoreError", "insurance", "onDecision", "onHookError"] as const;

/** `createPolicy`'s options: known names only (a misspelt `failopen` would be dropped without a word), the right kinds. */
function checkOptions(options: CreatePolicyOptions): void {
  const given = record(options, "options", "an object of createPolicy options");
  knownKeys(given, "", OPTIONS);
  if (options.store !== undefined && !isPolicyStore(options.store)) {
    throw new PolicyConfigError("store", "must be a PolicyStore (charge, release, read), e.g. new MemoryStore() or a RedisStore");
  }
  for (const name of ["clock", "generateId", "onStoreError", "onDecision", "onHookError"] as const) {
    if (options[name] !== undefined && typeof options[name] !== "function") throw new PolicyConfigError(name, `must be a function; got ${typeof options[name]}`);
  }
  if (options.failOpen !== undefined && typeof options.failOpen !== "boolean") throw new PolicyConfigError("failOpen", "must be true or false");
}

/**
 * Makes a policy over a store, for middleware.
 *
 * @param options - store (default MemoryStore), config (default the spec), clock (default Date.now),
 *   generateId (default random), failOpen (default false), onStoreError, insurance (default none),
 *   onDecision, onHookError.
 * @returns a {@link Policy} with `check`, `release`, `reset` and `status`.
 * @throws PolicyConfigError when an option is unknown or of the wrong kind, or the config, the store or the insurance is invalid.
 * @example
 * const policy = createPolicy({ store: new MemoryStore(), config: { docsUrl: "https://api.example.com/docs/errors" } });
 * const decision = await policy.check(
 *   { method: "POST", path: "/articles/a_1/send", newsletter: "nl_1", idempotencyKey: "send-a_1", body },
 *   { credential, roles },
 * );
 * if (!decision.allowed) return res.writeHead(decision.status, decision.headers).end(JSON.stringify(decision.body));
 */
export function createPolicy(options: CreatePolicyOptions = {}): Policy {
  checkOptions(options);
  const config = resolveConfig(options.config);
  const clock = options.clock ?? Date.now;
  const generateId = options.generateId ?? randomId;
  const ctx: PolicyContext = {
    config,
    store: options.store ?? new MemoryStore(),
    now() {
      let t: unknown;
      try {
        t = clock();
      } catch (error) {
        // the host's clock is the host's code: its failure is a host mistake, typed and named as a
        // clock that answers no time is (it came back as the bare error; found by a hostile-input drill)
        throw new PolicyConfigError("clock()", `threw ${describeThrown(error)}`, { cause: error });
      }
      assertNow(t, "clock()");
      return t;
    },
    requestId: requestIds(generateId),
    failOpen: options.failOpen === true,
    insurance: options.insurance === undefined ? undefined : assertInsurance(options.insurance),
    hooks: hooksOf(options),
  };
  return {
    config: config.settings,
    check: (request, who) => check(ctx, request, who),
    release: (decision) => release(ctx, decision),
    reset: (target) => reset(ctx, target),
    status: (credential, statusOptions) => status(ctx, credential, statusOptions),
  };
}
