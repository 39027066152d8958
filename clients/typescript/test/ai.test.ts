// The AI SDK tools against a real `memreader serve`: executed directly, and called by a model
// inside `generateText` (the AI SDK's own mock model: no network).
import { randomUUID } from "node:crypto";

import { generateText, isStepCount } from "ai";
import { MockLanguageModelV4 } from "ai/test";
import { describe, expect, inject, it } from "vitest";

import { memreaderTools } from "../src/ai.js";
import { InvalidArgumentError, MemreaderClient, PermissionDeniedError } from "../src/index.js";

const { baseUrl, keys } = inject("memreader");
const OPTIONS = { toolCallId: "call-1", messages: [], context: undefined };

/** A tool's `execute`, awaited (the SDK types it as optional and possibly streaming). */
async function run<I>(tool: { execute?: (input: I, options: never) => unknown }, input: I): Promise<any> {
  if (!tool.execute) throw new Error("the tool has no execute");
  return await (tool.execute(input, OPTIONS as never) as Promise<unknown>);
}

function boundTools(sessionId = "chat-1") {
  const userId = `user-${randomUUID()}`;
  const client = new MemreaderClient({ baseUrl, apiKey: keys.admin });
  return { userId, client, tools: memreaderTools(client, { userId, sessionId }) };
}

describe("memreaderTools executed directly", () => {
  it("remembers a message and recalls it with the session and message it came from", async () => {
    const { tools, client, userId } = boundTools("chat-7");
    const remembered = await run(tools.remember, { message: "My daughter Mia starts school in Porto in May." });
    expect(remembered.counts).toEqual({ ADD: 1 });
    expect(remembered.changes[0].memory).toContain("Mia");

    const recalled = await run(tools.recall, { query: "Mia school" });
    const [first] = recalled.memories;
    expect(first.memory).toContain("Mia starts school");
    expect(first.session_id).toBe("chat-7");
    expect(first.sources[0]).toMatchObject({ type: "chat", role: "user", message_index: 0 });
    expect(first.sources[0].quote).toContain("Mia");
    expect(first.score).toBeGreaterThan(0);
    expect(first).not.toHaveProperty("content_hash"); // no store internals for the model
    // Stored for the bound user only.
    expect((await client.search("Mia", { user_id: userId })).length).toBe(1);
  });

  it("remembers a fact as written and answers a context block", async () => {
    const { tools } = boundTools();
    const remembered = await run(tools.remember, { fact: "The user is allergic to peanuts." });
    expect(remembered.changes[0]).toMatchObject({ event: "ADD", memory: "The user is allergic to peanuts." });
    const block = await run(tools.context, { query: "allergies", max_tokens: 300 });
    expect(block.text).toContain("peanuts");
    expect(block.parts[0].session_id).toBe("chat-1");
    expect(block.tokens).toBeLessThanOrEqual(300);
  });

  it("refuses a remember with neither or both inputs", async () => {
    const { tools } = boundTools();
    await expect(run(tools.remember, {})).rejects.toBeInstanceOf(InvalidArgumentError);
    await expect(run(tools.remember, { fact: "a", message: "b" })).rejects.toBeInstanceOf(InvalidArgumentError);
  });

  it("takes no user from the model: the bound user's memories only", async () => {
    const { tools, client } = boundTools();
    const other = `user-${randomUUID()}`;
    await client.addMemory("The vault code is 0000.", { user_id: other });
    // A model's stray `user_id` is not an argument of the tool: it is dropped by the schema.
    const schema = tools.recall.inputSchema as unknown as { shape: Record<string, unknown> };
    expect(Object.keys(schema.shape).sort()).toEqual(["k", "query"]);
    const recalled = await run(tools.recall, { query: "vault code", user_id: other } as never);
    expect(recalled.memories).toEqual([]);
  });

  it("fails with the service's typed error when the key may not use the bound user", async () => {
    const client = new MemreaderClient({ baseUrl, apiKey: keys.alice });
    const tools = memreaderTools(client, { userId: "bob" });
    await expect(run(tools.recall, { query: "anything" })).rejects.toBeInstanceOf(PermissionDeniedError);
  });

  it("must be bound to a user", () => {
    const client = new MemreaderClient({ baseUrl, apiKey: keys.admin });
    expect(() => memreaderTools(client, { userId: "" })).toThrow(InvalidArgumentError);
    expect(() => memreaderTools(client, { userId: "a", k: 0 })).toThrow(InvalidArgumentError);
  });
});

describe("memreaderTools in generateText", () => {
  it("runs the recall a model calls and hands the model its result", async () => {
    const { tools, client, userId } = boundTools("chat-3");
    await client.add("I moved to Lisbon last spring.", { user_id: userId, session_id: "chat-3" });
    const usage = {
      inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined },
      outputTokens: { total: 1, text: 1, reasoning: undefined },
    };
    const model = new MockLanguageModelV4({
      doGenerate: [
        {
          content: [
            { type: "tool-call", toolCallId: "c1", toolName: "recall", input: JSON.stringify({ query: "Lisbon" }) },
          ],
          finishReason: { unified: "tool-calls", raw: undefined },
          usage,
          warnings: [],
        },
        {
          content: [{ type: "text", text: "You live in Lisbon." }],
          finishReason: { unified: "stop", raw: undefined },
          usage,
          warnings: [],
        },
      ],
    });
    const result = await generateText({ model, tools, prompt: "Where do I live?", stopWhen: isStepCount(2) });
    expect(result.text).toBe("You live in Lisbon.");
    const toolResult = result.steps[0]?.toolResults[0];
    expect(toolResult?.toolName).toBe("recall");
    const output = toolResult?.output as { memories: { memory: string; session_id: string }[] };
    expect(output.memories[0]?.memory).toContain("Lisbon");
    expect(output.memories[0]?.session_id).toBe("chat-3");
    // The model's second turn was given the tool's result.
    const secondPrompt = JSON.stringify(model.doGenerateCalls[1]?.prompt);
    expect(secondPrompt).toContain("Lisbon");
  });
});
