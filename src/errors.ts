/**
 * The brand of each of the package's error classes: a registered symbol, so that the ESM and the
 * CommonJS builds loaded in one process (the dual-package hazard) agree on which errors are theirs.
 */
const CONFIG_ERROR = Symbol.for("newsletter-policy.PolicyConfigError");

/** Marks `error` as one of the class `key` names (a non-enumerable own property). */
export function brand(error: Error, key: symbol): void {
  Object.defineProperty(error, key, { value: true });
}

/**
 * `instanceof` for a branded error class: for the class itself (the one that defines
 * `Symbol.hasInstance`), any error with its brand, whichever build made it; for a subclass, the
 * prototype chain as usual. The class is told by its own property, not by its name: a static
 * method that names its class makes the bundler rename the class (`_PolicyConfigError` in stack
 * traces and `constructor.name`; found by a review).
 */
export function isBranded(cls: { prototype: object }, key: symbol, value: unknown): boolean {
  if (typeof value !== "object" || value === null) return false;
  if (!Object.hasOwn(cls, Symbol.hasInstance)) return Object.prototype.isPrototypeOf.call(cls.prototype, value);
  return (value as Record<symbol, unknown>)[key] === true;
}

/**
 * Thrown for host mistakes only: invalid config, a credential that is not a credential, a clock that
 * is not a number. Never thrown for anything a client sends; that is a refusal.
 *
 * @example
 * try { defineConfig({ budgets: { general: { limit: 0, window: 60 } } }); }
 * catch (e) { if (e instanceof PolicyConfigError) console.error(e.field); } // "budgets.general.limit"
 */
export class PolicyConfigError extends Error {
  /**
   * `instanceof` holds across the package's two builds: an error thrown by the CommonJS build (a
   * dependency that `require`s the package) is a PolicyConfigError to the ESM build's class too.
   */
  static override [Symbol.hasInstance](value: unknown): boolean {
    return isBranded(this, CONFIG_ERROR, value);
  }

  /** The offending field, as a dotted path (`budgets.general.limit`, `operations[2].needs`). */
  readonly field: string;
  /** What is wrong with it, e.g. `must be a whole number ≥ 1; got 0` (the message is `newsletter-policy: <field> <problem>`). */
  readonly problem: string;

  /**
   * @param field - the offending field, as a dotted path.
   * @param problem - what it must be, e.g. `must be a whole number ≥ 1; got 0`.
   * @param options - `cause`: the host's own error behind it (a clock that threw).
   */
  constructor(field: string, problem: string, options?: { cause?: unknown }) {
    super(`newsletter-policy: ${field} ${problem}`, options);
    this.name = "PolicyConfigError";
    this.field = field;
    this.problem = problem;
    brand(this, CONFIG_ERROR);
  }
}

/**
 * What a host's function threw, as text, whatever it threw: `Name: message` for an Error, else its
 * text; an object with no way to become text, or an Error whose message getter throws, is said so
 * rather than throwing (a clock that threw one came back bare; found by a review).
 */
export function describeThrown(error: unknown): string {
  try {
    return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  } catch {
    return "a value that cannot be shown";
  }
}
