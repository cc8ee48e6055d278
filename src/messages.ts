/**
 * Every error message the policy writes (spec §7's `message`), in one place: the plan and render
 * hand the facts, this file says them in words. Messages are for people; hosts read `reason`.
 */
import type { BudgetReport, CapName, Requirement } from "./types.js";

/** What a credential holds on a newsletter, as a phrase: `content: read, audience: write` or `nothing`. */
export function heldPhrase(held: readonly string[]): string {
  // one family (the common case) is its own phrase: no join
  return held.length === 0 ? "nothing" : held.length === 1 ? held[0]! : held.join(", ");
}

/** DESIGN §10: a descriptor that cannot be read. */
export function malformedRequest(param: string, detail: string): string {
  return `The request's ${param} ${detail}.`;
}

/** DESIGN §11: no catalogue operation matches. */
export function unknownOperation(method: string, path: string): string {
  return `No operation matches ${method} ${path}.`;
}

/** DESIGN §8: one answer for every cause of a missing reach. */
export function noReach(newsletter: string | undefined): string {
  return newsletter === undefined ? "The resource was not found." : `Newsletter "${newsletter}" was not found for this credential.`;
}

/** DESIGN §10: bad input from the request, naming the field. */
export function invalidInput(param: string, detail: string): string {
  return `${param} ${detail}.`;
}

/** What an operation is, for the 403 messages: `POST /articles/a_1/send needs sending: write on newsletter "nl_1"`. */
export interface Needed {
  readonly method: string;
  readonly path: string;
  readonly needs: Requirement;
  readonly newsletter: string;
  readonly held: readonly string[];
}

/** spec §7 #1: the credential lacks the operation's permission. */
export function lacksPermission(n: Needed): string {
  return `${n.method} ${n.path} needs ${n.needs} on newsletter "${n.newsletter}"; this credential holds ${heldPhrase(n.held)} there.`;
}

/** spec §7 #2: granted the family, capped by the owner's role now; what it holds after the cap. */
export function cappedByRole(n: Needed, family: string, granted: string, role: string, capped: string): string {
  return `${n.method} ${n.path} needs ${n.needs} on newsletter "${n.newsletter}". The credential was granted ${family}: ${granted}, but its owner's current role "${role}" caps it at ${family}: ${capped}; after the cap it holds ${heldPhrase(n.held)} there.`;
}

/** spec §7 #3: `account: read`, held nowhere. */
export function lacksAccount(method: string, path: string): string {
  return `${method} ${path} needs account: read; this credential does not hold it anywhere it reaches.`;
}

/** A read-only credential's filter that was refused: the filter, its value, and the values it may use. */
export interface RefusedFilter {
  readonly path: string;
  readonly name: string;
  readonly refused: string;
  readonly allowed: readonly string[];
  readonly needed: Requirement;
  readonly newsletter: string;
  readonly held: readonly string[];
}

/** spec §5.7, §7 #4–#6: a read-only credential filtering by what shows unpublished content. */
export function filterNeedsWrite({ path, name, refused, allowed, needed, newsletter, held }: RefusedFilter): string {
  const instead = allowed.length === 0 ? `may not use ${name}` : `may use ${name}=${allowed.join(" or ")} only`;
  return `Filtering ${path} by ${name}=${refused} shows unpublished content and needs write in a family of newsletter "${newsletter}", such as ${needed}; this credential is read-only there and holds ${heldPhrase(held)}, so it ${instead}.`;
}

/** spec §7 #7: an expand path the credential may not expand. */
export function expandNeedsPermission(expand: string, path: string, needs: Requirement, newsletter: string, held: readonly string[]): string {
  return `expand=${expand} on ${path} needs ${needs} on newsletter "${newsletter}"; this credential holds ${heldPhrase(held)} there.`;
}

/**
 * DESIGN §3: the budget a 429 names. `retryAfter` is the request's own wait (the longest of its
 * spent budgets'): when another spent budget of the request waits longer than the named one, the
 * message says so, since spec §7 asks for the same request after Retry-After and not before (a
 * message that said only "general refills in 9 s" invited a retry that another budget refused
 * until 59 s; found by a conformance review).
 */
export function budgetSpent(report: BudgetReport, retryAfter: number = report.reset, longest?: BudgetReport): string {
  const size = `${report.limit} requests per ${report.window} seconds`;
  const also =
    longest === undefined || retryAfter <= report.reset
      ? ""
      : ` This request also needs the ${longest.name} budget, spent as well: send it again after Retry-After (${retryAfter} s).`;
  if (report.name === "general") {
    return `The general budget (${size}) is spent: no call can be made with this credential until it refills in ${report.reset} s.${also}`;
  }
  return `The ${report.name} budget (${size}) is spent; it refills in ${report.reset} s. Calls outside the ${report.name} budget remain possible.${also}`;
}

/** When a day starts, as `00:00 UTC` or `00:00 UTC+02:00`. */
function dayStart(dayOffsetMs: number): string {
  const minutes = dayOffsetMs / 60_000;
  if (minutes === 0) return "00:00 UTC";
  const sign = minutes > 0 ? "+" : "-";
  const abs = Math.abs(minutes);
  return `00:00 UTC${sign}${String(Math.floor(abs / 60)).padStart(2, "0")}:${String(abs % 60).padStart(2, "0")}`;
}

/** spec §7: for a daily cap the message says it is a daily limit, and gives Retry-After's unit. */
export function dailyCapReached(cap: CapName, limit: number, newsletter: string | undefined, dayOffsetMs: number, unit: "hours" | "seconds"): string {
  const what =
    cap === "dispatch"
      ? `The daily dispatch limit of ${limit} sends and schedules for newsletter "${newsletter}" is reached`
      : `The daily test-send limit of ${limit} requests for this credential is reached`;
  return `${what}. This is a daily limit: it resets at ${dayStart(dayOffsetMs)}; Retry-After is in ${unit}.`;
}

/** DESIGN §7: a key reused for another request; `first` describes the request it was used for. */
export function idempotencyConflict(key: string, first: string, sameRoute: boolean): string {
  const detail = sameRoute ? `${first} with another query, body or newsletter` : first;
  return `Idempotency-Key "${key}" was already used for a different request (${detail}). A key may be reused only to retry the same request (same method, path, query, body and newsletter); use a new key for a new request.`;
}

/** DESIGN §12: the store could not be reached. */
export const STORE_UNAVAILABLE = "The rate-limit store is unavailable, so this request cannot be counted. Retry shortly.";

/** DESIGN §12: the store could not be read for `GET /rate-limit`. */
export const STATUS_UNAVAILABLE = "The rate-limit store is unavailable, so the budgets cannot be read. Retry shortly.";
