// The examples (shown in README.md and docs/integrations/typescript.md) run as written against
// the real service.
import { randomUUID } from "node:crypto";

import { MockLanguageModelV4 } from "ai/test";
import { afterEach, expect, inject, it, vi } from "vitest";

import { MemreaderClient } from "../src/index.js";

const { baseUrl, keys } = inject("memreader");

afterEach(() => {
  vi.unstubAllEnvs();
  vi.restoreAllMocks();
});

it("quickstart.ts stores a chat and finds it with its source", async () => {
  vi.stubEnv("MEMREADER_URL", baseUrl);
  vi.stubEnv("MEMREADER_KEY", keys.admin);
  const printed: unknown[][] = [];
  vi.spyOn(console, "log").mockImplementation((...args: unknown[]) => void printed.push(args));
  await import("../examples/quickstart.js");
  const [memory, source] = printed[0] ?? [];
  expect(memory).toContain("Lisbon");
  expect(source).toMatchObject({
    role: "user",
    message_index: 0,
    content: "I moved to Lisbon and started piano lessons.",
  });
});

it("ai_tools.ts lets a model remember, then recall in a later chat", async () => {
  vi.stubEnv("MEMREADER_URL", baseUrl);
  vi.stubEnv("MEMREADER_KEY", keys.admin);
  const { reply } = await import("../examples/ai_tools.js");
  const usage = {
    inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined },
    outputTokens: { total: 1, text: 1, reasoning: undefined },
  };
  const call = (toolName: string, input: object) => ({
    content: [{ type: "tool-call" as const, toolCallId: randomUUID(), toolName, input: JSON.stringify(input) }],
    finishReason: { unified: "tool-calls" as const, raw: undefined },
    usage,
    warnings: [],
  });
  const say = (text: string) => ({
    content: [{ type: "text" as const, text }],
    finishReason: { unified: "stop" as const, raw: undefined },
    usage,
    warnings: [],
  });
  const userId = `user-${randomUUID()}`;
  const first = new MockLanguageModelV4({
    doGenerate: [call("remember", { message: "My cat is called Miso." }), say("Noted!")],
  });
  expect(await reply(first, userId, "chat-1", "My cat is called Miso.")).toBe("Noted!");
  const second = new MockLanguageModelV4({ doGenerate: [call("recall", { query: "cat name" }), say("Miso.")] });
  expect(await reply(second, userId, "chat-2", "What is my cat called?")).toBe("Miso.");
  expect(JSON.stringify(second.doGenerateCalls[1]?.prompt)).toContain("Miso");

  const client = new MemreaderClient({ baseUrl, apiKey: keys.admin, userId });
  const [hit] = await client.search("cat");
  expect(hit?.memory.session_id).toBe("chat-1");
});

it("the package's README shows quickstart.ts as it is", async () => {
  const { readFile } = await import("node:fs/promises");
  const readme = await readFile(new URL("../README.md", import.meta.url), "utf8");
  const example = await readFile(new URL("../examples/quickstart.ts", import.meta.url), "utf8");
  const firstBlock = readme.split("```ts\n")[1]?.split("```")[0];
  expect(firstBlock).toBe(example);
});
