// The original messages of a read, and the exact characters each source of the selected item
// quotes, marked in them. Untrusted text only ever becomes text nodes. A long message shows
// its preview until asked, or until something in it is marked; then the whole, in blocks the
// browser lays out only while on screen (common.js: chunks).

import {
  $, chunks, codePoints, el, longText, preview, PREVIEW, short,
} from "./common.js";

const count = new Intl.NumberFormat("en");
// "scene:message:part" -> {node, text, full, index, more, ranges}: the text a span indexes.
const slots = new Map();

/** Render what was sent, one block per message, remembering each text a span may index. */
export function renderOriginal(request) {
  slots.clear();
  $("sources").replaceChildren();
  const blocks = request.scenes.map((scene, s) => {
    if (request.type === "doc") return docBlock(scene, s);
    const messages = typeof scene === "string" ? [{ role: null, content: scene }] : scene;
    return el(
      "section",
      { className: "scene", "aria-label": `Scene ${s}` },
      request.scenes.length > 1 ? el("h4", {}, `Scene ${s}`) : null,
      messages.map((message, m) => messageBlock(message, s, m)),
    );
  });
  $("scenes").replaceChildren(...blocks);
}

function docBlock(doc, s) {
  const name = short(doc && doc.file ? doc.file.filename : `document ${s}`, 120);
  return el(
    "section",
    { className: "scene", "aria-label": `Document ${s}` },
    el("p", { className: "message doc" }, `${name}: its converted text is on the server; `
      + "select an item to see the text each source quotes."),
  );
}

function messageBlock(message, s, m) {
  const content = message && message.content;
  const parts = Array.isArray(content)
    ? content.map((part, p) => partNode(part, s, m, p))
    : [textSlot(typeof content === "string" ? content : "", s, m, null)];
  return el(
    "article",
    { className: `message role-${message.role}`, "data-scene": s, "data-message": m },
    el(
      "header",
      {},
      el("strong", {}, short(message.role || "text", 40)),
      message.chat_time ? el("time", {}, ` ${short(message.chat_time, 60)}`) : null,
      el("span", { className: "hint" }, ` · message ${m}`),
    ),
    parts,
  );
}

function partNode(part, s, m, p) {
  if (typeof part === "string") return textSlot(part, s, m, p);
  if (part && (part.type === "text" || part.type === "refusal")) {
    return textSlot(String(part.text ?? part.refusal ?? ""), s, m, p);
  }
  return el("p", { className: "placeholder" }, `[${short((part && part.type) || "part", 40)} ${p}]`);
}

function slotKey(s, m, p) {
  return `${s}:${m}:${p ?? ""}`;
}

function textSlot(text, s, m, p) {
  const node = el("div", { className: "text" });
  const slot = { node, text, full: false, index: null, more: null };
  if (text.length > PREVIEW) {
    slot.more = el("button", { type: "button", className: "show-all", "aria-expanded": "false" });
    slot.more.addEventListener("click", () => {
      slot.full = !slot.full;
      paintSlot(slot, slot.ranges || []);
    });
  }
  paintSlot(slot, []);
  slots.set(slotKey(s, m, p), slot);
  return slot.more ? el("div", { className: "long" }, node, slot.more) : node;
}

// ---------------------------------------------------------------- highlighting

/** Offsets from the server count code points (Python); JS strings count UTF-16 units. Each
 * slot keeps, built once in one pass, the UTF-16 index of every STEP-th code point, so an
 * offset costs at most STEP steps however long the text and however many sources mark it. */
const STEP = 256;

function utf16Offset(slot, codePoints) {
  const text = slot.text;
  if (!slot.index) {
    slot.index = [0];
    for (let i = 0, n = 0; i < text.length; n++) {
      i += text.codePointAt(i) > 0xffff ? 2 : 1;
      if ((n + 1) % STEP === 0) slot.index.push(i);
    }
  }
  const k = Math.min(Math.floor(codePoints / STEP), slot.index.length - 1);
  let i = slot.index[k];
  for (let n = k * STEP; n < codePoints && i < text.length; n++) i += text.codePointAt(i) > 0xffff ? 2 : 1;
  return i;
}

function clearMarks() {
  for (const slot of slots.values()) {
    if (slot.ranges && slot.ranges.length) paintSlot(slot, []);
  }
}
/** Mark exactly the characters each chat source quotes; list every source with a note. */
export function markSources(item) {
  clearMarks();
  const ranges = new Map(); // slot key -> [{start, end, indexes}]
  const notes = item.metadata.sources.map((source, index) => {
    const range = sourceRange(source);
    if (!range.ok) return sourceEntry(source, index, range.note);
    const key = range.key;
    if (!ranges.has(key)) ranges.set(key, []);
    ranges.get(key).push({ start: range.start, end: range.end, indexes: [index] });
    return sourceEntry(source, index, null);
  });
  for (const [key, list] of ranges) {
    const slot = slots.get(key);
    slot.full = Boolean(slot.more); // a mark may lie anywhere in a long text: all of it shows
    paintSlot(slot, mergeRanges(list));
  }
  $("sources").replaceChildren(...notes);
  const first = document.querySelector("#scenes mark[data-source]");
  if (first) first.scrollIntoView({ block: "center" });
}

/** Where a source sits in the rendered text, or why it cannot be marked. */
function sourceRange(source) {
  if (!Array.isArray(source.span)) {
    return { ok: false, note: "no span: it stands for an image, a file or another non-text part" };
  }
  if (source.type !== "chat") return { ok: false, note: null }; // a document's text: quoted
  const key = slotKey(source.scene_index, source.message_index, source.part_index);
  const slot = slots.get(key);
  if (!slot) return { ok: false, note: "its message is not shown on this page" };
  const start = utf16Offset(slot, source.span[0]);
  const end = utf16Offset(slot, source.span[1]);
  // After a transformation (redact) the span indexes the transformed text: never mark wrong
  // characters, show the quoted text instead.
  if (slot.text.slice(start, end) !== source.content) {
    const how = (source.transformed_by || []).join(", ") || "a reader step";
    return { ok: false, note: `the message was changed by ${how}; quoted text shown instead` };
  }
  if (start === end) return { ok: false, note: "empty span" };
  return { ok: true, key, start, end };
}

/** Identical or overlapping spans share one mark (marks cannot nest cleanly). */
function mergeRanges(list) {
  list.sort((a, b) => a.start - b.start || a.end - b.end);
  const merged = [];
  for (const range of list) {
    const top = merged[merged.length - 1];
    if (top && range.start < top.end) {
      top.end = Math.max(top.end, range.end);
      top.indexes.push(...range.indexes);
    } else {
      merged.push({ ...range, indexes: [...range.indexes] });
    }
  }
  return merged;
}

/** Show a slot's text with `ranges` marked: whole when short; a long one shows its preview,
 * or (shown all, as it is once something in it is marked) the whole in blocks that are laid
 * out only while on screen. Linear in the text and the ranges. */
function paintSlot(slot, ranges) {
  slot.ranges = ranges;
  const { text } = slot;
  const pieces = [];
  let at = 0;
  for (const { start, end, indexes } of ranges) {
    if (start > at) pieces.push([text.slice(at, start), null]);
    pieces.push([text.slice(start, end), { "data-source": indexes.join(" ") }]);
    at = end;
  }
  if (at < text.length) pieces.push([text.slice(at), null]);
  if (!slot.more) {
    slot.node.replaceChildren(...pieces.map(([t, a]) => (a ? el("mark", a, t) : document.createTextNode(t))));
    return;
  }
  slot.node.classList.toggle("full-text", slot.full);
  slot.node.replaceChildren(...(slot.full ? chunks(pieces) : [preview(text)]));
  slot.more.setAttribute("aria-expanded", String(slot.full));
  slot.more.textContent = slot.full ? "Show less" : `Show all (${count.format(codePoints(text))} characters)`;
}

function sourceEntry(source, index, note) {
  const where = [
    source.role && short(source.role, 40),
    source.type !== "chat" && short(source.type, 40),
    `scene ${short(source.scene_index, 20)}`,
    `message ${short(source.message_index, 20)}`,
    source.part_index != null && `part ${short(source.part_index, 20)}`,
    Array.isArray(source.span) && `characters ${short(source.span[0], 20)}–${short(source.span[1], 20)}`,
    source.doc_path && `file ${short(source.doc_path, 300)}`,
    source.heading && `heading “${short(source.heading, 300)}”`,
    source.chunk_index != null && `chunk ${short(source.chunk_index, 20)}`,
    source.chunk_count != null && `of ${short(source.chunk_count, 20)}`,
  ].filter(Boolean);
  // Documents (and anything not marked) have no message here to light up: quote the source.
  const quote = source.type !== "chat" || note;
  return el(
    "li",
    { "data-source-index": index },
    el("span", {}, `Source ${index + 1}: ${where.join(" · ")}`),
    note ? el("span", { className: "hint" }, ` — ${note}`) : null,
    quote && source.content ? longText("blockquote", { className: "quote" }, String(source.content)) : null,
  );
}
