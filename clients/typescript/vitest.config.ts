import { fileURLToPath } from "node:url";

import { defineConfig } from "vitest/config";

const source = (path: string) => fileURLToPath(new URL(path, import.meta.url));

export default defineConfig({
  // The examples import the package by its name, as a user's code does.
  resolve: {
    alias: {
      "memreader-client/ai": source("./src/ai.ts"),
      "memreader-client": source("./src/index.ts"),
    },
  },
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
