// Writes to Zotero from the panel besides the staging list (PROTOCOL.md): "Save as note" on
// every answer, "Add a paper by identifier" in the tray, and the pages citations know (the
// popover and Sources open the PDF at that page through Zotero's own links).
import { test } from "node:test";
import assert from "node:assert/strict";
import { identifiersOf } from "../src/adding.js";
import { mount, sampleFinal } from "./helpers.js";

function answered(t, final = sampleFinal()) {
  const w = mount(t, { state: { staged: [] } });
  w.ask("What is attention?");
  w.model.py.send({ kind: "turn_started", turn_id: "t1", prompt: "What is attention?" });
  w.model.py.set("busy", true);
  w.model.py.event(final);
  w.model.py.set("busy", false);
  return w;
}

const sentOf = (w, kind) => w.model.sent.filter((m) => m.kind === kind);

test("Save as note asks where first, sends only after the confirm, and shows the result", (t) => {
  const w = answered(t);
  w.click(w.byId("save-note"));
  assert.equal(w.byId("note-confirm").hidden, false);
  assert.match(w.byId("note-confirm").textContent, /note in the Zotero app on this computer/);
  assert.deepEqual(sentOf(w, "save_note"), [], "nothing is sent before the confirm");
  const select = w.byId("note-destination");
  select.value = "web";
  select.dispatchEvent(new w.win.Event("change"));
  assert.match(w.byId("note-confirm").textContent, /your Zotero web library/);
  w.click(w.byId("confirm-note"));
  assert.deepEqual(sentOf(w, "save_note"), [{ kind: "save_note", turn_id: "t1", to: "web", confirmed: true }]);
  assert.equal(w.byId("save-note").disabled, true, "one save at a time");
  w.model.py.send({ kind: "note_result", turn_id: "t1", ok: true, message: "Saved the answer as a child note of item VASWANI." });
  assert.equal(w.byId("note-result").textContent, "Saved the answer as a child note of item VASWANI.");
  assert.equal(w.byId("note-result").getAttribute("data-state"), "done");
  assert.equal(w.byId("save-note").disabled, false);
});

test("Cancel on the note's confirm step sends nothing", (t) => {
  const w = answered(t);
  w.click(w.byId("save-note"));
  w.click(w.byId("cancel-note"));
  assert.equal(w.byId("note-confirm").hidden, true);
  assert.deepEqual(sentOf(w, "save_note"), []);
});

test("Add a paper by identifier: listed in a confirm step, sent with the tray's destination", (t) => {
  const w = mount(t, { state: { staged: [] } });
  w.click(w.byId("staged-toggle"));
  const input = w.byId("add-identifiers");
  input.value = "10.1038/s42256-024-00832-8, arXiv:2104.12255  978-0-262-03384-8 10.1038/s42256-024-00832-8";
  w.click(w.byId("add-papers"));
  const items = [...w.byId("add-confirm").querySelectorAll("li")].map((li) => li.textContent);
  assert.deepEqual(items, ["10.1038/s42256-024-00832-8", "arXiv:2104.12255", "978-0-262-03384-8"]);
  assert.deepEqual(sentOf(w, "add_papers"), []);
  w.click(w.byId("confirm-add"));
  assert.deepEqual(sentOf(w, "add_papers"), [{ kind: "add_papers", ids: items, to: "connector", confirmed: true }]);
  w.model.py.send({ kind: "save_result", ok: true, to: "connector", saved: ["c1", "c2"],
    failed: [{ id: "978-0-262-03384-8", title: "978-0-262-03384-8", reason: "not added: no scholarly source knows it" }],
    where: "the collection 'To read' in My Library" });
  assert.match(w.byId("save-result").textContent, /Saved 2 papers to the collection 'To read' in My Library\./);
  assert.match(w.byId("save-failed").textContent, /978-0-262-03384-8: not added/);
  assert.deepEqual(identifiersOf(" a;b , a "), ["a", "b"]);
});

test("a citation that knows its page opens the PDF there; an unsafe link never renders", (t) => {
  const final = sampleFinal();
  final.citations[0].links = { select: "zotero://select/library/items/VASWANI1", pdf: "zotero://open-pdf/library/items/PDFATT23?page=4" };
  final.citations[2].links = { pdf: "javascript:alert(1)" };
  final.cited_sources[0].links = { select: "zotero://select/library/items/VASWANI1", pdf: "zotero://open-pdf/library/items/PDFATT23" };
  const w = answered(t, final);
  const first = w.allById("citation").find((c) => c.textContent === "1");
  w.click(first);
  const link = w.byId("citation-pdf", w.byId("citation-popover"));
  assert.equal(link.getAttribute("href"), "zotero://open-pdf/library/items/PDFATT23?page=4");
  assert.equal(w.byId("citation-where", w.byId("citation-popover")).textContent, "§ 3.2 Attention · p. 4 · Open PDF at this page");
  // Sources: the paper's PDF link opens at its first cited page.
  assert.equal(w.byId("zotero-pdf").getAttribute("href"), "zotero://open-pdf/library/items/PDFATT23?page=4");
  const third = w.allById("citation").find((c) => c.textContent === "3");
  w.click(third);
  assert.equal(w.byId("citation-pdf", w.byId("citation-popover")), null);
});

test("each [n] opens the page of the sentence it stands after, not its passage's first page", (t) => {
  const final = sampleFinal();
  const pdf = "zotero://open-pdf/library/items/PDFATT23";
  final.citations[0].occurrences = [{ page: 4, page_end: 4 }, { page: 5, page_end: 6 }];
  final.citations[0].links = { select: "zotero://select/library/items/VASWANI1", pdf: `${pdf}?page=4` };
  final.citations[0].occurrence_links = [`${pdf}?page=4`, `${pdf}?page=5`];
  const w = answered(t, final);
  const ones = w.allById("citation").filter((c) => c.textContent === "1");
  assert.equal(ones.length, 2);
  w.click(ones[1]);
  const popover = w.byId("citation-popover");
  assert.equal(w.byId("citation-pdf", popover).getAttribute("href"), `${pdf}?page=5`);
  assert.match(w.byId("citation-where", popover).textContent, /p\. 5 · Open PDF at this page$/);
});
