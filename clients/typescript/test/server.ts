/**
 * A real `memreader serve` for the tests: the checkout's code ($MEMREADER_PYTHON, else the
 * checkout's .venv), on 127.0.0.1 at a free port, with a SQLite store in a temporary folder,
 * the `hash` embedder (fast, offline) and four keys: an admin's, alice's, bob's, and one limited to
 * two of carol's tasks. It is
 * waited for with a deadline and stopped after the run, however the tests ended.
 */

import { type ChildProcess, spawn } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

import type { TestProject } from "vitest/node";

import { memreaderEnv, memreaderPython } from "../scripts/openapi-types.mjs";

export interface ServedMemreader {
  baseUrl: string;
  keys: { admin: string; alice: string; bob: string; carolTask: string };
}

declare module "vitest" {
  export interface ProvidedContext {
    memreader: ServedMemreader;
  }
}

const START_TIMEOUT_MS = 90_000;
const STOP_TIMEOUT_MS = 10_000;

let server: ChildProcess | undefined;
let folder: string | undefined;
let output = "";

export async function setup(project: TestProject): Promise<() => Promise<void>> {
  folder = await mkdtemp(join(tmpdir(), "memreader-ts-"));
  const keys = { admin: newKey(), alice: newKey(), bob: newKey(), carolTask: newKey() };
  // An entry of the keys list: the key's hash, never the key (memreader/service/keys.py).
  const entry = (name: string, key: string, users: string[], tasks?: string[]) =>
    `    - ${JSON.stringify({ name, sha256: sha256(key), users, ...(tasks && { tasks }) })}`;
  const config = [
    "backend: simple_struct",
    "config:",
    "  embedder: {backend: hash}",
    `  store: sqlite:///${join(folder, "memories.db")}`,
    "service:",
    "  keys:",
    entry("admin", keys.admin, ["*"]),
    entry("alice-app", keys.alice, ["alice"]),
    entry("bob-app", keys.bob, ["bob"]),
    // Limited to two of carol's tasks (scope walls: memreader/service/scope_walls.py).
    entry("carol-tasks", keys.carolTask, ["carol"], ["t1", "t2"]),
    "",
  ].join("\n");
  const configPath = join(folder, "service.yaml");
  await writeFile(configPath, config);
  const port = await freePort();
  const args = ["-m", "memreader.cli", "serve", "--config", configPath, "--host", "127.0.0.1"];
  server = spawn(memreaderPython(), [...args, "--port", String(port), "--workers", "1", "--log-level", "warning"], {
    env: memreaderEnv(),
    stdio: ["ignore", "pipe", "pipe"],
  });
  server.stdout?.on("data", (chunk: Buffer) => (output += chunk.toString()));
  server.stderr?.on("data", (chunk: Buffer) => (output += chunk.toString()));
  // Whatever ends the run (a failure, ^C), the server goes with it.
  process.once("exit", () => server?.kill("SIGKILL"));
  const baseUrl = `http://127.0.0.1:${port}`;
  try {
    await healthy(baseUrl, server);
  } catch (error) {
    await teardown();
    throw error;
  }
  project.provide("memreader", { baseUrl, keys });
  return teardown;
}

async function teardown(): Promise<void> {
  const running = server;
  server = undefined;
  if (running && running.exitCode === null && running.signalCode === null) {
    const exited = new Promise<void>((resolve) => running.once("exit", () => resolve()));
    running.kill("SIGTERM");
    const timer = setTimeout(() => running.kill("SIGKILL"), STOP_TIMEOUT_MS);
    await exited;
    clearTimeout(timer);
  }
  if (folder) await rm(folder, { recursive: true, force: true });
  folder = undefined;
}

/** Wait until `GET /healthz` answers 200, within START_TIMEOUT_MS; fail at once if the server
 * exits (with what it printed). */
async function healthy(baseUrl: string, child: ChildProcess): Promise<void> {
  const deadline = Date.now() + START_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`memreader serve exited (${child.exitCode ?? child.signalCode}):\n${output}`);
    }
    try {
      const answer = await fetch(`${baseUrl}/healthz`, { signal: AbortSignal.timeout(2_000) });
      if (answer.ok) return;
    } catch {
      // Not listening yet.
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`memreader serve did not answer /healthz within ${START_TIMEOUT_MS} ms:\n${output}`);
}

function newKey(): string {
  return `mr_${randomBytes(32).toString("base64url")}`;
}

function sha256(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}

/** A port nothing listens on now (the OS's pick for a socket closed at once). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address();
      probe.close(() =>
        typeof address === "object" && address ? resolve(address.port) : reject(new Error("no port")),
      );
    });
  });
}
