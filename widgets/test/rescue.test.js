// A side view ("Create New View for Cell Output") that JupyterLab restored with a reloaded page
// never gets a widget manager and says "Loading widget..." for good: the panel's own view renders
// the panel into it, when the workspace says the side view shows the panel's cell.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mount } from "./helpers.js";

const PANEL = { output_type: "execute_result", data: { "application/vnd.jupyter.widget-view+json": { model_id: "w-42" } } };

/** The notebook (cell 1 shows the panel), a stuck side view of `path`, and a workspace whose side
 * views show `cells`. */
function reloadedPage(t, { cells = [1], path = "chat.ipynb" } = {}) {
  const notebook = [{ cell_type: "code", outputs: [] }, { cell_type: "code", outputs: [PANEL] }];
  const shared = { cells: notebook.map((json) => ({ toJSON: () => json })), insertCell() {} };
  const w = mount(t, {
    state: { widget_id: "w-42" },
    widgetManager: { context: { path: "chat.ipynb", model: { sharedModel: shared } } },
  });
  const config = w.doc.createElement("script");
  config.id = "jupyter-config-data";
  config.type = "application/json";
  config.textContent = JSON.stringify({ baseUrl: "/lab-base/", workspace: "default", token: "tok" });
  w.doc.head.append(config);
  const tab = w.doc.createElement("li");
  tab.className = "lm-TabBar-tab";
  tab.dataset.id = "id-side";
  tab.title = `Name: chat.ipynb\nPath: ${path}\nLast Saved: today`;
  const side = w.doc.createElement("div");
  side.id = "id-side";
  side.innerHTML =
    '<div class="jp-LinkedOutputView" id="LinkedOutputView-1"><div class="jp-OutputArea">' +
    '<div class="jp-OutputArea-child"><div class="jp-OutputArea-output">Loading widget...</div></div></div></div>';
  w.doc.body.append(tab, side);
  const asked = [];
  const data = Object.fromEntries(cells.map((i) => [`cloned-outputs:${path}:${i}`, { data: { path, index: i } }]));
  w.win.fetch = async (url, options) => {
    asked.push({ url, options });
    return { ok: true, json: async () => ({ data }) };
  };
  return { ...w, side, asked, stuck: side.querySelector(".jp-OutputArea-output") };
}

test("a side view of the panel's cell stuck after a reload gets the panel, which ends when it closes", async (t) => {
  const w = reloadedPage(t);
  const listeners = () => w.model.handlers.get("msg:custom").size;
  assert.equal(listeners(), 1);
  await w.sleep(2700); // stuck for longer than a view that is merely loading
  const rescued = w.stuck.querySelector(".zc-chat");
  assert.ok(rescued, "the panel is rendered into the stuck side view");
  assert.equal(w.stuck.textContent.includes("Loading widget..."), false);
  assert.deepEqual(w.asked.map((a) => a.url), ["/lab-base/lab/api/workspaces/default"]);
  assert.equal(w.asked[0].options.headers.Authorization, "token tok");
  assert.equal(listeners(), 2, "the side view listens to the model like any view");
  assert.equal(w.model.sentOf("open_session").length, 2, "and asks for the session's history");
  w.model.py.send({ kind: "history", turns: [{ turn_id: "a", prompt: "Q1", answer: "A1", status: "answered", steps: [] }] });
  assert.equal(rescued.querySelectorAll('[data-testid="assistant-message"]').length, 1);
  w.side.remove(); // the researcher closes the side view
  await w.sleep(300);
  assert.equal(listeners(), 1, "its view is disposed");
});

test("a stuck side view of another cell or another notebook is left alone", async (t) => {
  const other = reloadedPage(t, { cells: [0] });
  const elsewhere = reloadedPage(t, { path: "other.ipynb" });
  await other.sleep(2700);
  assert.equal(other.stuck.textContent, "Loading widget...");
  assert.equal(elsewhere.stuck.textContent, "Loading widget...");
  assert.equal(elsewhere.asked.length, 0, "another notebook's view is not even looked up");
});
