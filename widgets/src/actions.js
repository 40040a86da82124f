// What a researcher does with an answer: copy it, or insert it into the notebook as a Markdown
// cell with its references (https links to the papers and the pages cited: references.js).
//
// Inserting: an anywidget has no JupyterLab API handle, but in JupyterLab 4 its model's widget
// manager is the notebook's (`@jupyter-widgets/jupyterlab-manager`), whose public `context` holds
// the notebook model. The cell goes below the cell whose output is this panel (found by the
// widget's model id in the outputs), after the answers inserted there before (marked in their
// metadata), so successive inserts read in the order they were asked; else at the end. Elsewhere
// (VS Code, a plain page) there is no notebook to write to: the Markdown is copied instead, and
// the panel says so.
import { referenceLine } from "./references.js";

const WIDGET_MIME = "application/vnd.jupyter.widget-view+json";
const MARK = "zocrates_nb"; // cell metadata of an inserted answer: {zocrates_nb: {turn_id}}
const ZOTERO_URL = /^zotero:\/\/(select|open-pdf)\/[A-Za-z0-9/_-]+(\?page=\d{1,6})?$/;

/** A `zotero://` URL we built (select an item, open its PDF), or "" for anything else. */
export function safeZoteroUrl(url) {
  return typeof url === "string" && ZOTERO_URL.test(url) ? url : "";
}

function oneLineText(text) {
  return String(text ?? "").replace(/\s+/g, " ").trim();
}

function escapeMarkdown(text) {
  return oneLineText(text).replace(/([\\`*_[\]<>#|~&])/g, "\\$1");
}

const CODE = /(```[\s\S]*?```|~~~[\s\S]*?~~~|`[^`\n]*`)/;
// A `<` opening a tag or an `&` opening an entity, with the backslashes before it.
const OPENS = /(\\*)(<(?=[A-Za-z!/?])|&(?=#?\w+;))/g;

/**
 * Model and paper text written into a notebook stays text: a raw HTML tag or entity in the
 * answer is escaped (outside code, where it is text already), since a notebook renders
 * Markdown's HTML — an `<img>` would be fetched, and kept in the saved notebook.
 */
export function inertMarkdown(text) {
  return String(text ?? "")
    .split(CODE)
    .map((piece, i) => (i % 2 ? piece : piece.replace(OPENS, (all, slashes, ch) =>
      // `\<` is escaped already (the offline engine's quotes): it shows as `<`, kept as it is.
      slashes.length % 2 ? all : slashes + (ch === "&" ? "&amp;" : "&lt;"))))
    .join("");
}

/**
 * The answer as Markdown: the question, the answer, its scope, then numbered references with
 * their pages and https links (no `zotero://` links: notebook cells drop them).
 */
export function answerMarkdown({ prompt = "", answer = "", scopeLabel = "", sources = [], citations = [] }) {
  const lines = [];
  if (prompt) lines.push(`**Question:** ${escapeMarkdown(prompt)}`, "");
  lines.push(inertMarkdown(answer).trim(), "");
  if (scopeLabel) lines.push(`_Searched: ${escapeMarkdown(scopeLabel)}_`, "");
  const cited = sources.filter((s) => s.n != null);
  if (cited.length) {
    lines.push("**References**", "");
    for (const s of cited) lines.push(referenceLine(s, citations, escapeMarkdown));
    lines.push("");
  }
  return lines.join("\n").trim() + "\n";
}

/** Copy `text` to the clipboard; resolves to whether it worked. */
export async function copyText(win, text) {
  try {
    if (win.navigator?.clipboard?.writeText) {
      await win.navigator.clipboard.writeText(text);
      return true;
    }
  } catch {
    // fall back to the selection copy below (permissions, insecure context)
  }
  const doc = win.document;
  const area = doc.createElement("textarea");
  area.value = text;
  area.setAttribute("readonly", "");
  area.style.position = "fixed";
  area.style.opacity = "0";
  doc.body.append(area);
  area.select();
  let ok = false;
  try {
    ok = Boolean(doc.execCommand?.("copy"));
  } catch {
    ok = false;
  }
  area.remove();
  return ok;
}

/** The notebook's shared model (JupyterLab 4), or null when the panel is not in one. */
export function notebookOf(model) {
  const shared = model?.widget_manager?.context?.model?.sharedModel;
  return shared && typeof shared.insertCell === "function" ? shared : null;
}

function cellJson(cell) {
  return typeof cell?.toJSON === "function" ? cell.toJSON() : cell;
}

/** The index of the cell whose outputs show the widget `widgetId`, or -1. */
export function cellIndexOfWidget(shared, widgetId) {
  if (!widgetId) return -1;
  const cells = shared.cells ?? [];
  for (let i = 0; i < cells.length; i++) {
    for (const output of cellJson(cells[i])?.outputs ?? []) {
      if (output?.data?.[WIDGET_MIME]?.model_id === widgetId) return i;
    }
  }
  return -1;
}

/**
 * Where the next answer goes: below the panel's cell and the answers inserted under it before,
 * or at the end of the notebook when the panel's cell is not found (`below: false`).
 */
export function insertionPoint(shared, widgetId) {
  const cells = shared.cells ?? [];
  const at = cellIndexOfWidget(shared, widgetId);
  if (at < 0) return { index: cells.length, below: false };
  let index = at + 1;
  while (index < cells.length && cellJson(cells[index])?.metadata?.[MARK]) index += 1;
  return { index, below: true };
}

/**
 * Insert `source` (the answer of `turnId`) as a Markdown cell: see `insertionPoint`. Returns
 * `{index, below}`, or null when there is no notebook to write to.
 */
export function insertMarkdownCell(model, widgetId, source, turnId = "") {
  const shared = notebookOf(model);
  if (!shared) return null;
  const where = insertionPoint(shared, widgetId);
  shared.insertCell(where.index, { cell_type: "markdown", source, metadata: { [MARK]: { turn_id: turnId } } });
  return where;
}
