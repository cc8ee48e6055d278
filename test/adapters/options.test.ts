/** Host mistakes in an adapter's options throw PolicyConfigError naming the option, when the adapter is made. */
import Fastify from "fastify";
import { describe, expect, it } from "vitest";
import { newsletterPolicy as expressPolicy } from "../../src/adapters/express.js";
import { newsletterPolicy as fastifyPolicy } from "../../src/adapters/fastify.js";
import { newsletterPolicy as honoPolicy } from "../../src/adapters/hono.js";
import { newsletterPolicy as nodePolicy } from "../../src/adapters/node.js";
import { createPolicy, PolicyConfigError } from "../../src/index.js";

const policy = createPolicy();
const who = () => ({ credential: { id: "k", kind: "api_key" as const, newsletters: {} }, roles: {} });
const mistakes: [string, unknown][] = [
  ["options", undefined],
  ["policy", { who }],
  ["policy", { policy: {}, who }],
  ["who", { policy }],
  ["who", { policy, who: "key_1" }],
  ["newsletter", { policy, who, newsletter: "nl_1" }],
  ["onDecision", { policy, who, onDecision: true }],
  ["onHookError", { policy, who, onHookError: "log" }],
  ["onReplay", { policy, who, onReplay: {} }],
];

function field(make: () => unknown): string | undefined {
  try {
    make();
  } catch (error) {
    if (error instanceof PolicyConfigError) return error.field;
    throw error;
  }
  return undefined;
}

describe("adapter options are checked when the adapter is made", () => {
  for (const [name, make] of [
    ["node:http", nodePolicy],
    ["Express", expressPolicy],
    ["Hono", honoPolicy],
  ] as const) {
    it(`${name}: each mistake throws PolicyConfigError naming the option`, () => {
      for (const [expected, options] of mistakes) expect(field(() => make(options as never)), expected).toBe(expected);
      expect(field(() => make({ policy, who }))).toBeUndefined();
    });
  }

  it("Fastify: registration rejects with PolicyConfigError naming the option", async () => {
    for (const [expected, options] of mistakes.slice(1)) {
      const app = Fastify();
      await expect(app.register(fastifyPolicy, options as never), expected).rejects.toMatchObject({ name: "PolicyConfigError", field: expected });
      await app.close().catch(() => undefined);
    }
  });
});
