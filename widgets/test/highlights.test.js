// "Highlight in Zotero" on every answer and the header's retracted papers (PROTOCOL.md): the
// button asks Python for a dry run first, the confirm step lists what will be written and
// skipped, and only its button sends `confirmed: true`.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mount, sampleFinal } from "./helpers.js";

function answered(t, state = {}) {
  const w = mount(t, { state: { staged: [], ...state } });
  w.ask("What is attention?");
  w.model.py.send({ kind: "turn_started", turn_id: "t1", prompt: "What is attention?" });
  w.model.py.set("busy", true);
  w.model.py.event(sampleFinal());
  w.model.py.set("busy", false);
  return w;
}

const sentOf = (w, kind) => w.model.sent.filter((m) => m.kind === kind);
const DRY = {
  kind: "annotate_result", turn_id: "t1", ok: true, dry_run: true, message: "",
  highlights: [{ title: "Attention Is All You Need", page_label: "3", quote: "An attention function maps a query <b>and</b> keys.", state: "would write" }],
  skipped: [{ quote: "Attention is nice.", title: "", why: "written in the answer's own words, not quoted from the paper" }],
};

test("Highlight in Zotero shows a dry run in a confirm step and writes only after it", (t) => {
  const w = answered(t);
  w.click(w.byId("highlight-quotes"));
  assert.deepEqual(sentOf(w, "annotate"), [{ kind: "annotate", turn_id: "t1" }], "a dry run first");
  assert.equal(w.byId("highlight-quotes").disabled, true);
  w.model.py.send(DRY);
  const confirm = w.byId("highlight-confirm");
  assert.equal(confirm.hidden, false);
  assert.match(confirm.textContent, /Write 1 highlight in your Zotero web library\?/);
  const items = [...confirm.querySelectorAll("li")].map((li) => li.textContent);
  assert.deepEqual(items, [
    "Attention Is All You Need, p. 3: “An attention function maps a query <b>and</b> keys.”",
    "Skipped: “Attention is nice.”: written in the answer's own words, not quoted from the paper",
  ]);
  assert.equal(confirm.querySelector("b"), null, "paper text stays text");
  w.click(w.byId("confirm-highlights"));
  assert.deepEqual(sentOf(w, "annotate").at(-1), { kind: "annotate", turn_id: "t1", confirmed: true });
  w.model.py.send({ ...DRY, dry_run: false, highlights: [{ ...DRY.highlights[0], state: "written" }] });
  assert.match(w.byId("highlight-result").textContent, /Highlights written\..*\(written\)/);
  assert.equal(w.byId("highlight-result").getAttribute("data-state"), "done");
});

test("Cancel on the highlights' confirm step writes nothing", (t) => {
  const w = answered(t);
  w.click(w.byId("highlight-quotes"));
  w.model.py.send(DRY);
  w.click(w.byId("cancel-highlights"));
  assert.equal(w.byId("highlight-confirm").hidden, true);
  assert.equal(sentOf(w, "annotate").length, 1);
});

test("the header names the library's retracted papers", (t) => {
  const w = answered(t, { library: { items: 3, collections: 0, examples: [],
    retracted: [{ item_key: "K", title: "Dynamo", notice: "this paper was retracted in 2021" }],
    retractions: "Retractions (17 DOIs, last checked 2026-12-01): Dynamo: this paper was retracted in 2021." } });
  const badge = w.byId("retracted-badge");
  assert.equal(badge.hidden, false);
  assert.equal(badge.textContent, "⚠ 1 retracted");
  assert.match(badge.title, /Dynamo: this paper was retracted in 2021/);
  w.model.py.set("library", { items: 3, collections: 0, examples: [], retracted: [], retractions: "" });
  assert.equal(badge.hidden, true);
});

test("a cited source the scholarly record flags says so in its row", (t) => {
  const final = sampleFinal();
  final.cited_sources[0] = { ...final.cited_sources[0], retracted: true, notice: "this paper was retracted in 2021" };
  const w = mount(t, { state: { staged: [] } });
  w.ask("What is attention?");
  w.model.py.send({ kind: "turn_started", turn_id: "t1", prompt: "What is attention?" });
  w.model.py.event(final);
  assert.equal(w.byId("source-retracted").textContent, "⚠ this paper was retracted in 2021");
});
