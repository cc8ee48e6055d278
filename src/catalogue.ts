/**
 * The operation catalogue of spec §4 as data. Routing, permission checks, input limits, headers and
 * the permission table in docs/ all read this one table.
 */
import { freeze } from "immer";
import type { BuiltInBudget, CapName, Requirement } from "./types.js";

/** An HTTP method the catalogue can route. */
export type Method = "GET" | "POST" | "PUT" | "PATCH" | "DELETE";

/** A query filter whose values a read-only credential may only partly use (spec §7 #4–#6). */
export interface FilterRule {
  /** The values a read-only credential may send; empty: it may not use the filter at all. */
  readonly reader: readonly string[];
  /** The row of spec §7's insufficient_scope table, for `reason.case`. Default: 5 when `reader` is empty, else 4. */
  readonly specCase?: 4 | 5 | 6;
}

/** A JSON body field holding a list, with its bounds (spec §8 other constants). */
export interface ListField {
  readonly field: string;
  readonly min: number;
  readonly max: number;
  /** What the items are, for the error message. */
  readonly items: string;
}

/** One operation: how to recognise it and what it needs. */
export interface OperationSpec {
  /** Stable id, e.g. `subscribers.list`. */
  readonly id: string;
  readonly method: Method;
  /** Path template; `{newsletter}` names the newsletter, other `{…}` segments match any id. */
  readonly path: string;
  /** The permission it needs; omitted: only a credential (e.g. `GET /rate-limit`). */
  readonly needs?: Requirement;
  /** Budgets besides `general` (always charged). Non-GET operations also get `write` (spec §6). */
  readonly budgets?: readonly string[];
  /** The daily cap it counts toward. */
  readonly cap?: CapName;
  /** Query filters restricted for read-only credentials. */
  readonly filters?: Readonly<Record<string, FilterRule>>;
  /** `expand` paths it accepts, each with the permission it additionally needs. */
  readonly expand?: Readonly<Record<string, Requirement>>;
  /** A list operation: `limit` must be a positive integer. */
  readonly paginated?: boolean;
  /** A bounded list in the JSON body. */
  readonly list?: ListField;
}

const audience: readonly BuiltInBudget[] = ["audience"];

/**
 * The built-in operations whose permission the spec leaves unstated (DESIGN §9: defaults in the catalogue below,
 * configurable); every other built-in's permission is the spec's (operations.ts `checkReplacements`).
 */
export const UNSTATED_NEEDS: ReadonlySet<string> = new Set(["events.list", "tags.subscribers.add", "articles.testSend"]);

/** The built-in operations, as written: {@link defaultOperations} is this, frozen through. */
const catalogue: OperationSpec[] = [
  { id: "rateLimit.get", method: "GET", path: "/rate-limit" },
  { id: "me.get", method: "GET", path: "/me", needs: "account: read" },
  { id: "memberships.list", method: "GET", path: "/memberships", needs: "account: read", paginated: true },
  { id: "subscriptions.list", method: "GET", path: "/subscriptions", needs: "account: read", paginated: true },
  { id: "savedArticles.list", method: "GET", path: "/saved-articles", needs: "account: read", paginated: true },
  { id: "likedArticles.list", method: "GET", path: "/liked-articles", needs: "account: read", paginated: true },
  {
    id: "subscribers.list",
    method: "GET",
    path: "/newsletters/{newsletter}/subscribers",
    needs: "audience: read",
    budgets: audience,
    paginated: true,
  },
  // spec §4: "reading subscribers needs audience: read"
  { id: "subscribers.get", method: "GET", path: "/subscribers/{subscriber}", needs: "audience: read", budgets: audience },
  {
    id: "insights.list",
    method: "GET",
    path: "/newsletters/{newsletter}/insights",
    needs: "insights: read",
    budgets: audience,
    paginated: true,
    // spec §4: expand=subscriber inlines addresses and additionally needs audience: read
    expand: { subscriber: "audience: read" },
  },
  // Permission unstated in the spec; events return recipient addresses (spec §8), so audience: read.
  {
    id: "events.list",
    method: "GET",
    path: "/newsletters/{newsletter}/events",
    needs: "audience: read",
    budgets: audience,
    paginated: true,
  },
  {
    id: "articles.list",
    method: "GET",
    path: "/newsletters/{newsletter}/articles",
    needs: "content: read",
    paginated: true,
    // spec §4 and §7 #4/#5: read-only may filter status by sent only, and may not use tag
    filters: { status: { reader: ["sent"], specCase: 4 }, tag: { reader: [], specCase: 5 } },
  },
  {
    id: "threads.list",
    method: "GET",
    path: "/newsletters/{newsletter}/threads",
    needs: "content: read",
    paginated: true,
    // spec §4 and §7 #6: read-only may filter visibility by public only
    filters: { visibility: { reader: ["public"], specCase: 6 } },
  },
  { id: "articles.create", method: "POST", path: "/newsletters/{newsletter}/articles", needs: "content: write" },
  { id: "articles.update", method: "PATCH", path: "/articles/{article}", needs: "content: write" },
  { id: "articles.replace", method: "PUT", path: "/articles/{article}", needs: "content: write" },
  // Permission unstated; tagging changes the audience, so audience: write. spec §8: at most 500.
  {
    id: "tags.subscribers.add",
    method: "POST",
    path: "/tags/{tag}/subscribers",
    needs: "audience: write",
    list: { field: "subscribers", min: 1, max: 500, items: "subscriber ids" },
  },
  { id: "articles.send", method: "POST", path: "/articles/{article}/send", needs: "sending: write", cap: "dispatch" },
  // spec §1.5: scheduling counts as a dispatch
  { id: "articles.schedule", method: "POST", path: "/articles/{article}/schedule", needs: "sending: write", cap: "dispatch" },
  // Permission unstated; a test send mails people, so sending: write. spec §8: at most 5 addresses.
  {
    id: "articles.testSend",
    method: "POST",
    path: "/articles/{article}/test-send",
    needs: "sending: write",
    cap: "testSend",
    list: { field: "to", min: 1, max: 5, items: "addresses" },
  },
];

/**
 * The operations of spec §4, plus article create/edit (needs `content: write`): the catalogue every
 * config starts from. Hosts add operations through `operations` in `defineConfig`; an entry with a
 * built-in's id takes that operation's place, over it: it may change the permission where the spec
 * leaves it unstated (`events.list`, `tags.subscribers.add`, `articles.testSend`) and add budgets,
 * and what it leaves out stays the built-in's. A replacement that changes what the spec states (a
 * stated permission, budget, cap, filter, expand path, pagination or list bound; the method or the
 * path) throws PolicyConfigError naming the field.
 *
 * @example
 * const events = defaultOperations.find((op) => op.id === "events.list");
 * const config = defineConfig({ operations: [{ ...events!, needs: "insights: read" }] });
 * // or, the same: defineConfig({ operations: [{ id: "events.list", method: "GET", path: "/newsletters/{newsletter}/events", needs: "insights: read" }] })
 */
export const defaultOperations: readonly OperationSpec[] =
  // frozen through (immer's deep freeze): it is exported, and every config is compiled from it, so a
  // host that changed it (a reader's filter value, a permission) changed every config built after,
  // and the decisions of those built before (found by a review: `filters.status.reader[0] = "draft"`
  // let a read-only key list drafts)
  freeze(catalogue, true);
