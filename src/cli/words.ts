/**
 * A decision's reason in words, for people: the CLI's `explain` and the playground page print it.
 * Reads only the decision's data (its `reason`), so it runs anywhere; no Node built-ins.
 */
import type { Decision } from "../types.js";

const CAUSES = {
  not_granted: (n: string) => `the credential was not minted or authorised for newsletter "${n}"`,
  no_role: (n: string) => `the credential's owner holds no role on newsletter "${n}" now`,
  unknown_role: (n: string) => `the owner's role on newsletter "${n}" is not one the config knows`,
  unresolved: () => "the request names no newsletter (the host passes `newsletter` for paths without one)",
} as const;

const CAP_NAMES = { dispatch: "daily dispatch cap (sends and schedules per newsletter)", testSend: "daily test-send cap (per credential)" } as const;

/**
 * Why a decision came out as it did, in one or two sentences, with the spec's rule and, for a
 * refusal, what would fix it.
 *
 * @param decision - any decision of `evaluate` or `policy.check`.
 * @returns plain text, no trailing newline.
 * @example
 * console.log(reasonInWords(decision)); // "Refused: GET … needs audience: read (spec §7 insufficient_scope #1). Fix: …"
 */
export function reasonInWords(decision: Decision): string {
  const r = decision.reason;
  const op = decision.operation === undefined ? "" : ` (${decision.operation})`;
  switch (r.rule) {
    case "allowed":
      return `Allowed${op}.${r.replay ? " It is a replay of an earlier request with the same Idempotency-Key: answer it from the stored result, do not run it again." : ""}${
        decision.view === "reader" ? " The credential is read-only on this newsletter: show it what a reader sees, no unpublished content (spec §5.7)." : ""
      }${decision.charged.caps.length > 0 ? ` It counts toward the ${decision.charged.caps.join(", ")} daily cap.` : ""}`;
    case "malformed_request":
      return `Refused: the request could not be read: its ${r.param} ${r.detail} (400 invalid_request).`;
    case "unknown_operation":
      return `Refused: no operation of the catalogue matches ${r.method} ${r.path}; unknown operations fail closed (404 not_found). Hosts add operations with defineConfig({ operations }).`;
    case "budget_spent": {
      const named = r.spent.find((s) => s.name === r.budget)!;
      const others = r.spent.filter((s) => s.name !== r.budget).map((s) => s.name);
      return `Throttled: the ${r.budget} budget (${named.limit} requests per ${named.window} s) is spent${others.length ? `, and so is ${others.join(", ")}` : ""}; send the same request again after Retry-After (${decision.headers["Retry-After"]} s). Nothing was charged (spec §7 rate_limited, §8).`;
    }
    case "no_reach": {
      const why = CAUSES[r.cause](r.newsletter ?? "");
      return `Refused with 404 not_found: ${why}. Every cause answers the same, so that a newsletter's existence does not leak.`;
    }
    case "insufficient_scope": {
      const held = r.held.length === 0 ? "nothing" : r.held.join(", ");
      const fixes: Record<number, string> = {
        1: `mint a new key with ${r.needed} ticked (and revoke the old one), or re-authorise the OAuth app with that scope`,
        2: `the key holds it, but the owner's current role caps it: a newsletter owner or admin widens the role`,
        3: "mint a key with account access on, or re-authorise with account:read",
        4: `drop the ${r.param} filter or send only the values in allowed_values, or use a credential with write on the newsletter`,
        5: `drop the ${r.param} filter, or use a credential with write on the newsletter`,
        6: `drop the ${r.param} filter or send only the values in allowed_values, or use a credential with write on the newsletter`,
        7: `drop that expand path, or use a credential that holds ${r.needed}`,
      };
      return `Refused with 403 insufficient_scope (spec §7 row #${r.case}): needs ${r.needed}${r.param ? ` for ${r.param}` : ""}; the credential holds ${held} there. Fix: ${fixes[r.case]}. Retrying cannot help.`;
    }
    case "invalid_input":
      return `Refused with 400 invalid_request: ${r.param} ${r.detail}. Nothing counts toward a daily cap.`;
    case "idempotency_conflict":
      return `Refused with 409 conflict: Idempotency-Key "${r.key}" was first used on a different request; use a new key for a new request.`;
    case "daily_cap": {
      const unit = /hours|seconds/.exec(decision.body?.error.message ?? "")?.[0] ?? "hours";
      return `Capped: the ${CAP_NAMES[r.cap]} of ${r.limit} is reached (${r.count} counted today); it resets at ${new Date(r.resetAt).toISOString()}. Retry-After is ${decision.headers["Retry-After"]} ${unit} (spec §7: for a daily cap it is in hours).`;
    }
    case "store_unavailable":
      return r.failOpen
        ? `Allowed uncounted: the rate-limit store failed (${r.error}) and the policy fails open.`
        : `Refused with 503 service_unavailable: the rate-limit store failed (${r.error}); retry shortly.`;
  }
}
