// memreader's web page: read a chat or a document, see where each item came from, search the
// store. Plain ES modules, no build step. Everything the API returns is untrusted text: it only
// ever reaches the page as DOM text nodes (textContent / createTextNode), never as HTML.

import { categoriesOpen, initCategories, refreshCategories } from "./categories.js";
import {
  $, api, el, expander, fmt, plural, preview, Problem, problemOf, setStatus, short, showProblem,
  userId, validity,
} from "./common.js";
import { markSources, renderOriginal } from "./original.js";
import { onSearch } from "./search.js";

const KEY_STORAGE = "memreader.apiKey";
// The user ids this browser used on this service, the last first: the page starts on the last
// one (or on an empty field, never on a made-up user) and offers the others.
const USERS_STORAGE = "memreader.users";
const MAX_KNOWN_USERS = 20;
const ROLES = new Set(["system", "developer", "user", "assistant", "tool", "function"]);
// "role: text", optionally after "[chat_time] "; only the roles the reader knows, so a line
// like "Note: ..." continues the message above instead of starting one.
const ROLE_LINE = new RegExp(`^\\s*(?:\\[([^\\]]+)\\]\\s*)?(${[...ROLES].join("|")})\\s*:\\s?(.*)$`, "i");

const EXAMPLE_CHAT = [
  {
    role: "user",
    content: "Hi! I moved to Lisbon last month 😀 and I'm learning Portuguese.",
    chat_time: "2024-05-01T09:00:00",
  },
  {
    role: "assistant",
    content: "Welcome to Lisbon! How are the lessons going?",
    chat_time: "2024-05-01T09:00:20",
  },
  {
    role: "user",
    content: "Slowly. My sister Ana visits in June; she is allergic to peanuts.",
    chat_time: "2024-05-01T09:01:10",
  },
  {
    role: "assistant",
    content: "Noted: Ana visits in June and avoids peanuts. I'll suggest places with allergen menus.",
    chat_time: "2024-05-01T09:01:40",
  },
];

// What the page holds between events. `last` is also exposed on window.memreaderLast so tests
// (and curious users, in the console) can compare the marks with the answer.
const state = {
  file: null, // {name, data (base64)} while a file waits to be read
  busy: false,
  fine: null, // whether the service can read in fine mode (null: not known yet)
  last: null, // {request, answer, items (flat), selected}
};

// ---------------------------------------------------------------- reading the pasted chat

/** Scenes from the textarea: JSON (a scene, a list of scenes, {scenes}) or "role: text" lines. */
function parseScenes(text) {
  const trimmed = text.trim();
  if (!trimmed) {
    const detail = "Paste a chat, drop a file, or click Load example.";
    throw new Problem({ title: "Nothing to read", detail });
  }
  // "[2024-05-01 10:00] user: hi" starts like JSON too: lines that look like a chat are one.
  const looksLikeLines = ROLE_LINE.test(trimmed.split(/\r?\n/, 1)[0]);
  if (!looksLikeLines && (trimmed.startsWith("[") || trimmed.startsWith("{"))) {
    let data;
    try {
      data = JSON.parse(trimmed);
    } catch (error) {
      throw new Problem({ title: "Not valid JSON", detail: error.message });
    }
    return scenesFromJson(data);
  }
  return [messagesFromLines(trimmed)];
}

function isMessage(value) {
  return value !== null && typeof value === "object" && !Array.isArray(value) && "role" in value;
}

function scenesFromJson(data) {
  if (data && !Array.isArray(data) && Array.isArray(data.scenes)) data = data.scenes;
  if (data && !Array.isArray(data) && Array.isArray(data.messages)) data = [data.messages];
  if (Array.isArray(data) && data.length && data.every(isMessage)) return [data];
  if (Array.isArray(data) && data.length && data.every((s) => Array.isArray(s) || typeof s === "string")) {
    return data;
  }
  throw new Problem({
    title: "Not a chat",
    detail: "Expected a scene (a list of {role, content, chat_time?} messages) or a list of scenes.",
  });
}

/** "role: text" lines, one message each; an optional "[chat_time] " prefix; other lines
 * continue the message above (so a pasted message may span lines). */
function messagesFromLines(text) {
  const messages = [];
  for (const line of text.split(/\r?\n/)) {
    const match = ROLE_LINE.exec(line);
    const role = match && match[2].toLowerCase();
    if (match) {
      const message = { role, content: match[3] };
      if (match[1]) message.chat_time = match[1].trim();
      messages.push(message);
    } else if (messages.length) {
      messages[messages.length - 1].content += `\n${line}`;
    } else {
      throw new Problem({
        title: "Not a chat",
        detail: `The first line must be “role: text” (roles: ${[...ROLES].join(", ")}), `
          + "or paste JSON.",
      });
    }
  }
  return messages;
}

// ---------------------------------------------------------------- files

async function readFileAsBase64(file) {
  const url = await new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(reader.result);
    reader.onerror = () => reject(reader.error);
    reader.readAsDataURL(file);
  });
  return String(url).slice(String(url).indexOf(",") + 1); // drop "data:...;base64,"
}

/** A chosen or dropped file: a .json chat goes into the textarea; anything else waits to be
 * read as a document. */
async function takeFile(file) {
  showProblem("read-error", null);
  if (/\.json$/i.test(file.name)) {
    const text = await file.text();
    try {
      scenesFromJson(JSON.parse(text));
      $("chat-input").value = text;
      setFile(null);
      setStatus("read-status", `Loaded the chat in ${short(file.name, 120)}.`);
      return;
    } catch {
      // not a chat: read it as a document like any other file
    }
  }
  setFile({ name: file.name, data: await readFileAsBase64(file), size: file.size });
  setStatus("read-status", `${short(file.name, 120)} will be read as a document.`);
}

function takeFileSafely(file) {
  takeFile(file).catch((error) => {
    showProblem("read-error", { title: "Could not read the file", detail: String(error) });
  });
}

function setFile(file) {
  state.file = file;
  $("file-status").hidden = !file;
  const size = file ? Math.ceil(file.size / 1024) : 0;
  $("file-name").textContent = file ? `File to read: ${short(file.name, 120)} (${size} KB)` : "";
  if (!file) $("file-input").value = "";
}

// ---------------------------------------------------------------- the read request

function readRequest() {
  const mode = document.querySelector('input[name="mode"]:checked').value;
  const info = { user_id: userId(), session_id: $("session-id").value.trim() };
  const common = { info, mode, store: $("store").checked, include_embeddings: false };
  if (state.file) {
    const part = { type: "file", file: { file_data: state.file.data, filename: state.file.name } };
    return { ...common, type: "doc", scenes: [part] };
  }
  return { ...common, type: "chat", scenes: parseScenes($("chat-input").value) };
}

async function onRead(event) {
  event.preventDefault();
  if (state.busy) return;
  showProblem("read-error", null);
  let request;
  try {
    request = readRequest();
  } catch (error) {
    return showProblem("read-error", problemOf(error));
  }
  state.busy = true;
  $("read-form").setAttribute("aria-busy", "true");
  setStatus("read-status", `Reading in ${request.mode} mode…`);
  renderOriginal(request);
  $("results").hidden = true; // shown with the answer: a failure stays by the Read button
  try {
    showAnswer(request, await api("POST", "v1/read", request));
    $("results").hidden = false;
    // Stored items change the user's categories: an open panel shows the new state.
    if (request.store && categoriesOpen()) refreshCategories();
  } catch (error) {
    readFailed(error);
  } finally {
    state.busy = false;
    $("read-form").removeAttribute("aria-busy");
  }
}

function readFailed(error) {
  let problem = problemOf(error);
  if (problem.error === "LLMRequiredError") {
    // Said in the page's terms, not the library's (`mode='fast'`, reader config keys).
    setFineAvailable(false);
    problem = { ...problem, title: "Fine mode is not available here", detail: NO_LLM };
  }
  setStatus("read-status", "The read failed.");
  $("windows").replaceChildren();
  $("items").replaceChildren();
  $("events").hidden = true;
  // An input error names the message: outline it in the original (shown for that).
  const scene = Number(problem.scene_index);
  const message = Number(problem.message_index);
  const slot = Number.isInteger(scene) && Number.isInteger(message)
    ? document.querySelector(`[data-scene="${scene}"][data-message="${message}"]`)
    : null;
  if (slot) {
    slot.classList.add("has-problem");
    $("results").hidden = false;
  }
  showProblem("read-error", problem);
}

const NO_LLM = "This service has no language model (LLM) configured, and fine mode needs one. "
  + "Read in fast mode, or ask whoever runs the service to configure an LLM.";

/** Enable or disable the fine option, saying why when it is off. */
function setFineAvailable(available) {
  state.fine = available;
  const fine = document.querySelector('input[name="mode"][value="fine"]');
  fine.disabled = !available;
  $("fine-hint").textContent = available ? "(needs an LLM)" : "(not available: this service has no LLM)";
  if (!available && fine.checked) document.querySelector('input[name="mode"][value="fast"]').checked = true;
}

/** Ask the service whether fine mode can work here (GET /healthz says `fine_mode`). */
async function checkModes() {
  try {
    const health = await api("GET", "healthz");
    if (typeof health.fine_mode === "boolean") setFineAvailable(health.fine_mode);
  } catch {
    // unknown: the option stays, and a read says why if it fails
  }
  document.documentElement.dataset.modes = "checked"; // tests wait for this
}

function showAnswer(request, answer) {
  const items = answer.items.flat();
  state.last = { request, answer, items, selected: null };
  window.memreaderLast = state.last;
  renderWindows(answer.report);
  renderEvents(answer.events);
  renderItems(answer.items);
  const windows = answer.report.windows.length;
  setStatus(
    "read-status",
    `${plural(items.length, "item")} from ${plural(windows, "window")}.`,
  );
}

// ---------------------------------------------------------------- rendering the answer

function renderWindows(report) {
  const rows = report.windows.map((w) =>
    el(
      "li",
      {},
      `Scene ${short(w.scene_index, 20)}, window ${short(w.window_index, 20)}: `,
      el("span", { className: `badge status-${short(w.status, 40)}` }, short(w.status, 40)),
      ` ${plural(w.items, "item")}`,
      w.fallback_reason ? el("span", { className: "hint" }, ` — fallback: ${short(w.fallback_reason, 500)}`) : null,
      w.error ? el("span", { className: "error-text" }, ` — error: ${short(w.error, 500)}`) : null,
    ),
  );
  $("windows").replaceChildren(...(rows.length ? rows : [el("li", {}, "No windows.")]));
}

function renderEvents(events) {
  const box = $("events");
  box.hidden = !events;
  if (!events) return;
  const counts = {};
  for (const e of events) counts[e.event] = (counts[e.event] || 0) + 1;
  const parts = Object.entries(counts).map(([name, n]) => `${name} ${n}`);
  const detail = parts.length ? ` (${parts.join(", ")})` : "";
  box.textContent = `Stored: ${plural(events.length, "write event")}${detail}.`;
}

function renderItems(itemsPerScene) {
  const list = [];
  itemsPerScene.forEach((items, scene) => {
    if (itemsPerScene.length > 1) list.push(el("li", { className: "scene-label" }, `Scene ${scene}`));
    // A long memory shows its start in the button; the whole is a click away, beside it (a
    // button cannot hold another).
    for (const item of items) list.push(el("li", {}, itemButton(item), expander(item.memory)));
  });
  $("items").replaceChildren(...(list.length ? list : [el("li", {}, "No items.")]));
}

/** An item is a real button: focusable, and Enter/Space activate it without extra code. */
function itemButton(item) {
  const meta = item.metadata;
  const button = el(
    "button",
    { type: "button", className: "item", "aria-pressed": "false", "data-item-id": item.id },
    el("span", { className: "item-text" }, preview(item.memory)),
    el(
      "span",
      { className: "item-meta" },
      el("span", { className: "badge" }, short(meta.memory_type, 40)),
      el("span", { className: "badge" }, `importance ${fmt(meta.importance)}`),
      el("span", { className: "badge" }, short(validity(meta.valid_from, meta.valid_to), 120)),
      el("span", { className: "badge" }, short(meta.status, 40)),
    ),
  );
  button.addEventListener("click", () => selectItem(item, button));
  return button;
}

function selectItem(item, button) {
  for (const other of document.querySelectorAll("#items .item")) {
    other.setAttribute("aria-pressed", "false");
  }
  button.setAttribute("aria-pressed", "true");
  state.last.selected = item;
  markSources(item);
}

// ---------------------------------------------------------------- wiring

function wireFileDrop() {
  const zone = $("read-panel");
  zone.addEventListener("dragover", (event) => {
    event.preventDefault();
    zone.classList.add("dragging");
  });
  zone.addEventListener("dragleave", () => zone.classList.remove("dragging"));
  zone.addEventListener("drop", (event) => {
    event.preventDefault();
    zone.classList.remove("dragging");
    const file = event.dataTransfer && event.dataTransfer.files[0];
    if (file) takeFileSafely(file);
  });
  $("file-input").addEventListener("change", (event) => {
    const file = event.target.files[0];
    if (file) takeFileSafely(file);
  });
  $("clear-file").addEventListener("click", () => {
    setFile(null);
    setStatus("read-status", "File cleared: Read sends the chat again.");
    $("chat-input").focus();
  });
}

function wireApiKey() {
  const input = $("api-key");
  input.value = sessionStorage.getItem(KEY_STORAGE) || "";
  input.addEventListener("input", () => {
    if (input.value) sessionStorage.setItem(KEY_STORAGE, input.value);
    else sessionStorage.removeItem(KEY_STORAGE);
  });
}

function knownUsers() {
  try {
    const users = JSON.parse(localStorage.getItem(USERS_STORAGE) || "[]");
    return Array.isArray(users) ? users.filter((u) => typeof u === "string" && u) : [];
  } catch {
    return []; // unreadable: start afresh
  }
}

function wireUserId() {
  const input = $("user-id");
  const list = $("known-users");
  const show = (users) => list.replaceChildren(...users.map((user) => el("option", { value: user })));
  const users = knownUsers();
  input.value = users[0] || "";
  show(users);
  input.addEventListener("change", () => {
    const user = input.value.trim();
    if (!user) return;
    const kept = [user, ...knownUsers().filter((u) => u !== user)].slice(0, MAX_KNOWN_USERS);
    try {
      localStorage.setItem(USERS_STORAGE, JSON.stringify(kept));
    } catch {
      // storage full or off: the page still works, it only forgets
    }
    show(kept);
  });
}

function init() {
  wireApiKey();
  wireUserId();
  wireFileDrop();
  $("load-example").addEventListener("click", () => {
    setFile(null);
    $("chat-input").value = JSON.stringify(EXAMPLE_CHAT, null, 2);
    setStatus("read-status", "Example chat loaded: 4 messages.");
  });
  $("read-form").addEventListener("submit", onRead);
  $("search-form").addEventListener("submit", onSearch);
  initCategories();
  checkModes();
  document.documentElement.dataset.ready = "true"; // tests wait for this
}

init();
