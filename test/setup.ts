/**
 * Test-process setup. The library warns once per process when a host leaves `docsUrl` unset
 * (defineConfig's `onWarning`); the suite compiles hundreds of configs without one on purpose, in
 * dozens of worker processes, so each process starts with that warning marked as given.
 * test/config-warning.test.ts clears the mark and checks the warning itself.
 */
(globalThis as Record<symbol, unknown>)[Symbol.for("newsletter-policy.warned.docs_url_default")] = true;
