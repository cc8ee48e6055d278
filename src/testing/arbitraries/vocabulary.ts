/**
 * What the arbitraries draw from: newsletter ids, prototype names asked for but never granted, role
 * names, and the operations {@link arbConfig} adds to the spec's catalogue.
 */
import type { OperationSpec } from "../../catalogue.js";

/** Newsletter ids the arbitraries grant and ask for. */
export const NEWSLETTER_IDS = ["nl_1", "nl_2", "nl_3"] as const;

/**
 * Ids that name properties of `Object.prototype`. They are asked for but never granted by these
 * arbitraries, so a request naming one must never be reached (`not_found`).
 */
export const PROTOTYPE_NAMES = [
  "__proto__",
  "constructor",
  "toString",
  "hasOwnProperty",
  "valueOf",
  "isPrototypeOf",
  "__defineGetter__",
  "propertyIsEnumerable",
] as const;

/** The built-in roles plus the one {@link arbConfig} adds (`analyst`) and one no config knows (`ghost`). */
export const ROLE_NAMES = ["owner", "admin", "editor", "analyst", "ghost"] as const;

/** Operations {@link arbConfig} adds, so that every family (settings and webhooks too) and a host budget are exercised. */
export const EXTRA_OPERATIONS: readonly OperationSpec[] = [
  { id: "settings.get", method: "GET", path: "/newsletters/{newsletter}/settings", needs: "settings: read" },
  { id: "settings.update", method: "PATCH", path: "/newsletters/{newsletter}/settings", needs: "settings: write" },
  { id: "webhooks.list", method: "GET", path: "/newsletters/{newsletter}/webhooks", needs: "webhooks: read" },
  { id: "webhooks.create", method: "POST", path: "/newsletters/{newsletter}/webhooks", needs: "webhooks: write" },
  { id: "sending.stats", method: "GET", path: "/newsletters/{newsletter}/sending-stats", needs: "sending: read" },
  { id: "insights.annotate", method: "POST", path: "/newsletters/{newsletter}/annotations", needs: "insights: write" },
  { id: "exports.create", method: "POST", path: "/newsletters/{newsletter}/exports", needs: "audience: read", budgets: ["exports"] },
];
