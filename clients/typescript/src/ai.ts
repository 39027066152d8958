/**
 * Vercel AI SDK tools over a {@link MemreaderClient}: `remember`, `recall` and `context`, bound
 * to one user (and, when given, one session, agent and task). The model chooses what to
 * remember and what to look for, never whose memories: no tool takes a user, a session or a
 * scope, so nothing a model writes can reach another user's memories.
 *
 * What a tool answers is the MCP server's shape (memreader/mcp/shapes.py): each memory with
 * its text, id, status, times and where it came from (session, message, speaker, time, span
 * and the quoted text), without vectors or store internals.
 *
 * @example
 * ```ts
 * import { generateText } from "ai";
 * import { MemreaderClient } from "memreader-client";
 * import { memreaderTools } from "memreader-client/ai";
 *
 * const client = new MemreaderClient({ apiKey: process.env.MEMREADER_KEY });
 * const tools = memreaderTools(client, { userId: "emily", sessionId: "chat-42" });
 * await generateText({ model, tools, prompt: "Where do I live?" });
 * ```
 */

import { tool } from "ai";
import { z } from "zod";

import type { MemreaderClient } from "./client.js";
import { InvalidArgumentError } from "./errors.js";
import type { SearchHit, Source, StoredMemory, WriteEvent } from "./shapes.js";

/** A memory's text in a tool's answer, in characters (the MCP server's bound). */
export const MAX_MEMORY_CHARS = 4_000;
/** A source's quoted text in a tool's answer, in characters. */
export const MAX_QUOTE_CHARS = 500;
/** The sources shown per memory (`sources_total` counts them all). */
export const MAX_SOURCES = 5;
/** The most memories one recall answers. */
export const MAX_K = 50;

/** Whose memories the tools read and write: fixed when they are made, never a tool's argument. */
export interface ToolBinding {
  userId: string;
  /** The conversation what `remember` stores came from (its provenance). */
  sessionId?: string;
  agentId?: string;
  taskId?: string;
  /** How many memories `recall` answers when the model does not say (5). */
  k?: number;
}

/** Where part of a memory came from, for a model (fields without a value left out). */
export function sourceForModel(source: Source): Record<string, unknown> {
  const shown: Record<string, unknown> = {
    type: source.type,
    role: source.role,
    name: source.name,
    chat_time: source.chat_time,
    message_id: source.message_id,
    scene_index: source.scene_index,
    message_index: source.message_index,
    part_index: source.part_index,
    span: source.span,
    doc_path: source.doc_path,
    heading: source.heading,
    quote: source.content ? clipped(source.content, MAX_QUOTE_CHARS) : null,
  };
  return withoutNulls(shown);
}

/** A stored memory, for a model: its text, status, times and first sources. */
export function memoryForModel(memory: StoredMemory): Record<string, unknown> {
  const sources = memory.item.metadata.sources ?? [];
  return withoutNulls({
    id: memory.id,
    memory: clipped(memory.memory, MAX_MEMORY_CHARS),
    status: memory.status,
    memory_type: memory.memory_type,
    session_id: memory.session_id,
    agent_id: memory.agent_id,
    task_id: memory.task_id,
    visibility: memory.visibility,
    valid_from: memory.valid_from,
    recorded_at: memory.recorded_at,
    superseded_by: memory.superseded_by,
    importance: memory.importance,
    sources: sources.slice(0, MAX_SOURCES).map(sourceForModel),
    sources_total: sources.length,
  });
}

/** A recall hit, for a model: the memory and its score (`final`, 0..1, and its parts). */
export function hitForModel(hit: SearchHit): Record<string, unknown> {
  return {
    ...memoryForModel(hit.memory),
    score: Math.round(hit.score.final * 10_000) / 10_000,
    score_parts: {
      similarity: hit.score.similarity,
      text_rank: hit.score.text_rank,
      importance: hit.score.importance,
      decay: hit.score.decay,
    },
  };
}

function eventForModel(event: WriteEvent, memory?: string): Record<string, unknown> {
  return withoutNulls({
    event: event.event,
    memory_id: event.memory_id,
    previous_id: event.previous_id,
    reason: event.reason || null,
    memory: memory ? clipped(memory, MAX_MEMORY_CHARS) : null,
  });
}

const rememberInput = z.object({
  fact: z.string().min(1).max(10_000).optional().describe("A fact to keep as written."),
  message: z
    .string()
    .min(1)
    .max(100_000)
    .optional()
    .describe("A message of the user's, read into memories that cite it."),
});

const recallInput = z.object({
  query: z.string().min(1).max(2_000).describe("What to look for."),
  k: z.number().int().min(1).max(MAX_K).optional().describe("How many memories (default 5)."),
});

const contextInput = z.object({
  query: z.string().min(1).max(2_000).describe("What the answer is about."),
  max_tokens: z.number().int().min(100).max(32_000).optional().describe("The block's budget (default 1000)."),
});

export type RememberInput = z.infer<typeof rememberInput>;
export type RecallInput = z.infer<typeof recallInput>;
export type ContextInput = z.infer<typeof contextInput>;

/** The three tools, for `generateText({ tools })` or `streamText`. */
export type MemreaderTools = ReturnType<typeof memreaderTools>;

/** `remember`, `recall` and `context` over `client`, bound to `binding.userId`. A tool's
 * failure is thrown as the client's typed error (the AI SDK reports it to the model as that
 * tool call's error); the call's `abortSignal` cancels its request. */
export function memreaderTools(client: MemreaderClient, binding: ToolBinding) {
  if (typeof binding?.userId !== "string" || binding.userId.length === 0) {
    throw new InvalidArgumentError("userId", "the tools must be bound to a user: a non-empty string");
  }
  const k = binding.k ?? 5;
  if (!Number.isInteger(k) || k < 1 || k > MAX_K) {
    throw new InvalidArgumentError("k", `must be an integer from 1 to ${MAX_K}, not ${k}`);
  }
  const scope = {
    user_id: binding.userId,
    ...(binding.agentId !== undefined && { agent_id: binding.agentId }),
    ...(binding.taskId !== undefined && { task_id: binding.taskId }),
  };
  const session = binding.sessionId !== undefined ? { session_id: binding.sessionId } : {};

  const remember = tool({
    description:
      "Remember something about the user for later conversations: a `fact` kept as written, " +
      "or a `message` of theirs read into memories that cite it. Give exactly one.",
    inputSchema: rememberInput,
    execute: async ({ fact, message }, { abortSignal }) => {
      if ((fact === undefined) === (message === undefined)) {
        throw new InvalidArgumentError("remember", "give exactly one of fact or message");
      }
      const call = { signal: abortSignal };
      if (fact !== undefined) {
        const event = await client.addMemory(fact, { ...scope, ...session }, call);
        return { counts: { [event.event]: 1 }, changes: [eventForModel(event, fact)] };
      }
      const added = await client.add(message ?? "", { ...scope, ...session }, call);
      const texts = new Map(added.items.flat().map((item) => [item.id, item.memory]));
      const counts: Record<string, number> = {};
      for (const event of added.events) counts[event.event] = (counts[event.event] ?? 0) + 1;
      return { counts, changes: added.events.map((event) => eventForModel(event, texts.get(event.item_id))) };
    },
  });

  const recall = tool({
    description:
      "Recall what is remembered about the user: the memories best matching `query`, best " +
      "first, each with where it came from (session, message, speaker, time, quote).",
    inputSchema: recallInput,
    execute: async ({ query, k: asked }, { abortSignal }) => {
      const hits = await client.search(query, { ...scope, k: asked ?? k }, { signal: abortSignal });
      return { memories: hits.map(hitForModel) };
    },
  });

  const context = tool({
    description:
      "The remembered text most relevant to `query`, as one block within a token budget, " +
      "ready to answer from; each part says which session and message it came from.",
    inputSchema: contextInput,
    execute: async ({ query, max_tokens }, { abortSignal }) => {
      const params = { ...scope, ...(max_tokens !== undefined && { max_tokens }) };
      const block = await client.context(query, params, { signal: abortSignal });
      return { text: block.text, tokens: block.tokens, tokenizer: block.tokenizer, parts: block.parts };
    },
  });

  return { remember, recall, context };
}

function clipped(text: string, limit: number): string {
  return text.length <= limit ? text : `${text.slice(0, limit - 1)}…`;
}

function withoutNulls(shown: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(shown).filter(([, value]) => value !== null && value !== undefined));
}
