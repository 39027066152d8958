/**
 * The client: one method per verb of memreader's HTTP service, each a few lines over one
 * {@link Transport.send}.
 *
 * @example
 * ```ts
 * const memory = new MemreaderClient({ baseUrl: "http://127.0.0.1:8765", userId: "emily" });
 * await memory.add([{ role: "user", content: "I moved to Lisbon." }], { session_id: "s1" });
 * const [hit] = await memory.search("where does she live?");
 * console.log(hit?.memory.memory, hit?.memory.item.metadata.sources[0]); // the text, and where it came from
 * ```
 */

import { InvalidArgumentError } from "./errors.js";
import type {
  AddMemoryParams,
  AddParams,
  AddResult,
  ChatMessage,
  ContextBlock,
  ContextParams,
  DeleteResult,
  ForgetParams,
  ForgetResult,
  ForgetSource,
  ListParams,
  MemoryHistory,
  MemoryPage,
  RecallParams,
  RecallResult,
  SearchHit,
  SearchParams,
  StoredMemory,
  UpdateParams,
  WriteEvent,
} from "./shapes.js";
import { type CallOptions, Transport, segment } from "./transport.js";

/** The service's address when none is given (`memreader serve`'s default). */
export const DEFAULT_BASE_URL = "http://127.0.0.1:8765";
/** A call's deadline when none is given, in milliseconds. */
export const DEFAULT_TIMEOUT_MS = 30_000;

export interface ClientOptions {
  /** The service's address (`http://127.0.0.1:8765` by default); a path is kept. */
  baseUrl?: string;
  /** The API key, sent as `Authorization: Bearer KEY` (a service without keys needs none). */
  apiKey?: string;
  /** The user whose memories every call reads and writes unless a call names another (a key
   * of one user may leave it out of most calls; the service walls off the others: 403). */
  userId?: string;
  /** Each call's deadline in milliseconds (30 s by default); a call may pass its own. */
  timeoutMs?: number;
  /** The `fetch` to use (the global one by default). */
  fetch?: typeof fetch;
  /** Headers sent with every call (a proxy's, a tracing id). */
  headers?: Record<string, string>;
}

export class MemreaderClient {
  /** The user of calls that name none. */
  readonly userId: string | undefined;
  private readonly transport: Transport;

  constructor(options: ClientOptions = {}) {
    if (options.userId !== undefined) requireText(options.userId, "userId");
    this.userId = options.userId;
    this.transport = new Transport({
      baseUrl: options.baseUrl ?? DEFAULT_BASE_URL,
      apiKey: options.apiKey,
      timeoutMs: options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
      fetch: options.fetch ?? globalThis.fetch,
      headers: options.headers ?? {},
    });
  }

  /** Read a conversation (or one user message) into memories and store them, each with its
   * sources (`POST /v1/read`, fast mode unless `mode` says `fine`). */
  async add(messages: ChatMessage[] | string, params: AddParams = {}, call?: CallOptions): Promise<AddResult> {
    const { user_id, session_id, agent_id, task_id, info, ...read } = params;
    const scene = typeof messages === "string" ? [{ role: "user", content: messages }] : messages;
    if (!Array.isArray(scene) || scene.length === 0) {
      throw new InvalidArgumentError("messages", "give a non-empty list of messages, or one message's text");
    }
    const named = Object.entries({ session_id, agent_id, task_id }).filter(([, v]) => v !== undefined);
    const body = {
      ...read,
      scenes: [scene],
      type: "chat",
      info: { ...info, user_id: this.owner(user_id), ...Object.fromEntries(named) },
      store: true,
      include_embeddings: false,
    };
    const answer = await this.transport.send<AddResult>({ method: "POST", path: "/v1/read", body }, call);
    return { ...answer, events: answer.events ?? [] };
  }

  /** Store one memory as written: embedded, deduplicated, with history (`POST /v1/memories`). */
  async addMemory(text: string, params: AddMemoryParams = {}, call?: CallOptions): Promise<WriteEvent> {
    const body = { ...params, text, user_id: params.user_id ?? this.userId };
    const answer = await this.transport.send<{ event: WriteEvent }>(
      { method: "POST", path: "/v1/memories", body },
      call,
    );
    return answer.event;
  }

  /** The memories best matching `query`, best first, each with its score parts and the
   * passages that matched (`POST /v1/memories/search`). */
  async search(query: string, params: SearchParams = {}, call?: CallOptions): Promise<SearchHit[]> {
    const body = { ...params, query, user_id: this.owner(params.user_id) };
    const answer = await this.transport.send<{ hits: SearchHit[] }>(
      { method: "POST", path: "/v1/memories/search", body },
      call,
    );
    return answer.hits;
  }

  /** The best memory text for `query` within a token budget, one block for a prompt, and its
   * parts with their sources (`POST /v1/context`); the memories shown are recorded as used. */
  async context(query: string, params: ContextParams = {}, call?: CallOptions): Promise<ContextBlock> {
    const body = { ...params, query, user_id: this.owner(params.user_id) };
    return this.transport.send<ContextBlock>({ method: "POST", path: "/v1/context", body }, call);
  }

  /** Recall tier by tier (`POST /v1/recall`): the user's categories, then the items in them,
   * then the sources those items came from, stopping early when the service's LLM judges what
   * was recalled enough (without an LLM every tier runs and each says it was not checked). */
  async recall(query: string, params: RecallParams = {}, call?: CallOptions): Promise<RecallResult> {
    const body = { ...params, query, user_id: this.owner(params.user_id) };
    return this.transport.send<RecallResult>({ method: "POST", path: "/v1/recall", body }, call);
  }

  /** One memory, whatever its status, with its item and sources (its use is recorded);
   * {@link NotFoundError} when the user has none such. */
  async get(memoryId: string, params: ScopedParams = {}, call?: CallOptions): Promise<StoredMemory> {
    const path = `/v1/memories/${segment(memoryId, "memoryId")}`;
    return this.transport.send<StoredMemory>({ method: "GET", path, query: this.scoped(params) }, call);
  }

  /** A page of the user's memories without a query, the newest first (`GET /v1/memories`):
   * pass `next_cursor` as `cursor` for the next page. */
  async list(params: ListParams = {}, call?: CallOptions): Promise<MemoryPage> {
    const query = { ...params, user_id: params.user_id ?? this.userId };
    return this.transport.send<MemoryPage>({ method: "GET", path: "/v1/memories", query }, call);
  }

  /** Replace a memory's text with a new version (the old one is kept, `superseded`): the
   * event names the new id (`memory_id`) and the old (`previous_id`). */
  async update(memoryId: string, text: string, params: UpdateParams = {}, call?: CallOptions): Promise<WriteEvent> {
    const path = `/v1/memories/${segment(memoryId, "memoryId")}`;
    const body = { ...params, text, user_id: params.user_id ?? this.userId };
    const answer = await this.transport.send<{ event: WriteEvent }>({ method: "PATCH", path, body }, call);
    return answer.event;
  }

  /** Expire a memory now (its row and history stay), or with `erase: true` remove its text
   * from every place it lives, for good: the answer then holds the erase receipt. */
  async delete(
    memoryId: string,
    params: { user_id?: string; erase?: boolean } = {},
    call?: CallOptions,
  ): Promise<DeleteResult> {
    const path = `/v1/memories/${segment(memoryId, "memoryId")}`;
    const query = { user_id: params.user_id ?? this.userId, erase: params.erase };
    return this.transport.send<DeleteResult>({ method: "DELETE", path, query }, call);
  }

  /** Every change of one memory, oldest first (not a use). */
  async history(memoryId: string, params: ScopedParams = {}, call?: CallOptions): Promise<MemoryHistory> {
    const path = `/v1/memories/${segment(memoryId, "memoryId")}/history`;
    return this.transport.send<MemoryHistory>({ method: "GET", path, query: this.scoped(params) }, call);
  }

  /** Forget what one source said (a session, a message, a document, an input): memories it
   * alone supported expire (with `erase`: are erased), the others lose its sources. */
  async forget(source: ForgetSource, params: ForgetParams = {}, call?: CallOptions): Promise<ForgetResult> {
    const named = Object.entries(source ?? {}).filter(([, value]) => value !== undefined);
    if (named.length !== 1) {
      throw new InvalidArgumentError("source", "name exactly one of session_id, message_id, doc_path or input_key");
    }
    const body = { ...Object.fromEntries(named), erase: params.erase ?? false, user_id: this.owner(params.user_id) };
    return this.transport.send<ForgetResult>({ method: "POST", path: "/v1/memories:forget", body }, call);
  }

  /** The user of a call that must name one: `user_id`, else the client's. */
  private owner(userId: string | undefined): string {
    const owner = userId ?? this.userId;
    if (owner === undefined) {
      throw new InvalidArgumentError("user_id", "no user: pass user_id, or create the client with userId");
    }
    return owner;
  }

  private scoped(params: ScopedParams): Record<string, unknown> {
    return { ...params, user_id: params.user_id ?? this.userId };
  }
}

/** A one-memory call's user and scope (`agent_id`, `task_id`: what a key limited to tasks sees). */
export interface ScopedParams {
  user_id?: string;
  agent_id?: string;
  task_id?: string;
}

function requireText(value: unknown, argument: string): void {
  if (typeof value !== "string" || value.length === 0) {
    throw new InvalidArgumentError(argument, `must be a non-empty string, not ${JSON.stringify(value)}`);
  }
}
