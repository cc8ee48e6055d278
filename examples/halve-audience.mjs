// The same config with the audience budget halved: 30 requests per 60 seconds.
// A .mjs config exports the options of defineConfig (as default, or as `config`).
import { readFileSync } from "node:fs";

const current = JSON.parse(readFileSync(new URL("./config.json", import.meta.url), "utf8"));
export default { ...current, budgets: { ...current.budgets, audience: { limit: 30, window: 60 } } };
