/**
 * memreader-client: a typed client for memreader's HTTP service (`memreader serve`).
 * The Vercel AI SDK tools are in `memreader-client/ai`.
 */

export { DEFAULT_BASE_URL, DEFAULT_TIMEOUT_MS, MemreaderClient } from "./client.js";
export type { ClientOptions, ScopedParams } from "./client.js";
export * from "./errors.js";
export type * from "./shapes.js";
export type { CallOptions } from "./transport.js";
export type { components, operations, paths } from "./generated/openapi.js";
