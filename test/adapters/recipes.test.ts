/**
 * The framework recipes of docs/integration.md, run as a user would run them: each ```ts block
 * under "node:http", "Express 4 and 5", "Fastify 5" and "Hono 4" is written to a file as it stands
 * (only its port 3000 becomes a free port), started with tsx in its own process, and asked over
 * HTTP for a read, a reader's filter, the bracket tricks, the budget, the 26th send and an unknown key.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join, resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";

const root = resolve(import.meta.dirname, "../..");
const dir = join(root, ".recipes");
const doc = readFileSync(join(root, "docs/integration.md"), "utf8");

/** The first ```ts block under a `## heading`. */
function recipe(heading: string): string {
  const start = doc.indexOf(`\n## ${heading}\n`);
  if (start < 0) throw new Error(`docs/integration.md has no "## ${heading}"`);
  const block = /```ts\n([\s\S]*?)```/.exec(doc.slice(start));
  if (block === null) throw new Error(`no ts block under "## ${heading}"`);
  return block[1]!;
}

function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const probe = createServer().listen(0, "127.0.0.1", () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => done(port));
    });
    probe.on("error", fail);
  });
}

const children: ChildProcess[] = [];
mkdirSync(dir, { recursive: true });
// the package's own name resolves to its sources, as the published entry points would
writeFileSync(
  join(dir, "tsconfig.json"),
  JSON.stringify({
    compilerOptions: {
      target: "ES2022",
      module: "ESNext",
      moduleResolution: "Bundler",
      strict: true,
      baseUrl: "..",
      paths: {
        "newsletter-policy": ["src/index.ts"],
        "newsletter-policy/node": ["src/adapters/node.ts"],
        "newsletter-policy/express": ["src/adapters/express.ts"],
        "newsletter-policy/fastify": ["src/adapters/fastify.ts"],
        "newsletter-policy/hono": ["src/adapters/hono.ts"],
      },
    },
  }),
);
afterAll(() => {
  for (const child of children) if (child.exitCode === null && child.pid !== undefined) process.kill(child.pid);
  rmSync(dir, { recursive: true, force: true });
});

async function start(name: string, heading: string, edit: (source: string) => string): Promise<string> {
  const port = await freePort();
  const source = edit(recipe(heading)).replaceAll("3000", String(port));
  expect(source, "the recipe listens on port 3000").toContain(String(port));
  const file = join(dir, `${name}.ts`);
  writeFileSync(file, source);
  const child = spawn(process.execPath, [join(root, "node_modules/tsx/dist/cli.mjs"), "--tsconfig", join(dir, "tsconfig.json"), file], { cwd: root, stdio: ["ignore", "ignore", "pipe"] });
  children.push(child);
  let stderr = "";
  child.stderr!.on("data", (chunk) => (stderr += String(chunk)));
  const base = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 300; i++) {
    if (child.exitCode !== null) throw new Error(`${name} recipe exited ${child.exitCode}: ${stderr}`);
    try {
      await fetch(`${base}/rate-limit`, { headers: { authorization: "Bearer sk_reader" } });
      return base;
    } catch {
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  throw new Error(`${name} recipe did not listen: ${stderr}`);
}

const same = (source: string) => source;
const recipes = [
  ["node", "node:http", "node:http", same],
  ["express", "Express 4 and 5", "Express 5", same],
  // the same recipe on Express 4, installed here as "express4"
  ["express4", "Express 4 and 5", "Express 4", (source: string) => source.replace('from "express"', 'from "express4"')],
  ["fastify", "Fastify 5", "Fastify 5", same],
  ["hono", "Hono 4", "Hono 4", same],
] as const;

describe("the framework recipes of docs/integration.md, run unmodified on a real server", () => {
  for (const [name, heading, framework, edit] of recipes) {
    it(`${framework}: 200 read, 403 with param, bracket tricks refused, budget 429 with Retry-After, 429 in hours on the 26th send, 401 from who`, async () => {
      const base = await start(name, heading, edit);
      const get = (path: string, key: string) => fetch(base + path, { headers: { authorization: `Bearer ${key}` } });
      const error = async (response: Response) => ((await response.json()) as { error: Record<string, unknown> }).error;

      const read = await get("/newsletters/nl_1/articles?status=sent", "sk_reader");
      expect(read.status).toBe(200);
      expect(read.headers.get("ratelimit-policy")).toBe('"general";q=600;w=60');
      expect(await read.json()).toMatchObject({ view: "reader" });

      const draft = await get("/newsletters/nl_1/articles?status=draft", "sk_reader");
      expect(draft.status).toBe(403);
      expect(await error(draft)).toMatchObject({ code: "insufficient_scope", param: "status", allowed_values: ["sent"] });
      const bracket = await get("/newsletters/nl_1/articles?[status]=draft", "sk_reader");
      expect(bracket.status).toBe(403);
      expect(await error(bracket)).toMatchObject({ param: "status" });
      const expand = await get("/newsletters/nl_1/insights?%5Bexpand%5D=subscriber", "sk_reader");
      expect(expand.status).toBe(403);
      expect(await error(expand)).toMatchObject({ param: "expand" });

      let last: Response | undefined;
      for (let i = 0; i < 61; i++) {
        last = await get("/newsletters/nl_1/subscribers", "sk_sender");
        await last.arrayBuffer();
      }
      expect(last!.status).toBe(429);
      expect(Number(last!.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
      expect(last!.headers.get("ratelimit-remaining")).toBe("0");

      const send = () => fetch(`${base}/articles/a_1/send`, { method: "POST", headers: { authorization: "Bearer sk_sender", "content-type": "application/json" }, body: "{}" });
      for (let i = 1; i <= 25; i++) {
        const sent = await send();
        expect(sent.status, `send ${i}`).toBe(200);
        await sent.arrayBuffer();
      }
      const capped = await send();
      expect(capped.status).toBe(429);
      expect(String((await error(capped)).message)).toMatch(/daily/i);
      expect(Number(capped.headers.get("retry-after"))).toBeLessThanOrEqual(24);

      const stranger = await get("/newsletters/nl_1/articles", "sk_nobody");
      expect(stranger.status).toBe(401);
    });
  }
});
