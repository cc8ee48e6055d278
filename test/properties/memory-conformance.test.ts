import { MemoryStore } from "../../src/index.js";
import { describeStoreConformance } from "../../src/testing/index.js";
import { SEED, runs } from "./settings.js";

// The reference runs the kit against itself: the scripted cases pin MemoryStore's literal behaviour,
// and the differential properties check that the kit's comparison machinery is sound.
describeStoreConformance("MemoryStore", () => new MemoryStore(), { seed: SEED, numRuns: runs(0.5) });

// A sweeping MemoryStore (forgets expired entries after every charge) must behave exactly the same.
describeStoreConformance("MemoryStore (forgetting one due entry per call)", () => new MemoryStore({ expirePerCall: 1 }), { seed: SEED, numRuns: runs(0.5) });
