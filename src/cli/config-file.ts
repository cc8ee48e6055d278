/**
 * Config files for the CLI: `.json` holding the options object, or `.js`/`.mjs`/`.cjs` exporting it
 * (as `default` or as `config`). Either way it is the options you would pass to `defineConfig`,
 * validated by it, so a typo fails with the field's name.
 */
import { readFile } from "node:fs/promises";
import { extname, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { defineConfig, type PolicyConfig } from "../config.js";
import type { PolicyOptions } from "../config-types.js";
import { CliError } from "./cli-error.js";
import { PolicyConfigError } from "../errors.js";

/**
 * Loads and validates a config file.
 *
 * @param path - a `.json`, `.js`, `.mjs` or `.cjs` file; undefined: the spec's defaults.
 * @param option - the command-line option that named the file, for messages.
 * @returns the validated config.
 * @throws CliError for an unreadable file, bad JSON, another extension or invalid options, naming the option and the file (and the field).
 */
export async function loadConfig(path: string | undefined, option = "--config"): Promise<PolicyConfig> {
  // without --config the CLI shows the spec's defaults: the docsUrl warning is advice for a host's code, not for this run
  if (path === undefined) return defineConfig({ onWarning: () => {} });
  // the option and the file the mistake is in (a --compare file's was read as --config's; found by a new-user review)
  const mistake = (what: string) => new CliError(`${option} ${path}: ${what}`);
  const file = resolve(path);
  const ext = extname(file);
  let options: unknown;
  if (ext === ".json") {
    const text = await readFile(file, "utf8").catch((error: Error) => {
      throw mistake(error.message);
    });
    try {
      options = JSON.parse(text);
    } catch (error) {
      throw mistake(`not JSON (${(error as Error).message})`);
    }
  } else if (ext === ".js" || ext === ".mjs" || ext === ".cjs") {
    const module = (await import(pathToFileURL(file).href).catch((error: Error) => {
      throw mistake(error.message);
    })) as { default?: unknown; config?: unknown };
    options = module.config ?? module.default;
    // a CommonJS file's module.exports arrives as `default`
    if (typeof options === "object" && options !== null && "config" in options && Object.keys(options).length === 1) options = (options as { config: unknown }).config;
  } else {
    throw mistake(`a config file is .json, .js, .mjs or .cjs; got "${ext || "no extension"}"`);
  }
  if (typeof options !== "object" || options === null) throw mistake(`must hold (or export as default or "config") the options object of defineConfig`);
  try {
    return defineConfig(options as PolicyOptions);
  } catch (error) {
    // a PolicyConfigError names the field (the CLI prints it, exit 2); anything else the options
    // threw as they were read (a getter) is the file's mistake too, not a crash (found by a review)
    if (error instanceof PolicyConfigError) throw mistake(`${error.field} ${error.problem}`);
    throw mistake(`its options could not be read: ${error instanceof Error ? error.message : String(error)}`);
  }
}
