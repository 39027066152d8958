// The client against a real `memreader serve` (test/server.ts): every verb, the user wall and
// the typed errors.
import { randomUUID } from "node:crypto";
import { createServer, type Server, type Socket } from "node:net";

import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";

import {
  AuthenticationError,
  DeadlineExceededError,
  InvalidArgumentError,
  MemreaderAbortError,
  MemreaderAPIError,
  MemreaderClient,
  MemreaderConnectionError,
  MemreaderError,
  MemreaderTimeoutError,
  NotFoundError,
  PermissionDeniedError,
  ServerError,
  UnprocessableEntityError,
  errorForAnswer,
} from "../src/index.js";

const { baseUrl, keys } = inject("memreader");

/** A client of the admin key, bound to a user of its own (tests do not see each other). */
function adminClient(): MemreaderClient {
  return new MemreaderClient({ baseUrl, apiKey: keys.admin, userId: `user-${randomUUID()}` });
}

const CHAT = [
  { role: "user", content: "I moved to Lisbon last spring.", chat_time: "2025-03-01T09:00:00" },
  { role: "assistant", content: "How do you like it?", chat_time: "2025-03-01T09:00:05" },
  { role: "user", content: "I love it, and I started piano lessons there.", chat_time: "2025-03-01T09:01:00" },
];

describe("add, search and context", () => {
  it("finds what add stored, with the session and message it came from", async () => {
    const client = adminClient();
    const added = await client.add(CHAT, { session_id: "s1" });
    expect(added.events.length).toBeGreaterThan(0);
    expect(added.events.every((event) => event.event === "ADD")).toBe(true);

    const hits = await client.search("piano lessons", { k: 3 });
    expect(hits.length).toBeGreaterThan(0);
    const [best] = hits;
    expect(best?.memory.user_id).toBe(client.userId);
    expect(best?.memory.session_id).toBe("s1");
    expect(best?.memory.memory).toContain("piano lessons");
    const source = best?.memory.item.metadata.sources.find((s) => s.content?.includes("piano"));
    expect(source).toMatchObject({ type: "chat", role: "user", message_index: 2 });
    // The span slices the message's text back, verbatim.
    const [start, end] = source?.span ?? [0, 0];
    expect(CHAT[2]?.content.slice(start, end)).toBe(source?.content);
    expect(best?.score.final).toBeGreaterThan(0);
  });

  it("takes one message as text", async () => {
    const client = adminClient();
    await client.add("My sister Ana lives in Porto.", { session_id: "s2" });
    const [hit] = await client.search("Ana Porto");
    expect(hit?.memory.item.metadata.sources[0]).toMatchObject({ role: "user", message_index: 0 });
  });

  it("builds a context block whose parts say where they came from", async () => {
    const client = adminClient();
    await client.add(CHAT, { session_id: "s1" });
    const block = await client.context("Where does the user live?", { max_tokens: 500 });
    expect(block.text).toContain("Lisbon");
    expect(block.tokens).toBeLessThanOrEqual(500);
    expect(block.parts.length).toBeGreaterThan(0);
    expect(block.parts[0]?.session_id).toBe("s1");
    expect(block.parts[0]?.source).toMatch(/session s1, message \d/);
  });
});

describe("one memory: get, update, history, delete, list, forget", () => {
  it("walks a memory's life", async () => {
    const client = adminClient();
    const added = await client.addMemory("Emily is vegetarian.", { importance: 0.9, session_id: "s9" });
    expect(added.event).toBe("ADD");
    const again = await client.addMemory("Emily is vegetarian.");
    expect(again.memory_id).toBe(added.memory_id); // stored once

    const got = await client.get(added.memory_id);
    expect(got).toMatchObject({ id: added.memory_id, memory: "Emily is vegetarian.", status: "active" });

    const updated = await client.update(added.memory_id, "Emily is vegan.", { reason: "she said so" });
    expect(updated.previous_id).toBe(added.memory_id);
    expect(updated.memory_id).not.toBe(added.memory_id);
    expect((await client.get(added.memory_id)).superseded_by).toBe(updated.memory_id);

    const history = await client.history(added.memory_id);
    expect(history.history.map((entry) => entry.event)).toContain("ADD");
    expect(history.superseded_by).toBe(updated.memory_id);

    const page = await client.list({ limit: 10 });
    expect(page.memories.map((memory) => memory.id)).toContain(updated.memory_id);

    const deleted = await client.delete(updated.memory_id);
    expect(deleted.event.event).toBe("EXPIRE");
    expect(deleted.receipt).toBeUndefined();
    expect((await client.get(updated.memory_id)).status).not.toBe("active");

    const erased = await client.delete(updated.memory_id, { erase: true });
    expect(erased.receipt?.erased).toContain(updated.memory_id);
    await expect(client.get(updated.memory_id)).rejects.toBeInstanceOf(NotFoundError);
  });

  it("forgets what one session said", async () => {
    const client = adminClient();
    await client.add(CHAT, { session_id: "gone" });
    await client.add("I keep bees on my balcony.", { session_id: "kept" });
    const forgotten = await client.forget({ session_id: "gone" });
    expect(forgotten.receipt.target).toBe("session:gone");
    expect(forgotten.events.length).toBeGreaterThan(0);
    const hits = await client.search("Lisbon piano bees", { k: 10 });
    expect(hits.map((hit) => hit.memory.session_id)).toEqual(["kept"]);
  });

  it("pages a listing with its cursor", async () => {
    const client = adminClient();
    for (const text of ["Likes tea.", "Likes jazz.", "Likes chess."]) await client.addMemory(text);
    const first = await client.list({ limit: 2 });
    expect(first.memories).toHaveLength(2);
    const second = await client.list({ limit: 2, cursor: first.next_cursor });
    expect(second.memories).toHaveLength(1);
    expect(second.next_cursor).toBeNull();
  });
});

describe("text and retries", () => {
  it("keeps any Unicode text and id, and refuses a lone surrogate naming the field", async () => {
    const client = adminClient();
    const text = "Emily 喜欢喝咖啡 ☕ and naïve café talk 🎹";
    await client.add(text, { session_id: "会话/1 ?#" });
    const [hit] = await client.search("咖啡");
    expect(hit?.memory.session_id).toBe("会话/1 ?#");
    expect(hit?.memory.item.metadata.sources[0]?.content).toBe(text);
    expect((await client.get(hit?.memory.id ?? "")).memory).toBe(hit?.memory.memory);
    const broken = await client.addMemory("half an emoji \ud83c").catch((e: unknown) => e);
    expect(broken).toBeInstanceOf(UnprocessableEntityError);
    expect((broken as UnprocessableEntityError).detail).toContain("lone surrogate");
  });

  it("answers a retried write with the same Idempotency-Key as the first, done once", async () => {
    const client = adminClient();
    const first = await client.addMemory("Emily runs on Tuesdays.", {}, { idempotencyKey: "write-1" });
    const again = await client.addMemory("Emily runs on Tuesdays.", {}, { idempotencyKey: "write-1" });
    expect(again).toEqual(first);
    expect(first.event).toBe("ADD"); // a plain repeat would be REINFORCE or NONE
    const page = await client.list({ since: new Date("2000-01-01T00:00:00Z") as never });
    expect(page.memories).toHaveLength(1);
  });
});

describe("the user wall", () => {
  const alice = new MemreaderClient({ baseUrl, apiKey: keys.alice, userId: "alice" });
  const bob = new MemreaderClient({ baseUrl, apiKey: keys.bob, userId: "bob" });

  it("keeps a key to its own user", async () => {
    const bobs = await bob.addMemory("Bob's locker code is 4711.");
    const asked = alice.search("locker code", { user_id: "bob" });
    await expect(asked).rejects.toBeInstanceOf(PermissionDeniedError);
    await expect(asked).rejects.toMatchObject({ status: 403, kind: "forbidden-user" });
    // Bob's memory id under alice's own user is no memory of hers.
    await expect(alice.get(bobs.memory_id)).rejects.toBeInstanceOf(NotFoundError);
    await expect(alice.delete(bobs.memory_id)).rejects.toBeInstanceOf(NotFoundError);
    expect((await alice.search("locker code")).map((hit) => hit.memory.user_id)).not.toContain("bob");
    expect((await bob.get(bobs.memory_id)).status).toBe("active");
  });

  it("keeps a key limited to tasks within them", async () => {
    const admin = new MemreaderClient({ baseUrl, apiKey: keys.admin, userId: "carol" });
    const tasked = new MemreaderClient({ baseUrl, apiKey: keys.carolTask, userId: "carol" });
    const other = await admin.addMemory("Carol's salary is private.", { task_id: "payroll" });
    const own = await tasked.addMemory("Carol ships release 2.0 on Friday.", { task_id: "t1" });
    expect((await tasked.get(own.memory_id, { task_id: "t1" })).task_id).toBe("t1");
    // Another task's private memory is as unknown as an id never stored.
    await expect(tasked.get(other.memory_id, { task_id: "t1" })).rejects.toBeInstanceOf(NotFoundError);
    const outside = tasked.search("salary", { task_id: "payroll" });
    await expect(outside).rejects.toMatchObject({ status: 403, kind: "forbidden-scope" });
    // A key of two tasks must say which one it runs as.
    await expect(tasked.search("release")).rejects.toBeInstanceOf(UnprocessableEntityError);
  });

  it("lets a key of one user leave the user out", async () => {
    const unbound = new MemreaderClient({ baseUrl, apiKey: keys.alice });
    const event = await unbound.addMemory("Alice collects stamps.");
    expect((await unbound.get(event.memory_id)).user_id).toBe("alice");
  });
});

describe("typed errors", () => {
  it("401 without a key, or with a wrong one", async () => {
    const none = new MemreaderClient({ baseUrl, userId: "alice" });
    await expect(none.search("x")).rejects.toBeInstanceOf(AuthenticationError);
    const wrong = new MemreaderClient({ baseUrl, apiKey: "mr_not-a-key", userId: "alice" });
    const refused = wrong.search("x");
    await expect(refused).rejects.toMatchObject({ status: 401, name: "AuthenticationError" });
    await expect(refused).rejects.toBeInstanceOf(MemreaderAPIError);
  });

  it("404 for a memory the user does not have, with the problem's fields", async () => {
    const client = adminClient();
    const error = await client.get("no-such-memory").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NotFoundError);
    expect(error).toBeInstanceOf(MemreaderError);
    expect(error).toMatchObject({
      status: 404,
      type: "urn:memreader:problem:not-found",
      kind: "not-found",
      title: "No such memory",
    });
    expect((error as NotFoundError).detail).toContain("no-such-memory");
  });

  it("422 naming the invalid field", async () => {
    const client = adminClient();
    const error = await client.search("x", { k: 0 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UnprocessableEntityError);
    expect((error as UnprocessableEntityError).errors.map((e) => e.loc)).toEqual(["body.k"]);
    const forget = client.forget({ session_id: "a", message_id: "b" } as never);
    await expect(forget).rejects.toBeInstanceOf(InvalidArgumentError);
  });

  it("refuses a bad argument before sending anything", async () => {
    const client = adminClient();
    for (const id of ["", ".", ".."]) {
      await expect(client.get(id)).rejects.toMatchObject({ name: "InvalidArgumentError", argument: "memoryId" });
    }
    await expect(client.add([])).rejects.toBeInstanceOf(InvalidArgumentError);
    await expect(new MemreaderClient({ baseUrl }).search("x")).rejects.toMatchObject({ argument: "user_id" });
    expect(() => new MemreaderClient({ baseUrl: "file:///etc/passwd" })).toThrow(InvalidArgumentError);
    expect(() => new MemreaderClient({ baseUrl: "not a url" })).toThrow(InvalidArgumentError);
    expect(() => new MemreaderClient({ baseUrl, timeoutMs: 0 })).toThrow(InvalidArgumentError);
    await expect(client.search("x", {}, { timeoutMs: -1 })).rejects.toBeInstanceOf(InvalidArgumentError);
  });

  it("an id with a slash stays one path segment", async () => {
    await expect(adminClient().get("../memories")).rejects.toBeInstanceOf(NotFoundError);
  });

  it("maps the service's 504 and other server failures", () => {
    const deadline = JSON.stringify({
      type: "urn:memreader:problem:deadline",
      title: "Deadline exceeded",
      status: 504,
    });
    const error = errorForAnswer(504, "Gateway Timeout", deadline, null);
    expect(error).toBeInstanceOf(DeadlineExceededError);
    expect(error).toBeInstanceOf(ServerError);
    const proxy = errorForAnswer(502, "Bad Gateway", "<html>upstream down</html>", "3");
    expect(proxy).toMatchObject({ status: 502, type: "about:blank", detail: "<html>upstream down</html>" });
    expect(proxy.retryAfterSeconds).toBe(3);
    expect(proxy).toBeInstanceOf(ServerError);
  });
});

describe("deadlines and cancelling", () => {
  // A server that accepts connections and never answers: only the client's deadline ends a call.
  let silent: Server;
  let silentUrl = "";
  const sockets = new Set<Socket>();

  beforeAll(async () => {
    silent = createServer((socket) => {
      sockets.add(socket);
      socket.on("close", () => sockets.delete(socket));
    });
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    const address = silent.address();
    silentUrl = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
  });

  afterAll(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => silent.close(resolve));
  });

  it("throws a timeout error at the call's deadline", async () => {
    const client = new MemreaderClient({ baseUrl: silentUrl, userId: "alice", timeoutMs: 60_000 });
    const error = await client.search("x", {}, { timeoutMs: 50 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(MemreaderTimeoutError);
    expect(error).toBeInstanceOf(MemreaderConnectionError);
    expect(error).toMatchObject({ timeoutMs: 50 });
  });

  it("throws an abort error when the caller's signal aborts", async () => {
    const client = new MemreaderClient({ baseUrl: silentUrl, userId: "alice" });
    const controller = new AbortController();
    const call = client.get("m1", {}, { signal: controller.signal });
    controller.abort(new Error("the user left"));
    const error = await call.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(MemreaderAbortError);
    expect((error as Error).cause).toMatchObject({ message: "the user left" });
  });

  it("throws a connection error when nothing listens", async () => {
    const port = await new Promise<number>((resolve) => {
      const probe = createServer().listen(0, "127.0.0.1", () => {
        const address = probe.address();
        probe.close(() => resolve(typeof address === "object" && address ? address.port : 0));
      });
    });
    const client = new MemreaderClient({ baseUrl: `http://127.0.0.1:${port}`, userId: "alice" });
    const error = await client.search("x").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(MemreaderConnectionError);
    expect(error).not.toBeInstanceOf(MemreaderTimeoutError);
  });
});
