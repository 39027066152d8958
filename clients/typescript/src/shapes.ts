/**
 * What the service takes and answers.
 *
 * The request bodies and query parameters are the generated types (src/generated/openapi.ts,
 * from the service's OpenAPI document: a new filter of the service appears here by
 * `npm run generate`). The answers are written by hand: the service's routes answer JSON it
 * encodes itself (memreader/stores/shapes.py, memreader/stores/context/packing.py), which its
 * OpenAPI document does not describe. test/answers.test.ts holds these to a real service: each
 * answer's keys are exactly the ones named here.
 */

import type { components, operations } from "./generated/openapi.js";

type Schemas = components["schemas"];

/** One message of a chat: `role` and `content`, with `chat_time` and any other field a
 * memreader message takes (`name`, `message_id`, ...). */
export interface ChatMessage {
  role: string;
  content: string | Record<string, unknown>[];
  chat_time?: string;
  message_id?: string;
  name?: string;
  [field: string]: unknown;
}

/** `add`'s options: the body of `POST /v1/read` but the scenes and `store`. `user_id`,
 * `session_id`, `agent_id` and `task_id` go into the read's `info`. */
export interface AddParams extends Omit<
  Schemas["ReadRequest"],
  "scenes" | "info" | "store" | "type" | "include_embeddings"
> {
  user_id?: string;
  session_id?: string;
  agent_id?: string;
  task_id?: string;
  /** Other keys kept on each item (`info` of `get_memory`). */
  info?: Record<string, unknown>;
}

/** `addMemory`'s options: `POST /v1/memories` but the text. */
export type AddMemoryParams = Omit<Schemas["AddMemoryRequest"], "text">;
/** `search`'s options: `POST /v1/memories/search` but the query (`user_id`: the client's). */
export type SearchParams = Omit<Schemas["SearchRequest"], "query" | "user_id"> & {
  user_id?: string;
};
/** `context`'s options: `POST /v1/context` but the query (`user_id`: the client's). */
export type ContextParams = Omit<Schemas["ContextRequest"], "query" | "user_id"> & {
  user_id?: string;
};
/** `recall`'s options: `POST /v1/recall` but the query (`user_id`: the client's). */
export type RecallParams = Omit<Schemas["RecallRequest"], "query" | "user_id"> & {
  user_id?: string;
};
/** `update`'s options: `PATCH /v1/memories/{id}` but the text. */
export type UpdateParams = Omit<Schemas["UpdateMemoryRequest"], "text">;
/** `list`'s options: the query of `GET /v1/memories`. */
export type ListParams = NonNullable<operations["list_memories_v1_memories_get"]["parameters"]["query"]>;
/** The one source `forget` forgets: exactly one of these. */
export type ForgetSource =
  { session_id: string } | { message_id: string } | { doc_path: string } | { input_key: string };
/** `forget`'s options (`erase`: erase what only that source supports, irreversibly). */
export type ForgetParams = Pick<Schemas["ForgetRequest"], "erase"> & { user_id?: string };

/** Where part of a memory came from: its conversation's message (or its document's chunk),
 * and the character `span` of the text it gave (`content.slice(...span)`). */
export interface Source {
  type: string;
  role: string | null;
  name: string | null;
  chat_time: string | null;
  timestamp: string | null;
  message_id: string | null;
  scene_index: number | null;
  message_index: number | null;
  part_index: number | null;
  span: [number, number] | null;
  content: string | null;
  doc_path: string | null;
  chunk_index: number | null;
  chunk_count: number | null;
  heading: string | null;
  transformed_by: string[];
  /** An inline image as sent to the vision model, kept for refinement. */
  image_data_url?: string | null;
  [field: string]: unknown;
}

/** A memory item (`TextualMemoryItem.to_dict()`, without its vector). */
export interface MemoryItem {
  id: string;
  memory: string;
  metadata: {
    user_id: string | null;
    session_id: string | null;
    memory_type: string;
    status: string;
    tags: string[];
    sources: Source[];
    [field: string]: unknown;
  };
}

/** A stored memory: its state in the store and its item (sources and all). */
export interface StoredMemory {
  id: string;
  memory: string;
  status: string;
  user_id: string | null;
  session_id: string | null;
  agent_id: string | null;
  task_id: string | null;
  visibility: string | null;
  memory_type: string;
  importance: number | null;
  importance_reason: string | null;
  valid_from: string | null;
  valid_to: string | null;
  recorded_at: string | null;
  retired_at: string | null;
  superseded_by: string | null;
  reinforced: number;
  content_hash: string;
  item: MemoryItem;
}

/** Why a hit ranked where it did. */
export interface ScoreParts {
  final: number;
  relevance: number;
  fused: number;
  similarity: number;
  text_rank: number;
  importance: number;
  decay: number;
  passage: number;
  heat: number;
}

/** A search hit: the memory, its score parts and the spans of its text that matched. */
export interface SearchHit {
  memory: StoredMemory;
  score: ScoreParts;
  passages: { start: number; end: number; score: number; source_index: number | null }[];
  /** Only when `rerank: true` was asked: how the LLM placed this hit. */
  rerank?: RerankPlace;
}

/** How an LLM rerank placed a hit: `rank` in the LLM's order (`null`: left out, so it follows
 * the ranked ones in the store's order), `store_rank` in the store's (its `score` is the
 * store's), and `fallback`: why the store's order stood for the whole call (`null`: it did not). */
export interface RerankPlace {
  rank: number | null;
  store_rank: number;
  fallback: string | null;
}

/** What a write or a forget did to one memory (`ADD`, `REINFORCE`, `NONE`, `UPDATE`,
 * `SUPERSEDE`, `EXPIRE`, ...). */
export interface WriteEvent {
  event: string;
  memory_id: string;
  item_id: string;
  reason: string;
  previous_id: string | null;
}

/** What an erasure removed, and from where. */
export interface EraseReceipt {
  user_id: string;
  target: string;
  erased: string[];
  erased_total: number;
  expired: string[];
  expired_total: number;
  reduced: string[];
  reduced_total: number;
  removed: Record<string, number>;
  rewritten: Record<string, number>;
  categories: string[];
  file_steps: unknown[];
  residue: unknown[];
  events: { event: string; memory_id: string; reason: string }[];
}

/** `add`'s answer: the items read (one list per scene), the read's report, the write events. */
export interface AddResult {
  items: MemoryItem[][];
  report: { mode: string; windows: Record<string, unknown>[]; [field: string]: unknown };
  events: WriteEvent[];
}

/** One change of a memory. */
export interface HistoryEntry {
  event: string;
  at: string | null;
  reason: string | null;
  old_memory: string | null;
  new_memory: string | null;
  source_ids: string[];
}

/** `history`'s answer: the memory as it is now, and its changes, oldest first. */
export interface MemoryHistory {
  id: string;
  status: string;
  memory: string;
  superseded_by: string | null;
  history: HistoryEntry[];
}

/** One memory's part of a context block. */
export interface ContextPart {
  memory_id: string;
  start: number;
  end: number;
  text: string;
  score: number;
  when: string;
  /** Where it came from, in words ("session s1, message 0"). */
  source: string;
  session_id: string | null;
  messages: number[];
  doc_path: string | null;
  heading: string | null;
  source_indexes: number[];
  cut: boolean;
  speaker: string | null;
}

/** `context`'s answer: the block for a prompt and its parts as data. */
export interface ContextBlock {
  text: string;
  tokens: number;
  max_tokens: number;
  tokenizer: string;
  searched: number;
  /** Nothing matched and `text` is the configured cold-start templates (no parts). */
  cold_start: boolean;
  parts: ContextPart[];
  /** Only when `rerank: true` was asked: whether the LLM's order packed the parts. */
  reranked?: boolean;
  /** Only when `rerank: true` was asked: why the search's order stood instead (`null`: it did not). */
  rerank_fallback?: string | null;
}

/** What one tier of a recall did: how many things it recalled, the sufficiency check's verdict
 * (`null`: not checked, or the check failed) and how it chose. */
export interface RecallTier {
  tier: "category" | "item" | "resource";
  recalled: number;
  sufficient: boolean | null;
  note: string;
}

/** `recall`'s answer (`POST /v1/recall`): the tiers run, in order, and what each recalled:
 * categories (their summaries), items (hits as `search` answers them), resources (the items'
 * sources, verbatim). */
export interface RecallResult {
  query: string;
  stopped_early: boolean;
  tiers: RecallTier[];
  categories: { name: string; description: string; summary: string }[];
  items: SearchHit[];
  resources: { memory_id: string; source_index: number; source: Partial<Source> }[];
}

/** A page of `list`: the newest first; `next_cursor` (`null`: the last page). */
export interface MemoryPage {
  memories: StoredMemory[];
  next_cursor: string | null;
}

/** `delete`'s answer: the event, and with `erase` the receipt. */
export interface DeleteResult {
  event: WriteEvent;
  receipt?: EraseReceipt;
}

/** `forget`'s answer. */
export interface ForgetResult {
  events: WriteEvent[];
  receipt: EraseReceipt;
}
