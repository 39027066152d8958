/**
 * One path for every call: the URL, the key, the deadline, the answer read as JSON or thrown
 * as a typed error. Each verb of the client is a few lines over {@link Transport.send}.
 */

import {
  InvalidArgumentError,
  InvalidResponseError,
  MemreaderAbortError,
  MemreaderConnectionError,
  MemreaderTimeoutError,
  errorForAnswer,
} from "./errors.js";

/** Options of one call. */
export interface CallOptions {
  /** This call's deadline in milliseconds (the client's `timeoutMs` when left out): past it the
   * request is cancelled and {@link MemreaderTimeoutError} thrown. */
  timeoutMs?: number;
  /** Stops the call when aborted ({@link MemreaderAbortError}). */
  signal?: AbortSignal;
  /** Sent as `Idempotency-Key` on writes: a retry with the same key is answered as the first
   * was, never done twice. */
  idempotencyKey?: string;
}

/** A request, as a verb describes it. */
export interface Request {
  method: "GET" | "POST" | "PATCH" | "DELETE";
  path: string;
  query?: Record<string, unknown>;
  body?: unknown;
}

export interface TransportOptions {
  baseUrl: string;
  apiKey: string | undefined;
  timeoutMs: number;
  fetch: typeof fetch;
  headers: Record<string, string>;
}

/** `timeoutMs` must be a positive number of milliseconds (a timer's limit at most). */
export function checkTimeout(timeoutMs: number, argument: string): number {
  if (!Number.isFinite(timeoutMs) || timeoutMs <= 0 || timeoutMs > 2_147_483_647) {
    throw new InvalidArgumentError(argument, `must be a positive number of milliseconds, not ${timeoutMs}`);
  }
  return timeoutMs;
}

export class Transport {
  readonly baseUrl: URL;

  constructor(private readonly options: TransportOptions) {
    let url: URL;
    try {
      url = new URL(options.baseUrl);
    } catch {
      throw new InvalidArgumentError("baseUrl", `not a URL: ${JSON.stringify(options.baseUrl)}`);
    }
    if (url.protocol !== "http:" && url.protocol !== "https:") {
      throw new InvalidArgumentError("baseUrl", `must be http: or https:, not ${url.protocol}`);
    }
    // A base with a path (behind a proxy: https://host/memreader) keeps it.
    if (!url.pathname.endsWith("/")) url.pathname += "/";
    this.baseUrl = url;
    checkTimeout(options.timeoutMs, "timeoutMs");
  }

  /** Send `request`; its JSON answer, or a typed error. */
  async send<T>(request: Request, call: CallOptions = {}): Promise<T> {
    const timeoutMs = checkTimeout(call.timeoutMs ?? this.options.timeoutMs, "timeoutMs");
    const what = `${request.method} ${request.path}`;
    const timer = AbortSignal.timeout(timeoutMs);
    const signal = call.signal ? AbortSignal.any([call.signal, timer]) : timer;
    const headers: Record<string, string> = { accept: "application/json", ...this.options.headers };
    if (this.options.apiKey !== undefined) headers.authorization = `Bearer ${this.options.apiKey}`;
    if (request.body !== undefined) headers["content-type"] = "application/json";
    if (call.idempotencyKey !== undefined) headers["idempotency-key"] = call.idempotencyKey;
    let status: number;
    let text: string;
    let answer: Response;
    try {
      answer = await this.options.fetch(this.url(request), {
        method: request.method,
        headers,
        body: request.body === undefined ? undefined : JSON.stringify(request.body),
        signal,
      });
      status = answer.status;
      // Read within the same deadline: a body that trickles is cut off too.
      text = await answer.text();
    } catch (error) {
      if (call.signal?.aborted) {
        throw new MemreaderAbortError(`${what}: aborted by the caller`, { cause: call.signal.reason });
      }
      if (timer.aborted) throw new MemreaderTimeoutError(timeoutMs, what);
      throw new MemreaderConnectionError(`${what}: ${describe(error)}`, { cause: error });
    }
    if (status < 200 || status >= 300) {
      throw errorForAnswer(status, answer.statusText, text, answer.headers.get("retry-after"));
    }
    try {
      return JSON.parse(text) as T;
    } catch {
      throw new InvalidResponseError(status, `${what}: the answer is not JSON (${text.slice(0, 200)})`);
    }
  }

  private url(request: Request): URL {
    // Relative to the base ("v1/..."), so a base path is kept.
    const url = new URL(request.path.replace(/^\//, ""), this.baseUrl);
    for (const [name, value] of Object.entries(request.query ?? {})) {
      if (value === undefined || value === null) continue;
      for (const one of Array.isArray(value) ? value : [value]) {
        // A Date as the service reads times (ISO 8601), as JSON.stringify writes it in a body.
        url.searchParams.append(name, one instanceof Date ? one.toISOString() : String(one));
      }
    }
    return url;
  }
}

/** What went wrong with a connection, in words: undici's own message is "fetch failed", its
 * cause says why. */
function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause instanceof Error ? `: ${error.cause.message}` : "";
  return `${error.message}${cause}`;
}

/** A path segment for `value` (a memory id), which must be a non-empty string other than
 * `.` and `..`: an empty id would name the collection, and a URL resolves a dot segment (even
 * escaped, as `%2E%2E`) to the path above it. */
export function segment(value: unknown, argument: string): string {
  if (typeof value !== "string" || value.length === 0 || value === "." || value === "..") {
    throw new InvalidArgumentError(argument, `must be a memory id, not ${JSON.stringify(value)}`);
  }
  return encodeURIComponent(value);
}
