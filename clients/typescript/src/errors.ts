/**
 * The errors a client call throws, one tree drawn once:
 *
 * ```text
 * MemreaderError
 * ├── InvalidArgumentError        a call's argument is wrong (nothing was sent)
 * ├── MemreaderAPIError           the service answered a problem (RFC 9457): status, type, title, detail
 * │   ├── BadRequestError         400 (malformed JSON)
 * │   ├── AuthenticationError     401 (no key, or an unknown one)
 * │   ├── PermissionDeniedError   403 (another key's user, a scope the key may not use)
 * │   ├── NotFoundError           404 (no such memory for that user)
 * │   ├── ConflictError           409 (another change won; a service with no store)
 * │   ├── PayloadTooLargeError    413
 * │   ├── UnprocessableEntityError 422 (invalid fields: `errors` names each)
 * │   ├── RateLimitError          429 (`retryAfterSeconds`)
 * │   └── ServerError             5xx
 * │       ├── ServiceUnavailableError 503 (store or embedder failed: `retryAfterSeconds`)
 * │       └── DeadlineExceededError   504 (the service's own deadline: nothing was stored)
 * ├── MemreaderConnectionError    no answer: the service could not be reached
 * │   └── MemreaderTimeoutError   no answer within the call's timeout
 * ├── MemreaderAbortError         the caller's AbortSignal stopped the call
 * └── InvalidResponseError        a 2xx answer that is not the JSON the service sends
 * ```
 *
 * @example
 * ```ts
 * try {
 *   await client.get("no-such-id");
 * } catch (error) {
 *   if (error instanceof NotFoundError) console.log(error.kind, error.detail); // "not-found", ...
 *   else throw error;
 * }
 * ```
 */

/** The `type` prefix of the service's problems (`urn:memreader:problem:not-found`). */
const PROBLEM_PREFIX = "urn:memreader:problem:";

/** An RFC 9457 problem document, as the service answers every failure. */
export interface Problem {
  type: string;
  title: string;
  status: number;
  detail?: string;
  instance?: string;
  /** For invalid input: each invalid field (`loc`, dotted) and what is wrong with it. */
  errors?: { loc: string; msg: string }[];
  /** The library error's class name, when a library error caused it. */
  error?: string;
  [member: string]: unknown;
}

/** The base of every error this package throws. */
export class MemreaderError extends Error {
  override name = "MemreaderError";
}

/** A call's argument is wrong; nothing was sent. */
export class InvalidArgumentError extends MemreaderError {
  override name = "InvalidArgumentError";

  constructor(
    /** The argument at fault, e.g. `memoryId`. */
    readonly argument: string,
    message: string,
  ) {
    super(`${argument}: ${message}`);
  }
}

/** The service answered with a problem document. */
export class MemreaderAPIError extends MemreaderError {
  override name = "MemreaderAPIError";
  readonly status: number;
  /** The problem's `type` (a URN, or `about:blank` when the answer held none). */
  readonly type: string;
  readonly title: string;
  readonly detail: string;
  readonly instance: string | undefined;
  /** The whole problem document, extra members included. */
  readonly problem: Problem;
  /** The answer's `Retry-After`, in seconds, when it had one. */
  readonly retryAfterSeconds: number | undefined;

  constructor(problem: Problem, retryAfterSeconds?: number) {
    const detail = problem.detail ?? "";
    super(`${problem.status} ${problem.title}${detail ? `: ${detail}` : ""}`);
    this.status = problem.status;
    this.type = problem.type;
    this.title = problem.title;
    this.detail = detail;
    this.instance = problem.instance;
    this.problem = problem;
    this.retryAfterSeconds = retryAfterSeconds;
  }

  /** The kind of problem: the `type` after `urn:memreader:problem:` (`not-found`,
   * `invalid-input`, `forbidden-scope`, ...), else the whole `type`. */
  get kind(): string {
    return this.type.startsWith(PROBLEM_PREFIX) ? this.type.slice(PROBLEM_PREFIX.length) : this.type;
  }
}

export class BadRequestError extends MemreaderAPIError {
  override name = "BadRequestError";
}
export class AuthenticationError extends MemreaderAPIError {
  override name = "AuthenticationError";
}
export class PermissionDeniedError extends MemreaderAPIError {
  override name = "PermissionDeniedError";
}
export class NotFoundError extends MemreaderAPIError {
  override name = "NotFoundError";
}
export class ConflictError extends MemreaderAPIError {
  override name = "ConflictError";
}
export class PayloadTooLargeError extends MemreaderAPIError {
  override name = "PayloadTooLargeError";
}
export class UnprocessableEntityError extends MemreaderAPIError {
  override name = "UnprocessableEntityError";

  /** Each invalid field the service named (empty when the problem came from the library's
   * own checks, whose `detail` says what and where). */
  get errors(): { loc: string; msg: string }[] {
    return this.problem.errors ?? [];
  }
}
export class RateLimitError extends MemreaderAPIError {
  override name = "RateLimitError";
}
export class ServerError extends MemreaderAPIError {
  override name = "ServerError";
}
export class ServiceUnavailableError extends ServerError {
  override name = "ServiceUnavailableError";
}
export class DeadlineExceededError extends ServerError {
  override name = "DeadlineExceededError";
}

/** The service could not be reached (refused, reset, DNS, TLS). */
export class MemreaderConnectionError extends MemreaderError {
  override name = "MemreaderConnectionError";
}

/** No answer came within the call's timeout; the request was cancelled. */
export class MemreaderTimeoutError extends MemreaderConnectionError {
  override name = "MemreaderTimeoutError";

  constructor(
    readonly timeoutMs: number,
    what: string,
  ) {
    super(`${what}: no answer within ${timeoutMs} ms`);
  }
}

/** The caller's AbortSignal stopped the call (its reason is the `cause`). */
export class MemreaderAbortError extends MemreaderError {
  override name = "MemreaderAbortError";
}

/** A successful answer that is not the JSON the service sends. */
export class InvalidResponseError extends MemreaderError {
  override name = "InvalidResponseError";

  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

const BY_STATUS: Record<number, typeof MemreaderAPIError> = {
  400: BadRequestError,
  401: AuthenticationError,
  403: PermissionDeniedError,
  404: NotFoundError,
  409: ConflictError,
  413: PayloadTooLargeError,
  422: UnprocessableEntityError,
  429: RateLimitError,
  503: ServiceUnavailableError,
  504: DeadlineExceededError,
};

/** The error of an answer with `status`, from its body (`text`) and `Retry-After`. */
export function errorForAnswer(
  status: number,
  statusText: string,
  text: string,
  retryAfter: string | null,
): MemreaderAPIError {
  const problem = asProblem(status, statusText, text);
  const seconds = retryAfter === null ? Number.NaN : Number(retryAfter);
  const ErrorClass = BY_STATUS[status] ?? (status >= 500 ? ServerError : MemreaderAPIError);
  return new ErrorClass(problem, Number.isFinite(seconds) ? seconds : undefined);
}

/** The body as a problem; a body that is none (a proxy's page) keeps its status, its text
 * in `detail` (cut to 1,000 characters). */
function asProblem(status: number, statusText: string, text: string): Problem {
  try {
    const parsed: unknown = JSON.parse(text);
    if (isProblem(parsed)) return { ...parsed, status };
  } catch {
    // Not JSON: described below from the status and the text.
  }
  return {
    type: "about:blank",
    title: statusText || `HTTP ${status}`,
    status,
    detail: text.length > 1000 ? `${text.slice(0, 999)}…` : text,
  };
}

function isProblem(value: unknown): value is Problem {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  const fields = value as Record<string, unknown>;
  return typeof fields.type === "string" && typeof fields.title === "string";
}
