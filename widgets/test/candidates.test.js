// Papers found beyond the library: the cards of a discovery turn, the Stage toggle, the staged
// tray and its confirm-before-save step (PROTOCOL.md, "discovery" and "Staging").
import { test } from "node:test";
import assert from "node:assert/strict";
import { candidateAuthors, openUrl, safeWebUrl } from "../src/candidates.js";
import { mount, sampleFinal } from "./helpers.js";

const RAFT = {
  id: "c1a2b3c4d5",
  title: "In Search of an Understandable Consensus Algorithm",
  authors: ["Diego Ongaro", "John Ousterhout", "Third Author", "Fourth Author"],
  year: 2014,
  venue: "USENIX ATC",
  doi: "10.5555/2643634.2643666",
  arxiv_id: null,
  url: null,
  pdf_url: "https://raft.github.io/raft.pdf",
  in_library: false,
  library_key: null,
  why: "Raft is a consensus algorithm for managing a replicated log.",
  sources: ["Crossref", "OpenAlex"],
};
const ZAB = {
  id: "c9f8e7d6c5",
  title: "Zab: High-performance broadcast for primary-backup systems",
  authors: ["Flavio Junqueira"],
  year: 2011,
  venue: "",
  doi: null,
  arxiv_id: "1106.1234",
  url: null,
  pdf_url: null,
  in_library: false,
  library_key: null,
  why: "",
  sources: ["arXiv"],
};
const PAXOS = {
  id: "c0000paxos",
  title: "Paxos Made Simple",
  authors: ["Leslie Lamport"],
  year: 2001,
  venue: "ACM SIGACT News",
  doi: "10.1145/568425.568433",
  url: "https://lamport.azurewebsites.net/pubs/paxos-simple.pdf",
  in_library: true,
  library_key: "PAXOSKY2",
  why: "Paxos is a consensus protocol.",
  sources: ["OpenAlex"],
};

function discoveryFinal(discovery, overrides = {}) {
  return sampleFinal({ answer: "Found 3 papers on consensus.", cited_sources: [], other_sources: [], citations: [], discovery, ...overrides });
}

/** A panel with a discovery turn answered. */
function withCards(t, discovery = { query: "consensus", candidates: [RAFT, ZAB, PAXOS], errors: [] }, state = {}) {
  const w = mount(t, { state: { staged: [], ...state } });
  w.ask("find papers on consensus");
  w.model.py.event(discoveryFinal(discovery));
  const card = (id) => w.el.querySelector(`[data-testid="candidate-card"][data-candidate-id="${id}"]`);
  return { ...w, card };
}

test("a discovery record renders one card per candidate: link, authors, year, venue, ids, why, sources, PDF", (t) => {
  const w = withCards(t);
  const cards = w.allById("candidate-card");
  assert.deepEqual(cards.map((c) => c.getAttribute("data-candidate-id")), [RAFT.id, ZAB.id, PAXOS.id]);
  const raft = w.card(RAFT.id);
  const open = w.byId("candidate-open", raft);
  assert.equal(open.textContent, RAFT.title);
  assert.equal(open.getAttribute("href"), "https://doi.org/10.5555/2643634.2643666", "no url: the DOI opens it");
  assert.equal(open.getAttribute("target"), "_blank");
  assert.equal(open.getAttribute("rel"), "noopener noreferrer");
  assert.equal(w.byId("candidate-meta", raft).textContent, "Diego Ongaro, John Ousterhout, Third Author et al. · 2014 · USENIX ATC");
  assert.match(raft.textContent, /DOI 10\.5555\/2643634\.2643666/);
  assert.equal(w.byId("candidate-why", raft).textContent, RAFT.why);
  assert.equal(w.byId("candidate-sources", raft).textContent, "Found by Crossref, OpenAlex");
  assert.equal(w.byId("candidate-pdf", raft).getAttribute("href"), RAFT.pdf_url);
  assert.equal(w.byId("candidate-link", raft).getAttribute("href"), open.getAttribute("href"), "an Open link too");
  const zab = w.card(ZAB.id);
  assert.equal(w.byId("candidate-open", zab).getAttribute("href"), "https://arxiv.org/abs/1106.1234", "no url, no DOI: arXiv");
  assert.equal(w.byId("candidate-pdf", zab), null, "no PDF link without a pdf_url");
  assert.equal(w.byId("candidate-why", zab), null);
  assert.match(w.byId("candidates").textContent, /Papers beyond your library \(2\)/);
});

test("a paper the library holds has the badge, no Stage button, and comes last, collapsed", (t) => {
  const w = withCards(t);
  const held = w.card(PAXOS.id);
  assert.equal(held.getAttribute("data-in-library"), "true");
  assert.equal(w.byId("in-library-badge", held).textContent, "In your library");
  assert.equal(w.byId("stage-button", held), null);
  const section = w.byId("candidates-in-library");
  assert.equal(section.tagName, "DETAILS");
  assert.equal(section.open, false);
  assert.ok(section.contains(held));
  assert.match(section.querySelector("summary").textContent, /Already in your library \(1\)/);
  for (const id of [RAFT.id, ZAB.id]) {
    assert.equal(w.byId("in-library-badge", w.card(id)), null);
    assert.ok(w.byId("stage-button", w.card(id)));
  }
});

test("Stage sends the message; the staged trait turns the toggle into Staged ✓, whose click unstages", (t) => {
  const w = withCards(t);
  const button = w.byId("stage-button", w.card(RAFT.id));
  assert.equal(button.textContent.startsWith("Stage"), true);
  w.click(button);
  assert.deepEqual(w.model.sentOf("stage"), [{ kind: "stage", ids: [RAFT.id] }]);
  assert.equal(button.disabled, true, "pending until Python answers");
  w.model.py.set("staged", [RAFT]);
  assert.equal(button.disabled, false);
  assert.equal(button.getAttribute("aria-pressed"), "true");
  assert.match(button.textContent, /^Staged ✓/);
  assert.equal(w.byId("staged-toggle").textContent, "Staged (1)");
  w.click(button);
  assert.deepEqual(w.model.sentOf("unstage"), [{ kind: "unstage", ids: [RAFT.id] }]);
  w.model.py.set("staged", []);
  assert.equal(button.getAttribute("aria-pressed"), "false");
  assert.match(button.textContent, /^Stage/);
});

test("a refused stage (the error banner) gives the toggle back", (t) => {
  const w = withCards(t);
  const button = w.byId("stage-button", w.card(ZAB.id));
  w.click(button);
  assert.equal(button.disabled, true);
  w.model.py.set("error", "already in your library, so not staged");
  assert.equal(button.disabled, false);
  assert.equal(button.getAttribute("aria-pressed"), "false");
});

test("unsafe URLs are never links, and paper text with <script> stays text", (t) => {
  const hostile = {
    ...RAFT,
    id: "chostile01",
    title: '<script>window.pwned = 1</script><img src=x onerror="window.pwned=2">',
    url: "javascript:window.pwned=3",
    doi: null,
    pdf_url: "data:text/html,<script>window.pwned=4</script>",
    why: "<b onclick=alert(1)>bold</b>",
    authors: ["<i>Eve</i>"],
    venue: "<svg onload=alert(1)>",
    sources: ["<a href=javascript:alert(1)>x</a>"],
  };
  const w = withCards(t, { query: "<script>q</script>", candidates: [hostile], errors: ["<img src=x onerror=alert(5)>"] });
  const card = w.card("chostile01");
  assert.equal(w.byId("candidate-open", card), null, "a javascript: url (and no DOI or arXiv id) is no link");
  assert.equal(w.byId("candidate-title", card).textContent, hostile.title);
  assert.equal(w.byId("candidate-pdf", card), null, "a data: PDF url is no link");
  assert.equal(w.byId("candidate-link", card), null);
  assert.equal(w.byId("candidate-why", card).textContent, hostile.why);
  assert.equal(w.byId("discovery-notice").textContent, "<img src=x onerror=alert(5)>");
  const root = w.byId("candidates");
  assert.equal(root.querySelectorAll("script, img, svg, b, i").length, 0);
  for (const node of root.querySelectorAll("*")) {
    for (const attr of node.attributes) {
      assert.doesNotMatch(attr.name, /^on/i);
      assert.doesNotMatch(attr.value, /^\s*(javascript|data):/i);
    }
  }
  assert.equal(w.win.pwned, undefined);
});

test("safeWebUrl keeps http(s) only; openUrl falls back from a bad url to the DOI", () => {
  assert.equal(safeWebUrl("https://example.org/a b"), "https://example.org/a%20b");
  assert.equal(safeWebUrl(" JavaScript:alert(1)"), "");
  assert.equal(safeWebUrl("/relative"), "");
  assert.equal(safeWebUrl("ftp://example.org"), "");
  assert.equal(openUrl({ url: "javascript:x", doi: "10.1/x\"y" }), "https://doi.org/10.1/x%22y");
  assert.equal(openUrl({ url: "https://arxiv.org/abs/1", doi: "10.1/x" }), "https://arxiv.org/abs/1");
  assert.equal(openUrl({}), "");
  assert.equal(candidateAuthors(["A", "B"]), "A, B");
});

test("discovery off: its errors are plain notices and nothing is offered", (t) => {
  const off = "Searching beyond your library is off, so nothing was sent. To turn it on, set \"online\": {\"enabled\": true} in zocrates_config.json";
  const w = withCards(t, { query: "consensus", candidates: [], errors: [off] });
  assert.equal(w.byId("discovery-notice").textContent, off);
  assert.equal(w.allById("candidate-card").length, 0);
  assert.match(w.byId("candidates").textContent, /No papers found beyond your library/);
});

test("a turn without discovery shows no cards; history brings the cards back with the staged state", (t) => {
  const w = mount(t, { state: { staged: [ZAB] } });
  w.ask("q");
  w.model.py.event(sampleFinal());
  assert.equal(w.byId("candidates"), null);
  w.model.py.send({
    kind: "history",
    turns: [{ turn_id: "t9", prompt: "find papers", answer: "Found.", status: "answered", cited_sources: [], other_sources: [], citations: [], steps: [], checkpoint: null, chips: null, discovery: { query: "consensus", candidates: [RAFT, ZAB], errors: [] } }],
  });
  const cards = w.allById("candidate-card");
  assert.equal(cards.length, 2);
  assert.equal(w.byId("stage-button", cards[1]).getAttribute("aria-pressed"), "true");
  assert.equal(w.byId("stage-button", cards[0]).getAttribute("aria-pressed"), "false");
});

test("the tray lists the staged papers with Remove; saving asks first and sends exactly the listed ids", (t) => {
  const w = mount(t, { state: { staged: [RAFT, ZAB] } });
  const toggle = w.byId("staged-toggle");
  assert.equal(toggle.hidden, false);
  assert.equal(toggle.textContent, "Staged (2)");
  const tray = w.byId("staged-tray");
  assert.equal(tray.hidden, true);
  w.click(toggle);
  assert.equal(tray.hidden, false);
  const items = w.allById("staged-item", tray);
  assert.deepEqual(items.map((i) => i.getAttribute("data-candidate-id")), [RAFT.id, ZAB.id]);
  w.click(w.byId("unstage-button", items[1]));
  assert.deepEqual(w.model.sentOf("unstage"), [{ kind: "unstage", ids: [ZAB.id] }]);

  // Save: a confirm step names what goes where; nothing is sent before its button.
  assert.deepEqual(
    [...w.byId("save-destination").options].map((o) => [o.value, o.textContent]),
    [["connector", "Zotero app"], ["web", "Zotero web library"], ["ris", "Download RIS"], ["bibtex", "Download BibTeX"]],
  );
  w.click(w.byId("save-staged"));
  const confirm = w.byId("save-confirm");
  assert.equal(confirm.hidden, false);
  assert.match(confirm.textContent, /Save 2 papers to the Zotero app/);
  assert.match(confirm.textContent, /In Search of an Understandable Consensus Algorithm/);
  assert.match(confirm.textContent, /Zab: High-performance broadcast/);
  assert.deepEqual(w.model.sentOf("save_staged"), []);
  w.click(w.byId("cancel-save"));
  assert.equal(confirm.hidden, true);
  assert.deepEqual(w.model.sentOf("save_staged"), []);

  w.click(w.byId("save-staged"));
  w.click(w.byId("confirm-save"));
  assert.deepEqual(w.model.sentOf("save_staged"), [{ kind: "save_staged", to: "connector", ids: [RAFT.id, ZAB.id], confirmed: true }]);
  assert.match(w.byId("save-result").textContent, /Saving/);
  assert.equal(w.byId("save-staged").disabled, true, "one save at a time");

  w.model.py.send({ kind: "save_result", ok: true, to: "connector", saved: [RAFT.id], failed: [{ id: ZAB.id, title: ZAB.title, reason: "Zotero refused the item" }], where: "the collection 'Distributed systems' in My Library" });
  const result = w.byId("save-result");
  assert.match(result.textContent, /Saved 1 paper to the collection 'Distributed systems' in My Library\./);
  assert.equal(w.byId("save-failed", result).textContent, `${ZAB.title}: Zotero refused the item`);
  assert.equal(w.byId("save-pdfs", result), null, "no PDF line when Zotero was not asked");
});

test("the save result says which saved papers Zotero found a PDF for", (t) => {
  const w = mount(t, { state: { staged: [RAFT, ZAB] } });
  w.click(w.byId("staged-toggle"));
  w.model.py.send({ kind: "save_result", ok: true, to: "connector", saved: [RAFT.id, ZAB.id], failed: [], where: "My Library", attached: 1, unattached: [{ id: ZAB.id, title: ZAB.title, reason: "Zotero knows no open-access copy of it" }] });
  const result = w.byId("save-result");
  assert.match(result.textContent, /Saved 2 papers to My Library\./);
  assert.equal(w.byId("save-pdfs", result).textContent, "Zotero attached PDFs to 1 of 2.");
  assert.equal(w.byId("save-unattached", result).textContent, `${ZAB.title}: Zotero knows no open-access copy of it`);
});

test("a failed save says why in plain words; the staged list stays", (t) => {
  const w = mount(t, { state: { staged: [RAFT] } });
  w.click(w.byId("staged-toggle"));
  w.click(w.byId("save-staged"));
  w.click(w.byId("confirm-save"));
  const why = "Zotero is not running (nothing answers at http://127.0.0.1:23119): start Zotero desktop, or choose another destination (web, ris or bibtex)";
  w.model.py.send({ kind: "save_result", ok: false, to: "connector", message: why });
  assert.equal(w.byId("save-error").textContent, why);
  assert.equal(w.allById("staged-item").length, 1);
  assert.equal(w.byId("save-staged").disabled, false);
});

test("a list changed under the confirm step withdraws it", (t) => {
  const w = mount(t, { state: { staged: [RAFT, ZAB] } });
  w.click(w.byId("staged-toggle"));
  w.click(w.byId("save-staged"));
  assert.equal(w.byId("save-confirm").hidden, false);
  w.model.py.set("staged", [RAFT]);
  assert.equal(w.byId("save-confirm").hidden, true);
  assert.deepEqual(w.model.sentOf("save_staged"), []);
});

test("RIS and BibTeX arrive as a browser download (a Blob), after the same confirm step", async (t) => {
  const w = mount(t, { state: { staged: [RAFT] } });
  const blobs = [];
  w.win.URL.createObjectURL = (blob) => {
    blobs.push(blob);
    return "blob:zocrates/1";
  };
  w.win.URL.revokeObjectURL = () => {};
  const downloads = [];
  w.doc.addEventListener("click", (event) => {
    const a = event.target;
    if (a.tagName === "A" && a.hasAttribute("download")) {
      downloads.push([a.getAttribute("download"), a.getAttribute("href")]);
      event.preventDefault();
    }
  });
  w.click(w.byId("staged-toggle"));
  const select = w.byId("save-destination");
  select.value = "bibtex";
  select.dispatchEvent(new w.win.Event("change"));
  assert.equal(w.byId("save-staged").textContent, "Download…");
  w.click(w.byId("save-staged"));
  assert.match(w.byId("save-confirm").textContent, /a BibTeX file your browser downloads \(nothing is written to Zotero\)/);
  w.click(w.byId("confirm-save"));
  assert.deepEqual(w.model.sentOf("save_staged"), [{ kind: "save_staged", to: "bibtex", ids: [RAFT.id], confirmed: true }]);
  const text = "@article{ongaro2014,\n  title = {In Search of an Understandable Consensus Algorithm}\n}\n";
  w.model.py.send({ kind: "save_result", ok: true, to: "bibtex", saved: [RAFT.id], failed: [], where: "zocrates-staged.bib, downloaded by your browser", file: { name: "zocrates-staged.bib", mime: "application/x-bibtex", text } });
  assert.deepEqual(downloads, [["zocrates-staged.bib", "blob:zocrates/1"]]);
  assert.equal(blobs.length, 1);
  const read = await new Promise((resolve) => {
    const reader = new w.win.FileReader(); // jsdom's Blob has no .text()
    reader.onload = () => resolve(reader.result);
    reader.readAsText(blobs[0]);
  });
  assert.equal(read, text);
  assert.match(blobs[0].type, /application\/x-bibtex/);
  assert.match(w.byId("save-result").textContent, /Downloaded zocrates-staged\.bib \(1 paper\)/);
});

test("nothing staged: the tray still opens (to add a paper by identifier) and Save is disabled", (t) => {
  const w = mount(t, { state: { staged: [] } });
  assert.equal(w.byId("staged-toggle").hidden, false);
  assert.equal(w.byId("staged-toggle").textContent, "Staged (0)");
  w.model.py.set("staged", [RAFT]);
  assert.equal(w.byId("staged-toggle").hidden, false);
  w.click(w.byId("staged-toggle"));
  w.model.py.set("staged", []);
  assert.equal(w.byId("save-staged").disabled, true);
  assert.equal(w.allById("staged-item").length, 0);
});

test("a save that wrote nothing says so", (t) => {
  const w = mount(t, { state: { staged: [RAFT] } });
  w.click(w.byId("staged-toggle"));
  w.click(w.byId("save-staged"));
  w.click(w.byId("confirm-save"));
  w.model.py.send({ kind: "save_result", ok: true, to: "connector", saved: [], failed: [], where: "" });
  assert.equal(w.byId("save-result").textContent, "Nothing was saved.");
});
