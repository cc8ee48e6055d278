/** What became of one replayed request (allowed, throttled, capped or refused), and that as a phrase. */
import type { Decision } from "../types.js";

/** What became of one request. */
export type Outcome =
  | { readonly kind: "allowed" }
  | { readonly kind: "throttled"; readonly budget: string }
  | { readonly kind: "capped"; readonly cap: string }
  | { readonly kind: "refused"; readonly why: string };

/** The outcome a decision stands for: its budget, its cap, or its refusal with the code and the case. */
export function outcomeOf(decision: Decision): Outcome {
  const r = decision.reason;
  if (decision.allowed) return { kind: "allowed" };
  if (r.rule === "budget_spent") return { kind: "throttled", budget: r.budget };
  if (r.rule === "daily_cap") return { kind: "capped", cap: r.cap };
  const code = decision.body.error.code;
  if (r.rule === "insufficient_scope") return { kind: "refused", why: `${code} #${r.case} (${r.param ? `${r.param}, ` : ""}needs ${r.needed})` };
  if (r.rule === "no_reach") return { kind: "refused", why: `${code} (${r.cause.replace("_", " ")})` };
  if (r.rule === "invalid_input" || r.rule === "malformed_request") return { kind: "refused", why: `${code} (${r.param})` };
  return { kind: "refused", why: code };
}

/** An outcome as a short phrase: `allowed`, `throttled by audience`, `capped by dispatch`, or the refusal. */
export function describeOutcome(outcome: Outcome): string {
  switch (outcome.kind) {
    case "allowed":
      return "allowed";
    case "throttled":
      return `throttled by ${outcome.budget}`;
    case "capped":
      return `capped by ${outcome.cap}`;
    case "refused":
      return `refused: ${outcome.why}`;
  }
}
