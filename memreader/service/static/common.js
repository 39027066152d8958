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

// ---------------------------------------------------------------- long texts

// A stored memory may hold a megabyte of tags, zero-width characters and emoji: laying out
// all of it took Chromium tens of seconds, once per place it showed. So every text from the
// API shows at most PREVIEW characters until the user asks for the whole, and the whole is
// laid out in CHUNK-sized blocks with `content-visibility: auto` (app.css: .chunk), so only
// the blocks on screen are laid out: showing all of it costs what the visible part costs.
export const PREVIEW = 2000;
const CHUNK = 4096;

/** The first `limit` UTF-16 units of `text`, never cutting a surrogate pair in two. */
export function head(text, limit) {
  if (text.length <= limit) return text;
  const last = text.charCodeAt(limit - 1);
  return text.slice(0, last >= 0xd800 && last <= 0xdbff ? limit - 1 : limit);
}

/** Metadata on one line (ids, names, reasons, paths): at most `limit` characters, then "…". */
export function short(value, limit = 200) {
  const text = String(value ?? "");
  return text.length > limit ? `${head(text, limit)}…` : text;
}

/** A text's preview: all of it when short, else its first PREVIEW characters and "…". */
export function preview(text, limit = PREVIEW) {
  const value = String(text ?? "");
  return value.length > limit ? `${head(value, limit)}…` : value;
}

/** Blocks of at most CHUNK characters holding `pieces` ([text, attrs] pairs: attrs null for
 * plain text, else the attributes of a <mark>); a piece crossing a block's end is split, each
 * part keeping its attributes. Linear in the text. */
export function chunks(pieces) {
  const blocks = [];
  let block = [];
  let room = CHUNK;
  const flush = () => {
    if (block.length) blocks.push(el("span", { className: "chunk" }, block));
    block = [];
    room = CHUNK;
  };
  for (const [text, attrs] of pieces) {
    let at = 0;
    while (at < text.length) {
      const part = head(text.slice(at, at + room), room) || text.slice(at, at + 2);
      block.push(attrs ? el("mark", attrs, part) : document.createTextNode(part));
      at += part.length;
      room -= part.length;
      if (room <= 1) flush();
    }
  }
  flush();
  return blocks;
}

/** The whole of `text` as plain text nodes, in blocks laid out only while on screen. */
export function fullText(text) {
  return chunks([[String(text ?? ""), null]]);
}

const count = new Intl.NumberFormat("en");

/** Characters as Python counts them (code points): a surrogate pair is one. */
export function codePoints(text) {
  let n = text.length;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit >= 0xdc00 && unit <= 0xdfff && i && text.charCodeAt(i - 1) >= 0xd800 && text.charCodeAt(i - 1) <= 0xdbff) n--;
  }
  return n;
}

/** A "Show all (N characters)" button and the box it fills, while open, with the whole of
 * `text` (null when `text` is short enough to show whole). `previewNode`, when given, is hidden
 * while the whole shows. */
export function expander(text, previewNode = null, limit = PREVIEW) {
  const value = String(text ?? "");
  if (value.length <= limit) return null;
  const label = `Show all (${count.format(codePoints(value))} characters)`;
  const box = el("div", { className: "full-text", hidden: true, tabindex: "0" });
  const button = el("button", { type: "button", className: "show-all", "aria-expanded": "false" }, label);
  button.addEventListener("click", () => {
    const open = button.getAttribute("aria-expanded") !== "true";
    // Built when opened, dropped when closed: a closed box holds no text.
    box.replaceChildren(...(open ? fullText(value) : []));
    box.hidden = !open;
    if (previewNode) previewNode.hidden = open;
    button.setAttribute("aria-expanded", String(open));
    button.textContent = open ? "Show less" : label;
  });
  return el("div", { className: "expander" }, button, box);
}

/** An element showing `text`'s preview, with its expander when the text was cut. */
export function longText(tag, attrs, text, limit = PREVIEW) {
  const node = el(tag, attrs, preview(text, limit));
  const more = expander(text, node, limit);
  return more ? el("div", { className: "long" }, node, more) : node;
}

/** Show a problem (the API's problem document, or our own input error) in an alert region. */
export function showProblem(id, problem) {
  const box = $(id);
  if (!problem) {
    box.hidden = true;
    box.replaceChildren();
    return;
  }
  const title = short(problem.title || "Error", 200);
  const where = [];
  if (problem.scene_index != null) where.push(`scene ${short(problem.scene_index, 20)}`);
  if (problem.message_index != null) where.push(`message ${short(problem.message_index, 20)}`);
  box.replaceChildren(
    el("strong", {}, problem.status ? `${title} (${short(problem.status, 10)})` : title),
    longText("p", {}, String(problem.detail || "")),
  );
  if (where.length) box.append(el("p", { className: "hint" }, `At ${where.join(", ")}.`));
  box.hidden = false;
  // Where the user looks: the problem stands under the button that caused it; bring it into
  // view if the page had scrolled away.
  box.scrollIntoView({ block: "nearest" });
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
  const problem = data && typeof data === "object" && !Array.isArray(data) ? data : plainFailure(response, text);
  return new Problem({ status: response.status, ...problem });
}

/** A failure that is not a problem document (a proxy's page, a crashed server's text): its
 * status, and its text only when it is one short plain line (never a page or a traceback). */
function plainFailure(response, text) {
  const line = text.trim();
  const plain = line && line.length <= 300 && !line.includes("\n") && !/[<>]/.test(line);
  const detail = plain ? line : `The service answered ${response.status} without saying why.`;
  return { title: response.statusText || "The request failed", detail };
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
