/**
 * One server process of the cluster concurrency test: its own ioredis Cluster and node-redis cluster
 * connections, a RedisStore { cluster: true } and a policy on each, firing NP_TOTAL requests of
 * NP_MODE ("budget": one credential's general budget, limit 50; "cap": sends to one newsletter from
 * 40 credentials, dispatch cap 25) with 16 in flight per connection. Prints one JSON line: how many
 * decisions per reason rule.
 */
import { Cluster } from "ioredis";
import { createCluster } from "redis";
import { createPolicy, type Credential, type Decision, type Policy, type PolicyOptions } from "../../../src/index.js";
import { RedisStore } from "../../../src/redis/index.js";

const prefix = process.env.NP_PREFIX!;
const mode = process.env.NP_MODE!;
const total = Number(process.env.NP_TOTAL);
const io = new Cluster([{ host: "127.0.0.1", port: 7001 }], { redisOptions: { maxRetriesPerRequest: 1 } });
const nr = createCluster({ rootNodes: [{ url: "redis://127.0.0.1:7001" }] });
await nr.connect();
const config: PolicyOptions =
  mode === "budget"
    ? { budgets: { general: { limit: 50, window: 3_600 } } }
    : { caps: { dispatch: { limit: 25 } }, budgets: { general: { limit: 100_000, window: 3_600 }, write: { limit: 100_000, window: 3_600 } } };
// a generous give-up (5 s a try): the test counts admissions across processes, and on a loaded
// 2-core machine a few sends of 3 000 waited past the default 1 s and were 503s (4 of 3 000 once)
const policies: Policy[] = [
  createPolicy({ store: new RedisStore({ redis: (c, a) => io.call(c, a), prefix, cluster: true, timeoutMs: 5_000 }), config }),
  createPolicy({ store: new RedisStore({ redis: (c, a) => nr.sendCommand(a[2], false, [c, ...a]), prefix, cluster: true, timeoutMs: 5_000 }), config }),
];
const budgetCredential: Credential = { id: "key_budget", kind: "api_key", newsletters: {}, account: true };
const senders: Credential[] = Array.from({ length: 40 }, (_, i) => ({ id: `key_send_${i}`, kind: "api_key", newsletters: { nl_0: { sending: "write" } } }));
const by: Record<string, number> = {};
let next = 0;
const worker = async (policy: Policy) => {
  for (let i = next++; i < total; i = next++) {
    const d: Decision =
      mode === "budget"
        ? await policy.check({ method: "GET", path: "/me" }, { credential: budgetCredential, roles: {} })
        : await policy.check({ method: "POST", path: `/articles/a_${process.pid}_${i}/send`, newsletter: "nl_0" }, { credential: senders[i % 40]!, roles: { nl_0: "owner" } });
    by[d.reason.rule] = (by[d.reason.rule] ?? 0) + 1;
  }
};
await Promise.all(policies.flatMap((p) => Array.from({ length: 16 }, () => worker(p))));
console.log(JSON.stringify(by));
io.disconnect();
nr.destroy();
