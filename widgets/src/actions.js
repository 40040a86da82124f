// What a researcher does with an answer: copy it, or insert it into the notebook as a Markdown
// cell with its references (https links to the papers and the pages cited: references.js).
//
// Inserting: an anywidget has no JupyterLab API handle, but in JupyterLab 4 its model's widget
// manager is the notebook's (`@jupyter-widgets/jupyterlab-manager`), whose public `context` holds
// the notebook model. The cell goes right below the cell whose output is this panel (found by the
// widget's model id in the outputs), else at the end. Elsewhere (VS Code, a plain page) there is
// no notebook to write to: the Markdown is copied instead, and the panel says so.
import { referenceLine } from "./references.js";

const WIDGET_MIME = "application/vnd.jupyter.widget-view+json";
const ZOTERO_URL = /^zotero:\/\/(select|open-pdf)\/[A-Za-z0-9/_-]+(\?page=\d{1,6})?$/;

/** A `zotero://` URL we built (select an item, open its PDF), or "" for anything else. */
export function safeZoteroUrl(url) {
  return typeof url === "string" && ZOTERO_URL.test(url) ? url : "";
}

function oneLineText(text) {
  return String(text ?? "").replace(/\s+/g, " ").trim();
}

function escapeMarkdown(text) {
  return oneLineText(text).replace(/([\\`*_[\]<>#|])/g, "\\$1");
}

/**
 * The answer as Markdown: the question, the answer, its scope, then numbered references with
 * their pages and https links (no `zotero://` links: notebook cells drop them).
 */
export function answerMarkdown({ prompt = "", answer = "", scopeLabel = "", sources = [], citations = [] }) {
  const lines = [];
  if (prompt) lines.push(`**Question:** ${escapeMarkdown(prompt)}`, "");
  lines.push(String(answer ?? "").trim(), "");
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

/** The index of the cell whose outputs show the widget `widgetId`, or -1. */
export function cellIndexOfWidget(shared, widgetId) {
  if (!widgetId) return -1;
  const cells = shared.cells ?? [];
  for (let i = 0; i < cells.length; i++) {
    const json = typeof cells[i].toJSON === "function" ? cells[i].toJSON() : cells[i];
    for (const output of json?.outputs ?? []) {
      if (output?.data?.[WIDGET_MIME]?.model_id === widgetId) return i;
    }
  }
  return -1;
}

/**
 * Insert `source` as a Markdown cell below the panel's cell. Returns the new cell's index, or -1
 * when there is no notebook to write to.
 */
export function insertMarkdownCell(model, widgetId, source) {
  const shared = notebookOf(model);
  if (!shared) return -1;
  const at = cellIndexOfWidget(shared, widgetId);
  const index = at >= 0 ? at + 1 : (shared.cells?.length ?? 0);
  shared.insertCell(index, { cell_type: "markdown", source, metadata: {} });
  return index;
}
