// Searching the stored memories of the user: each hit with its score's parts and a History
// button. Untrusted text only ever becomes text nodes; long texts show cut (common.js).

import {
  $, api, el, fmt, longText, PREVIEW, problemOf, setStatus, short, showProblem, userId,
} from "./common.js";

export async function onSearch(event) {
  event.preventDefault();
  showProblem("search-error", null);
  const query = $("search-query").value.trim();
  if (!query) return showProblem("search-error", { title: "Nothing to search", detail: "Type a query." });
  const k = Math.max(1, Math.min(1000, Number.parseInt($("search-k").value, 10) || 10));
  const body = { user_id: userId(), query, k };
  setStatus("search-status", "Searching…");
  try {
    const answer = await api("POST", "v1/memories/search", body);
    $("hits").replaceChildren(...answer.hits.map(hitEntry));
    const n = answer.hits.length;
    setStatus("search-status", `${n} memor${n === 1 ? "y" : "ies"} found for “${short(query, 100)}”.`);
  } catch (error) {
    $("hits").replaceChildren();
    setStatus("search-status", "The search failed.");
    showProblem("search-error", problemOf(error));
  }
}

const SCORE_PARTS = [
  ["final", "final"],
  ["similarity", "similarity"],
  ["text_rank", "text rank"],
  ["importance", "importance"],
  ["decay", "decay"],
];

function hitEntry(hit) {
  const memory = hit.memory;
  const scores = el(
    "dl",
    { className: "scores" },
    SCORE_PARTS.map(([name, label]) =>
      el("div", { "data-score": name }, el("dt", {}, label), el("dd", {}, fmt(hit.score[name]))),
    ),
  );
  const history = el("div", { className: "history", hidden: true, id: `history-${memory.id}` });
  const attrs = { type: "button", "aria-expanded": "false", "aria-controls": history.id };
  const button = el("button", attrs, "History");
  button.addEventListener("click", () => toggleHistory(memory.id, button, history));
  return el(
    "li",
    { className: "hit", "data-memory-id": memory.id },
    longText("p", { className: "item-text" }, memory.memory),
    el(
      "p",
      { className: "item-meta" },
      el("span", { className: "badge" }, short(memory.status, 40)),
      el("span", { className: "badge" }, short(memory.memory_type, 40)),
    ),
    scores,
    button,
    history,
  );
}

async function toggleHistory(id, button, box) {
  if (button.getAttribute("aria-expanded") === "true") {
    button.setAttribute("aria-expanded", "false");
    box.hidden = true;
    return;
  }
  const user = encodeURIComponent(userId());
  box.hidden = false;
  box.replaceChildren(el("p", { role: "status" }, "Loading the history…"));
  button.setAttribute("aria-expanded", "true");
  try {
    const answer = await api("GET", `v1/memories/${encodeURIComponent(id)}/history?user_id=${user}`);
    box.replaceChildren(
      el("p", { role: "status" }, `${answer.history.length} change(s); now ${short(answer.status, 40)}.`),
      el("ol", { className: "entries" }, answer.history.map(historyEntry)),
    );
  } catch (error) {
    const problem = problemOf(error);
    const text = `${short(problem.title, 200)}: ${short(problem.detail, PREVIEW)}`;
    box.replaceChildren(el("p", { role: "alert", className: "error-text" }, text));
  }
}

function historyEntry(entry) {
  const changed = entry.old_memory != null || entry.new_memory != null;
  // Each side cut on its own, so a long old text cannot hide the new one.
  const side = (text) => (text == null ? "∅" : String(text));
  return el(
    "li",
    { "data-event": short(entry.event, 40) },
    el("strong", {}, short(entry.event, 40)),
    ` ${short(entry.at || "", 60)}`,
    entry.reason ? ` — ${short(entry.reason, 500)}` : "",
    changed ? longText("p", { className: "change" }, side(entry.old_memory)) : null,
    changed ? el("p", { className: "change-arrow" }, "→") : null,
    changed ? longText("p", { className: "change" }, side(entry.new_memory)) : null,
  );
}
