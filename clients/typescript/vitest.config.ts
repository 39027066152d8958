import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    // One real `memreader serve` for the whole run (test/server.ts), torn down after it.
    globalSetup: ["test/server.ts"],
    include: ["test/**/*.test.ts"],
    // The files share that server and its keys' slots: one file at a time keeps the keys'
    // concurrency limit (4 requests in flight) out of the results.
    fileParallelism: false,
    testTimeout: 30_000,
    hookTimeout: 120_000,
  },
});
