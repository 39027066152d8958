// The answer types of src/shapes.ts are written by hand (the service's OpenAPI document does
// not describe its answers): each is held here to a real answer, key for key, so a field the
// service adds or drops fails here rather than surprising a user.
import { randomUUID } from "node:crypto";

import { expect, inject, it } from "vitest";

import {
  type ContextBlock,
  type ContextPart,
  type EraseReceipt,
  type HistoryEntry,
  MemreaderClient,
  type MemoryHistory,
  type MemoryPage,
  type RecallResult,
  type RecallTier,
  type ScoreParts,
  type SearchHit,
  type StoredMemory,
  type WriteEvent,
} from "../src/index.js";

const { baseUrl, keys } = inject("memreader");

/** Every key of `T`, each once: a key missing or extra is a type error. */
type Keys<T> = { [K in keyof T]-?: true };
const keysOf = <T>(keys: Keys<T>): string[] => Object.keys(keys).sort();

const STORED = keysOf<StoredMemory>({
  id: true,
  memory: true,
  status: true,
  user_id: true,
  session_id: true,
  agent_id: true,
  task_id: true,
  visibility: true,
  memory_type: true,
  importance: true,
  importance_reason: true,
  valid_from: true,
  valid_to: true,
  recorded_at: true,
  retired_at: true,
  superseded_by: true,
  reinforced: true,
  content_hash: true,
  item: true,
});
const SCORE = keysOf<ScoreParts>({
  final: true,
  relevance: true,
  fused: true,
  similarity: true,
  text_rank: true,
  importance: true,
  decay: true,
  passage: true,
  heat: true,
});
// `rerank` only when a rerank was asked (not here).
const HIT = keysOf<Omit<SearchHit, "rerank">>({ memory: true, score: true, passages: true });
const RECALL = keysOf<RecallResult>({
  query: true,
  stopped_early: true,
  tiers: true,
  categories: true,
  items: true,
  resources: true,
});
const TIER = keysOf<RecallTier>({ tier: true, recalled: true, sufficient: true, note: true });
const EVENT = keysOf<WriteEvent>({ event: true, memory_id: true, item_id: true, reason: true, previous_id: true });
const HISTORY = keysOf<MemoryHistory>({ id: true, status: true, memory: true, superseded_by: true, history: true });
const ENTRY = keysOf<HistoryEntry>({
  event: true,
  at: true,
  reason: true,
  old_memory: true,
  new_memory: true,
  source_ids: true,
});
const BLOCK = keysOf<Omit<ContextBlock, "reranked" | "rerank_fallback">>({
  text: true,
  tokens: true,
  max_tokens: true,
  tokenizer: true,
  searched: true,
  cold_start: true,
  parts: true,
});
const PART = keysOf<ContextPart>({
  memory_id: true,
  start: true,
  end: true,
  text: true,
  score: true,
  when: true,
  source: true,
  session_id: true,
  messages: true,
  doc_path: true,
  heading: true,
  source_indexes: true,
  cut: true,
  speaker: true,
});
const PAGE = keysOf<MemoryPage>({ memories: true, next_cursor: true });
const RECEIPT = keysOf<EraseReceipt>({
  user_id: true,
  target: true,
  erased: true,
  erased_total: true,
  expired: true,
  expired_total: true,
  reduced: true,
  reduced_total: true,
  removed: true,
  rewritten: true,
  categories: true,
  file_steps: true,
  residue: true,
  events: true,
});

const sorted = (value: unknown) => Object.keys(value as object).sort();

it("every answer has exactly the keys its type names", async () => {
  const client = new MemreaderClient({ baseUrl, apiKey: keys.admin, userId: `user-${randomUUID()}` });
  const added = await client.add([{ role: "user", content: "I play the cello on Sundays." }], { session_id: "s1" });
  expect(sorted(added.events[0])).toEqual(EVENT);

  const [hit] = await client.search("cello");
  expect(sorted(hit)).toEqual(HIT);
  expect(sorted(hit?.memory)).toEqual(STORED);
  expect(sorted(hit?.score)).toEqual(SCORE);

  const id = hit?.memory.id ?? "";
  expect(sorted(await client.get(id))).toEqual(STORED);
  const updated = await client.update(id, "I play the viola on Sundays.");
  expect(sorted(updated)).toEqual(EVENT);
  const history = await client.history(id);
  expect(sorted(history)).toEqual(HISTORY);
  expect(sorted(history.history[0])).toEqual(ENTRY);

  const block = await client.context("music");
  expect(sorted(block)).toEqual(BLOCK);
  expect(sorted(block.parts[0])).toEqual(PART);

  expect(sorted(await client.list())).toEqual(PAGE);
  const recalled = await client.recall("cello", { tiers: ["item", "resource"] });
  expect(sorted(recalled)).toEqual(RECALL);
  expect(recalled.tiers.map((t) => t.tier)).toEqual(["item", "resource"]);
  expect(sorted(recalled.tiers[0])).toEqual(TIER);
  expect(sorted(recalled.items[0])).toEqual(HIT);
  expect(sorted(recalled.resources[0])).toEqual(["memory_id", "source", "source_index"]);
  const erased = await client.delete(updated.memory_id, { erase: true });
  expect(sorted(erased)).toEqual(["event", "receipt"]);
  expect(sorted(erased.receipt)).toEqual(RECEIPT);
  const forgotten = await client.forget({ session_id: "s1" });
  expect(sorted(forgotten)).toEqual(["events", "receipt"]);
  expect(sorted(forgotten.receipt)).toEqual(RECEIPT);
});
