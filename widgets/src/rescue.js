// Side views that a page reload leaves on "Loading widget...".
//
// JupyterLab restores a "Create New View for Cell Output" view with the page, before the notebook
// has a widget manager; @jupyter-widgets/jupyterlab-manager (8.1 on JupyterLab 4) hands the
// manager to the notebook's own outputs but never to such a view (it looks for the view one level
// too shallow), so the view waits for good. A view of the panel that did render looks for such
// stuck views of its own cell — the workspace names the cell each side view shows — and renders
// the panel into them. Nothing else is touched: a stuck view of another cell, another notebook or
// another widget stays as JupyterLab left it.
import { cellIndexOfWidget, notebookOf } from "./actions.js";

const STUCK_TEXT = "Loading widget...";
const WIDGET_MIME = "application/vnd.jupyter.widget-view+json";
const CLONED = /^cloned-outputs:(.*):(\d+)$/; // the workspace's key of a restored side view

/** JupyterLab's page configuration (base URL, workspace, token), or null outside JupyterLab. */
function pageConfig(doc) {
  try {
    return JSON.parse(doc.getElementById("jupyter-config-data")?.textContent || "null");
  } catch {
    return null;
  }
}

/** The cell indices the workspace's side views of `path` show (e.g. [0]), or [] when unknown. */
export async function sideViewCells(win, path) {
  const config = pageConfig(win.document);
  if (!config?.workspace || typeof win.fetch !== "function") return [];
  const base = String(config.baseUrl || "/").replace(/\/?$/, "/");
  const headers = config.token ? { Authorization: `token ${config.token}` } : {};
  try {
    const reply = await win.fetch(`${base}lab/api/workspaces/${encodeURIComponent(config.workspace)}`, {
      credentials: "same-origin",
      headers,
    });
    if (!reply.ok) return [];
    const data = (await reply.json())?.data ?? {};
    return Object.keys(data)
      .map((key) => CLONED.exec(key))
      .filter((m) => m && m[1] === path)
      .map((m) => Number(m[2]));
  } catch {
    return [];
  }
}

/** Whether the side view holding `node` belongs to the notebook at `path` (its tab says so). */
function viewOfNotebook(doc, node, path) {
  for (let el = node.parentElement; el; el = el.parentElement) {
    if (!el.id) continue;
    const tab = [...doc.querySelectorAll(".lm-TabBar-tab[data-id]")].find((t) => t.dataset.id === el.id);
    if (tab) return (tab.title || "").split("\n").includes(`Path: ${path}`);
  }
  return false;
}

/** The outputs still waiting for a widget manager in side views, each with its position. */
function stuckOutputs(doc) {
  return [...doc.querySelectorAll(".jp-LinkedOutputView .jp-OutputArea-output")]
    .filter((n) => !n.children.length && n.textContent.trim() === STUCK_TEXT && !n.hasAttribute("data-zc-panel"))
    .map((node) => {
      const child = node.closest(".jp-OutputArea-child");
      const area = child?.parentElement;
      return { node, position: area ? [...area.children].indexOf(child) : -1 };
    });
}

/**
 * Watch, for `seconds`, for side views of the panel's cell stuck on "Loading widget..." (for at
 * least `patienceMs`: a view still loading normally gets its widget first) and call
 * `mount(node)` for each. Returns a function that stops watching.
 */
export function rescueSideViews(model, win, mount, { everyMs = 1000, patienceMs = 1000, seconds = 30 } = {}) {
  const context = model?.widget_manager?.context;
  const shared = notebookOf(model);
  const path = context?.path;
  if (!path || !shared) return () => {};
  const doc = win.document;
  const firstSeen = new WeakMap();
  let cells = null; // the workspace's answer, asked once and only when a view is stuck
  let busy = false;
  const started = Date.now();
  const scan = async () => {
    if (busy) return;
    busy = true;
    try {
      const now = Date.now();
      const waiting = stuckOutputs(doc).filter(({ node }) => {
        if (!firstSeen.has(node)) firstSeen.set(node, now);
        return now - firstSeen.get(node) >= patienceMs && viewOfNotebook(doc, node, path);
      });
      if (!waiting.length) return;
      const index = cellIndexOfWidget(shared, model.get("widget_id"));
      if (index < 0) return;
      cells ??= await sideViewCells(win, path);
      // Only when every side view of this notebook shows this panel's cell can a stuck one be it.
      if (!cells.length || cells.some((i) => i !== index)) return;
      const outputs = shared.cells[index]?.toJSON?.()?.outputs ?? [];
      const position = outputs.findIndex((o) => o?.data?.[WIDGET_MIME]?.model_id === model.get("widget_id"));
      for (const { node, position: at } of waiting) {
        if (at !== position || node.hasAttribute("data-zc-panel")) continue;
        node.setAttribute("data-zc-panel", "rescued");
        mount(node);
      }
    } finally {
      busy = false;
    }
  };
  const timer = win.setInterval(() => {
    if (Date.now() - started > seconds * 1000) win.clearInterval(timer);
    else void scan();
  }, everyMs);
  void scan();
  return () => win.clearInterval(timer);
}
