// The "Categories of this user" panel: each category's summary, line by line, with every
// [ref:ID] citation a button that shows the memory it cites; and the Markdown files an agent
// reads (index.md, <category>.md) as plain text. Untrusted text only ever becomes text nodes.

import {
  $, api, apiText, el, expander, fmt, fullText, head, longText, plural, PREVIEW, problemOf,
  setStatus, short, showProblem, userId, validity,
} from "./common.js";

// A summary shows at most this many lines until the user asks for the whole.
const SUMMARY_LINES = 100;
// The file names the export gives categories (memreader/categories/markdown_files.py): a
// Windows device name gets "-category", and "index" (the index's own name) ".category".
const DEVICES = new Set(["con", "prn", "aux", "nul", ..."0123456789".split("").flatMap((d) => [`com${d}`, `lpt${d}`])]);

function categoryFile(name) {
  if (name === "index") return "index.category.md";
  return DEVICES.has(name) ? `${name}-category.md` : `${name}.md`;
}

// The same citation syntax the server writes (memreader/categories/summaries.py).
const REF = /\[ref:([^\]\s]+)\]/g;

let boxes = 0; // a counter for the ids that tie a citation to the box showing its memory
let loading = 0; // the latest load wins when loads overlap (a click during a refresh, say)

/** Whether the panel shows categories (a stored read then refreshes it). */
export function categoriesOpen() {
  return !$("categories").hidden;
}

export function initCategories() {
  $("show-categories").addEventListener("click", () => refreshCategories());
  $("show-index").addEventListener("click", () => showFile("index.md"));
}

/** Load the current user's categories into the panel. */
export async function refreshCategories() {
  const user = userId();
  if (!noUserProblem(user)) return;
  const ticket = ++loading;
  setStatus("categories-status", `Loading the categories of ${short(user, 80)}…`);
  try {
    const answer = await api("GET", `v1/users/${encodeURIComponent(user)}/categories`);
    if (ticket === loading) renderCategories(answer);
  } catch (error) {
    if (ticket !== loading) return;
    setStatus("categories-status", "The categories could not be loaded.");
    showProblem("categories-error", problemOf(error));
  }
}

/** Clear the problem region; show one (and return false) when the user id is empty. */
function noUserProblem(user) {
  showProblem("categories-error", null);
  if (user) return true;
  showProblem("categories-error", { title: "No user id", detail: "Type a user id above." });
  return false;
}

function renderCategories(answer) {
  const full = answer.categories.filter((c) => c.item_ids.length);
  const empty = answer.categories.filter((c) => !c.item_ids.length);
  $("category-list").replaceChildren(...full.map(categoryEntry));
  $("empty-categories").replaceChildren(
    ...empty.map((c) => el("li", { "data-category": c.name }, `${short(c.name, 80)} — empty`)),
  );
  $("empty-title").hidden = !empty.length;
  $("categories").hidden = false;
  $("show-categories").setAttribute("aria-expanded", "true");
  setStatus("categories-status", categoriesSummary(answer.user_id, full.length, empty.length));
}

function categoriesSummary(longUser, full, empty) {
  const user = short(longUser, 80);
  if (!full && !empty) return `No categories for ${user} yet: store some items first.`;
  const all = plural(full + empty, "category", "categories");
  return `${all} of ${user}: ${full} with memories, ${empty} empty.`;
}

function categoryEntry(category) {
  const numbers = new Map(); // cited id -> its number in this category (1, 2, ...)
  const summary = String(category.summary ?? "");
  const lines = summary.split("\n").filter((line) => line.trim());
  const shown = lines.slice(0, SUMMARY_LINES);
  const list = el("ul", { className: "summary" }, shown.map((line) => summaryLine(line, numbers)));
  return el(
    "li",
    { className: "category", "data-category": category.name },
    el("h3", {}, short(category.name, 80)),
    longText("p", { className: "hint" }, String(category.description ?? "")),
    el(
      "p",
      { className: "item-meta" },
      el("span", { className: "badge item-count" }, plural(category.item_ids.length, "memory", "memories")),
      el("span", { className: "badge summary-kind" }, `summary: ${short(category.summary_kind, 40)}`),
      category.updated_at ? el("span", { className: "badge" }, `updated ${short(category.updated_at, 60)}`) : null,
    ),
    category.summary_note ? longText("p", { className: "hint" }, String(category.summary_note)) : null,
    list,
    // More lines than that: the whole summary, as plain text, on demand.
    lines.length > shown.length ? expander(summary, null, 0) : null,
    fileButton(categoryFile(category.name)),
  );
}

/** One summary line: its text, each [ref:ID] a citation button, and a box for the memory. */
function summaryLine(line, numbers) {
  const attrs = { className: "cited", id: `cited-${++boxes}`, "aria-live": "polite", hidden: true };
  const box = el("div", attrs);
  const parts = [];
  let at = 0;
  const whole = line.replace(/^\s*-\s+/, ""); // the list shows the bullet
  // A long line shows its start (citations in it still buttons), the whole on demand.
  const text = whole.length > PREVIEW ? `${head(whole, PREVIEW)}…` : whole;
  for (const match of text.matchAll(REF)) {
    if (match.index > at) parts.push(text.slice(at, match.index));
    const id = match[1];
    if (!numbers.has(id)) numbers.set(id, numbers.size + 1);
    parts.push(citeButton(id, numbers.get(id), box));
    at = match.index + match[0].length;
  }
  if (at < text.length) parts.push(text.slice(at));
  return el("li", {}, el("span", { className: "summary-text" }, parts), expander(whole), box);
}

function citeButton(id, number, box) {
  const attrs = {
    type: "button",
    className: "cite",
    "data-ref": id,
    title: `memory ${short(id, 200)}`,
    "aria-label": `Show memory ${number} (${id.slice(0, 8)})`,
    "aria-expanded": "false",
    "aria-controls": box.id,
  };
  const button = el("button", attrs, String(number));
  button.addEventListener("click", () => toggleCitation(id, button, box));
  return button;
}

async function toggleCitation(id, button, box) {
  const open = button.getAttribute("aria-expanded") === "true";
  for (const other of box.parentElement.querySelectorAll(".cite")) {
    other.setAttribute("aria-expanded", "false");
  }
  if (open) {
    box.hidden = true;
    return;
  }
  button.setAttribute("aria-expanded", "true");
  box.hidden = false;
  box.replaceChildren(el("p", { className: "hint" }, "Loading the memory…"));
  const user = encodeURIComponent(userId());
  try {
    const memory = await api("GET", `v1/memories/${encodeURIComponent(id)}?user_id=${user}`);
    if (button.getAttribute("aria-expanded") === "true") box.replaceChildren(...memoryView(memory));
  } catch (error) {
    const problem = problemOf(error);
    const status = problem.status ? ` (${short(problem.status, 10)})` : "";
    const text = `${short(problem.title, 200)}${status}: ${short(problem.detail, PREVIEW)}`;
    box.replaceChildren(el("p", { role: "alert", className: "error-text" }, text));
  }
}

function memoryView(memory) {
  return [
    longText("p", { className: "cited-text" }, String(memory.memory ?? "")),
    el(
      "p",
      { className: "item-meta" },
      el("span", { className: `badge memory-status status-${short(memory.status, 40)}` }, short(memory.status, 40)),
      el("span", { className: "badge" }, short(memory.memory_type, 40)),
      el("span", { className: "badge" }, `importance ${fmt(memory.importance)}`),
      el("span", { className: "badge memory-validity" }, short(validity(memory.valid_from, memory.valid_to), 120)),
      memory.superseded_by ? el("span", { className: "badge" }, `replaced by ${short(memory.superseded_by, 200)}`) : null,
    ),
    el("p", { className: "hint" }, `id ${short(memory.id, 200)}`),
  ];
}

// ---------------------------------------------------------------- the Markdown files

function fileButton(name) {
  const attrs = { type: "button", className: "file-button", "aria-controls": "memory-file" };
  const button = el("button", attrs, `Show ${name}`);
  button.addEventListener("click", () => showFile(name));
  return button;
}

/** Fetch index.md or <category>.md and show it as text (never rendered as Markdown). */
async function showFile(name) {
  const user = userId();
  if (!noUserProblem(user)) return;
  setStatus("categories-status", `Loading ${short(name, 100)}…`);
  const path = `v1/users/${encodeURIComponent(user)}/memory/${encodeURIComponent(name)}`;
  try {
    const text = await apiText(path);
    const title = `${short(name, 100)} of ${short(user, 80)}`;
    $("memory-file-title").textContent = title;
    // The file may be megabytes: laid out in blocks, only those on screen (see common.js).
    $("memory-file").replaceChildren(...fullText(text));
    $("memory-file-box").hidden = false;
    let lines = 1;
    for (let i = text.indexOf("\n"); i !== -1; i = text.indexOf("\n", i + 1)) lines++;
    setStatus("categories-status", `${title}: ${plural(lines, "line")}.`);
    $("memory-file").focus();
  } catch (error) {
    setStatus("categories-status", `${short(name, 100)} could not be loaded.`);
    showProblem("categories-error", problemOf(error));
  }
}
