// Helpers shared by the page's modules: DOM building (text nodes only: whatever the API
// returns is untrusted and never parsed as HTML), status and problem regions, and the API.

export const $ = (id) => document.getElementById(id);

/** An element; string children become text nodes (never parsed as HTML). */
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (name === "className") node.className = value;
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

export function setStatus(id, text) {
  $(id).textContent = text;
}

/** Show a problem (the API's problem document, or our own input error) in an alert region. */
export function showProblem(id, problem) {
  const box = $(id);
  if (!problem) {
    box.hidden = true;
    box.replaceChildren();
    return;
  }
  const title = problem.status ? `${problem.title} (${problem.status})` : problem.title;
  const where = [];
  if (problem.scene_index != null) where.push(`scene ${problem.scene_index}`);
  if (problem.message_index != null) where.push(`message ${problem.message_index}`);
  box.replaceChildren(el("strong", {}, title || "Error"), el("p", {}, problem.detail || ""));
  if (where.length) box.append(el("p", { className: "hint" }, `At ${where.join(", ")}.`));
  box.hidden = false;
}

/** The problem document an error carries (or one made from any other error). */
export function problemOf(error) {
  return error.problem || { title: "Error", detail: String(error) };
}

export function plural(n, word, many = `${word}s`) {
  return `${n} ${n === 1 ? word : many}`;
}

export function fmt(value) {
  if (value === null || value === undefined) return "—";
  if (typeof value !== "number") return String(value);
  return Number.isInteger(value) ? String(value) : value.toFixed(3);
}

/** "valid from X to Y", or "valid: undated". */
export function validity(from, to) {
  const range = [from && `from ${from}`, to && `to ${to}`].filter(Boolean).join(" ");
  return range ? `valid ${range}` : "valid: undated";
}

export function userId() {
  return $("user-id").value.trim();
}

// ---------------------------------------------------------------- the API

export class Problem extends Error {
  constructor(problem) {
    super(problem.detail || problem.title);
    this.problem = problem;
  }
}

/** Call the API (paths relative to the page, so a proxy prefix keeps working); the body text
 * of a successful answer, or a Problem. */
async function call(method, path, body, accept) {
  const headers = { accept };
  if (body !== undefined) headers["content-type"] = "application/json";
  const key = $("api-key").value.trim();
  if (key) headers.authorization = `Bearer ${key}`;
  let response;
  try {
    const init = { method, headers, body: body === undefined ? undefined : JSON.stringify(body) };
    response = await fetch(new URL(`../${path}`, window.location.href), init);
  } catch (error) {
    throw new Problem({ title: "Network error", detail: `The service did not answer: ${error.message}` });
  }
  const text = await response.text();
  if (!response.ok) throw failure(response, text);
  return text;
}

function failure(response, text) {
  let data = null;
  try {
    data = JSON.parse(text);
  } catch {
    // not JSON: a proxy's error page, say; shown as plain text
  }
  const fallback = { title: response.statusText || "HTTP error", detail: text.slice(0, 500) };
  const problem = data && typeof data === "object" ? data : fallback;
  return new Problem({ status: response.status, ...problem });
}

/** A JSON call: the parsed answer. */
export async function api(method, path, body) {
  const text = await call(method, path, body, "application/json");
  try {
    return JSON.parse(text);
  } catch {
    throw new Problem({ title: "Not JSON", detail: `The service answered: ${text.slice(0, 500)}` });
  }
}

/** A GET of a text file (the Markdown memory files): its text. */
export async function apiText(path) {
  return call("GET", path, undefined, "text/markdown, text/plain");
}
