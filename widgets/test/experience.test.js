// The notebook experience (issue 12): a restarted kernel, a question asked while a checkpoint
// waits, long questions, the scope of each question, copy / insert / regenerate / edit, Zotero
// links, session rename / delete / search, the empty screen, "Loading models…".
import { test } from "node:test";
import assert from "node:assert/strict";
import { answerMarkdown, cellIndexOfWidget } from "../src/actions.js";
import { checkpointTitle } from "../src/checkpoint.js";
import { markdownToSafeHtml } from "../src/markdown.js";
import MarkdownIt from "markdown-it";
import { mount, sampleCheckpoint, sampleFinal } from "./helpers.js";

const ZOTERO_SOURCES = [
  {
    n: 1,
    numbers: [1, 2],
    item_key: "B4BVDRMA",
    title: "In Search of an Understandable Consensus Algorithm",
    authors: ["Diego Ongaro", "John Ousterhout"],
    year: 2014,
    tier: "cited",
    links: { select: "zotero://select/library/items/B4BVDRMA", pdf: "zotero://open-pdf/library/items/YH7LQ4ZJ" },
    href: "https://doi.org/10.5555/2643634.2643666",
  },
  { n: 3, item_key: "EVIL0001", title: "Hostile", authors: [], year: null, tier: "cited", links: { select: "javascript:alert(1)" } },
];

function answered(t, state = {}, final = sampleFinal()) {
  const w = mount(t, { state });
  w.ask("How does Raft elect a leader?");
  w.model.py.send({ kind: "turn_started", turn_id: "t1", prompt: "How does Raft elect a leader?" });
  w.model.py.set("busy", true);
  w.model.py.event(final);
  w.model.py.set("busy", false);
  return w;
}

function pausedPanel(t, checkpoint = sampleCheckpoint()) {
  const w = mount(t);
  w.ask("Survey attention variants");
  w.model.py.send({ kind: "turn_started", turn_id: "t1", prompt: "Survey attention variants" });
  w.model.py.set("busy", true);
  w.model.py.event(checkpoint);
  w.model.py.set("busy", false);
  return w;
}

// ---------------------------------------------------------------------------- kernel restart

test("a restarted kernel: the panel says it is disconnected and how to reconnect, and sends nothing", (t) => {
  const w = pausedPanel(t);
  const before = w.model.sent.length;
  // What ipywidgets does on a restart: the view's element is marked, then comm_live_update fires.
  w.el.classList.add("jupyter-widgets-disconnected");
  w.model.emit("comm_live_update");
  const banner = w.byId("disconnected-banner");
  assert.equal(banner.hidden, false);
  assert.match(banner.textContent, /Disconnected from the kernel/);
  assert.match(banner.textContent, /Run the panel's cell again to reconnect/);
  assert.equal(w.el.querySelector(".zc-chat").getAttribute("data-connection"), "lost");
  assert.equal(w.byId("chat-input").disabled, true);
  w.click(w.byId("synthesize-button"));
  w.byId("chat-input").disabled = false; // even if typed into, Enter sends nothing
  w.ask("Anything?");
  assert.equal(w.model.sent.length, before, "nothing is sent to a dead kernel");
  assert.equal(w.byId("checkpoint-card").hasAttribute("data-decision"), false, "the card is not marked decided");
});

test("a comm update while the widget is still live does not disconnect", (t) => {
  const w = mount(t);
  w.model.emit("comm_live_update"); // e.g. the comm coming up after a page reload
  assert.equal(w.byId("disconnected-banner").hidden, true);
  assert.equal(w.byId("chat-input").disabled, false);
});

test("the kernel status signal of the notebook session marks the panel disconnected", (t) => {
  let onStatus = null;
  const signal = { connect: (fn) => (onStatus = fn), disconnect: () => {} };
  const w = mount(t, { widgetManager: { context: { sessionContext: { statusChanged: signal } } } });
  assert.equal(typeof onStatus, "function");
  onStatus(null, "busy");
  assert.equal(w.byId("disconnected-banner").hidden, true);
  onStatus(null, "restarting");
  assert.equal(w.byId("disconnected-banner").hidden, false);
});

test("a send that throws (\"Cannot send\") shows the disconnected state instead of failing silently", (t) => {
  const w = mount(t);
  w.model.send = () => {
    throw new Error("Cannot send");
  };
  w.ask("Hello?");
  assert.equal(w.byId("disconnected-banner").hidden, false);
  assert.equal(w.allById("assistant-message").length, 0, "no bubble waits for an answer that cannot come");
});

// ---------------------------------------------------------------------------- ask while paused

test("asking while a checkpoint waits: a plain hint, the question kept, nothing sent", (t) => {
  const w = pausedPanel(t);
  const asks = w.model.sentOf("ask").length;
  w.ask("And another question?");
  assert.equal(w.model.sentOf("ask").length, asks);
  const hint = w.byId("paused-hint");
  assert.equal(hint.hidden, false);
  assert.match(hint.textContent, /paused at a checkpoint/);
  assert.match(hint.textContent, /Synthesize with current evidence/);
  assert.doesNotMatch(hint.textContent, /turn |pending checkpoint|[0-9a-f]{8}/, "no internal text");
  assert.equal(w.byId("chat-input").value, "And another question?", "the question is not lost");
  assert.equal(w.allById("assistant-message").length, 1, "no failed bubble");
  // Deciding on the card unblocks the input.
  w.click(w.byId("synthesize-button"));
  w.model.py.set("busy", true);
  w.model.py.event(sampleFinal());
  w.model.py.set("busy", false);
  w.ask("And another question?");
  assert.equal(w.model.sentOf("ask").at(-1).prompt, "And another question?");
});

test("Python's refusal before a turn begins fails only the waiting bubble and frees the input", (t) => {
  const w = mount(t);
  w.ask("Too soon?");
  w.model.py.event({ type: "error", turn_id: "", message: "A question in this session is paused at a checkpoint." });
  assert.equal(w.byId("assistant-message").getAttribute("data-status"), "error");
  assert.equal(w.byId("send-button").hidden, false);
});

// ---------------------------------------------------------------------------- long questions

test("a long question: a counter near the limit, and past it a clear message instead of sending", (t) => {
  const w = mount(t, { state: { max_prompt: 100 } });
  const input = w.byId("chat-input");
  w.type(input, "x".repeat(50));
  assert.equal(w.byId("input-counter").hidden, true);
  w.type(input, "x".repeat(90));
  assert.equal(w.byId("input-counter").hidden, false);
  assert.equal(w.byId("input-counter").textContent, "90 / 100");
  w.type(input, "y".repeat(150));
  assert.match(w.byId("input-counter").textContent, /150 \/ 100 characters: too long/);
  w.key(input, "Enter");
  assert.equal(w.model.sentOf("ask").length, 0);
  assert.equal(input.value.length, 150, "nothing typed is lost");
  w.type(input, "y".repeat(99));
  w.key(input, "Enter");
  assert.equal(w.model.sentOf("ask").length, 1);
});

test("a step is one line: a long label shows its first words", (t) => {
  const w = mount(t);
  w.ask("Long");
  w.model.py.send({ kind: "turn_started", turn_id: "t1", prompt: "Long" });
  const long = `Searching the library for “${"word ".repeat(4000)}”`;
  w.model.py.event({ type: "step", turn_id: "t1", phase: "route", label: long });
  const label = w.byId("step").querySelector(".zc-step-label");
  assert.ok(label.textContent.length <= 120 && label.textContent.endsWith("…"));
  assert.ok(label.title.length <= 400);
});

// ---------------------------------------------------------------------------- scope in history

test("each question shows the scope it ran under, live and in a reopened session", (t) => {
  const scope = { mode: "items", items: [{ key: "A1", title: "Attention Is All You Need", year: 2017 }], collections: [] };
  const w = mount(t, { state: { scope } });
  w.ask("What is attention?");
  const chips = w.byId("turn-scope", w.byId("user-message"));
  assert.equal(chips.textContent, "Attention Is All You Need");
  w.model.py.send({
    kind: "history",
    turns: [
      { turn_id: "a", prompt: "Q1", answer: "A", status: "answered", steps: [{ phase: "search", label: "Looked", seconds: 0.4 }], chips: { mode: "collections", items: [], collections: [{ key: "C1", name: "Systems" }] } },
      { turn_id: "b", prompt: "Q2", answer: "B", status: "answered", steps: [], chips: { mode: "library", items: [], collections: [] } },
    ],
  });
  const scopes = w.allById("turn-scope").map((e) => e.textContent);
  assert.deepEqual(scopes, ["Systems", "Whole library"]);
  assert.equal(w.allById("step").length, 1, "the stored step trail is shown");
});

// ---------------------------------------------------------------------------- answer actions

test("copy puts the answer with its question, scope and references (https links, pages) on the clipboard", async (t) => {
  const w = answered(t, {}, sampleFinal({ cited_sources: ZOTERO_SOURCES }));
  let copied = null;
  Object.defineProperty(w.win.navigator, "clipboard", { value: { writeText: async (text) => (copied = text) }, configurable: true });
  w.click(w.byId("copy-answer"));
  await w.sleep(0);
  assert.match(copied, /^\*\*Question:\*\* How does Raft elect a leader\?/);
  assert.match(copied, /Transformers rely on \*\*self-attention\*\* \[1\]/);
  assert.match(copied, /_Searched: Whole library_/);
  assert.match(copied, /- \[1, 2\] \[In Search of an Understandable Consensus Algorithm\]\(https:\/\/doi\.org\/10\.5555\/2643634\.2643666\) \(Diego Ongaro, John Ousterhout, 2014\), p\. 4\n/);
  assert.match(copied, /- \[3\] Hostile\n/, "no https link known: the title alone, no page known: none");
  // Notebook cells drop zotero:// links (JupyterLab's sanitizer): none travel in the Markdown.
  assert.doesNotMatch(copied, /javascript|zotero:/);
  assert.match(w.byId("toast").textContent, /Copied/);
});

/** A notebook's shared model as JupyterLab 4 holds it: cells with `toJSON`, `insertCell`. */
function notebook(cells) {
  const shared = {
    cells: cells.map((json) => ({ toJSON: () => json })),
    insertCell: (index, cell) => shared.cells.splice(index, 0, { toJSON: () => cell }),
  };
  return shared;
}

test("successive inserts land in order below the panel's cell, each after the one before", async (t) => {
  const panelOutput = { data: { "application/vnd.jupyter.widget-view+json": { model_id: "w-42" } } };
  const shared = notebook([
    { cell_type: "code", outputs: [] },
    { cell_type: "code", outputs: [panelOutput] },
    { cell_type: "code", source: "6 * 7", outputs: [] },
  ]);
  const w = mount(t, { state: { widget_id: "w-42" }, widgetManager: { context: { model: { sharedModel: shared } } } });
  for (const [id, prompt] of [["t1", "How does Raft elect a leader?"], ["t2", "What is a fencing token?"]]) {
    w.ask(prompt);
    w.model.py.send({ kind: "turn_started", turn_id: id, prompt });
    w.model.py.event(sampleFinal({ turn_id: id, cited_sources: ZOTERO_SOURCES }));
  }
  const [first, second] = w.allById("insert-answer");
  w.click(first);
  await w.sleep(0);
  assert.match(w.byId("toast").textContent, /Inserted the answer as a Markdown cell below the panel/);
  w.click(second);
  await w.sleep(0);
  const cells = shared.cells.map((c) => c.toJSON());
  assert.equal(cells.length, 5);
  assert.deepEqual(cells.map((c) => c.cell_type), ["code", "code", "markdown", "markdown", "code"]);
  assert.match(cells[2].source, /^\*\*Question:\*\* How does Raft elect a leader\?/, "the first answer right below the panel");
  assert.match(cells[3].source, /^\*\*Question:\*\* What is a fencing token\?/, "the second one after it, not above it");
  assert.match(cells[3].source, /\*\*References\*\*/);
  assert.deepEqual(cells[3].metadata, { zocrates_nb: { turn_id: "t2" } });
  assert.equal(cells[4].source, "6 * 7", "the researcher's own cells stay below the answers");
  assert.equal(cellIndexOfWidget(shared, "nope"), -1);
});

test("with the panel's cell gone, insert appends at the end of the notebook and says so", async (t) => {
  const shared = notebook([{ cell_type: "code", outputs: [] }]);
  const w = mount(t, { state: { widget_id: "w-42" }, widgetManager: { context: { model: { sharedModel: shared } } } });
  w.ask("Q");
  w.model.py.send({ kind: "turn_started", turn_id: "t1", prompt: "Q" });
  w.model.py.event(sampleFinal());
  w.click(w.byId("insert-answer"));
  await w.sleep(0);
  assert.equal(shared.cells.length, 2);
  assert.equal(shared.cells[1].toJSON().cell_type, "markdown");
  assert.match(w.byId("toast").textContent, /at the end of the notebook/);
});

test("insert without a notebook copies the Markdown and says so", async (t) => {
  const w = answered(t);
  let copied = null;
  Object.defineProperty(w.win.navigator, "clipboard", { value: { writeText: async (text) => (copied = text) }, configurable: true });
  w.click(w.byId("insert-answer"));
  await w.sleep(0);
  assert.match(copied, /Question/);
  assert.match(w.byId("toast").textContent, /No notebook to insert into here: the answer is copied/);
});

test("regenerate asks the same question again under its scope; edit puts it back in the box", (t) => {
  const scope = { mode: "collections", items: [], collections: [{ key: "C1", name: "Systems" }] };
  const w = answered(t, { scope });
  w.model.py.set("scope", { mode: "library", items: [], collections: [] }); // the chips changed since
  w.click(w.byId("regenerate"));
  assert.deepEqual(w.model.sentOf("set_scope").at(-1).scope, scope);
  assert.equal(w.model.sentOf("ask").at(-1).prompt, "How does Raft elect a leader?");
  assert.equal(w.allById("assistant-message").length, 2);
  w.model.py.event(sampleFinal({ turn_id: "t2" }));
  w.click(w.byId("edit-question"));
  assert.equal(w.byId("chat-input").value, "How does Raft elect a leader?");
});

test("a stopped turn can be regenerated: live, and when reopened from the history", (t) => {
  const w = mount(t);
  w.ask("How does Raft elect a leader?");
  w.model.py.send({ kind: "turn_started", turn_id: "t1", prompt: "How does Raft elect a leader?" });
  w.model.py.set("busy", true);
  w.click(w.byId("stop-button"));
  w.model.py.set("busy", false);
  const bubble = w.byId("assistant-message");
  assert.equal(bubble.getAttribute("data-status"), "cancelled");
  assert.equal(w.byId("regenerate").closest(".zc-actions").hidden, false);
  assert.equal(w.byId("copy-answer").hidden, true, "nothing to copy before any text came");
  w.click(w.byId("regenerate"));
  assert.equal(w.model.sentOf("ask").at(-1).prompt, "How does Raft elect a leader?");
  assert.equal(w.allById("assistant-message").length, 2);

  w.model.py.send({ kind: "history", turns: [{ turn_id: "a", prompt: "Q1", answer: "Half an", status: "cancelled", steps: [] }] });
  assert.equal(w.byId("regenerate").closest(".zc-actions").hidden, false);
  assert.equal(w.byId("copy-answer").hidden, false, "the partial answer can be copied");
  w.click(w.byId("regenerate"));
  assert.equal(w.model.sentOf("ask").at(-1).prompt, "Q1");
});

test("'Answered by the offline engine' appears once", (t) => {
  const w = answered(t, {}, sampleFinal({ answer: "Quoted [1].\n\n_Answered by the embedded offline engine, without a language model._" }));
  assert.equal(w.el.querySelector(".zc-msg-footer").hidden, true);
  const w2 = answered(t, {}, sampleFinal({ model: "openai:gpt-5.2" }));
  assert.equal(w2.el.querySelector(".zc-msg-footer").textContent, "Answered by openai:gpt-5.2");
});

// ---------------------------------------------------------------------------- Zotero links

test("sources link to the item and the PDF in Zotero; nothing but zotero:// URLs", (t) => {
  const w = answered(t, {}, sampleFinal({ cited_sources: ZOTERO_SOURCES }));
  const select = w.byId("zotero-select");
  assert.equal(select.getAttribute("href"), "zotero://select/library/items/B4BVDRMA");
  assert.equal(w.byId("zotero-pdf").getAttribute("href"), "zotero://open-pdf/library/items/YH7LQ4ZJ");
  assert.equal(w.allById("zotero-select").length, 1, "the javascript: link is dropped");
  assert.equal(w.el.querySelectorAll("a[href^='javascript']").length, 0);
});

test("DOMPurify lets zotero: links through and still refuses javascript: and data:", (t) => {
  const w = mount(t);
  const html = markdownToSafeHtml(w.win, "[item](zotero://select/library/items/ABCD1234) [x](javascript:alert(1)) [y](data:text/html,hi) [z](vbscript:msgbox)");
  const div = w.doc.createElement("div");
  div.innerHTML = html;
  const hrefs = [...div.querySelectorAll("a")].map((a) => a.getAttribute("href"));
  assert.deepEqual(hrefs.filter(Boolean), ["zotero://select/library/items/ABCD1234"]);
  assert.equal(div.querySelector("a").hasAttribute("target"), false, "zotero links open the app, not a tab");
});

test("answerMarkdown keeps hostile titles, names and model output as text", () => {
  const evil = "<img src=x onerror=alert(1)>";
  const md = answerMarkdown({
    prompt: `Why ${evil}?`,
    answer: `*${evil}* says <script>x</script> &lt;b&gt; but \`<code>\` stays [1]`,
    scopeLabel: evil,
    sources: [{ n: 1, title: evil, authors: [`A ${evil}`], year: 2020, links: {} }],
  });
  assert.match(md, /`<code>`/, "code keeps its characters");
  // As a notebook renders a Markdown cell: its HTML allowed, nothing removed after.
  const html = new MarkdownIt({ html: true }).render(md);
  assert.doesNotMatch(html, /<(img|script)/);
  assert.match(html, /<code>&lt;code&gt;<\/code>/, "code keeps its characters");
  assert.match(html, /&amp;lt;b&amp;gt;/, "an entity the model wrote is shown as written");
  assert.match(html, /&lt;img src=x onerror=alert\(1\)&gt;/, "the title reads as written");

  // The offline engine's quotes arrive escaped already ("\\<img …"): shown as written, once.
  const quoted = new MarkdownIt({ html: true }).render(answerMarkdown({ answer: "- a \\<img src=x> and \\&lt; [1]" }));
  assert.match(quoted, /a &lt;img src=x&gt; and &amp;lt; \[1\]/);
  assert.doesNotMatch(quoted, /<img/);
});

test("answerMarkdown escapes titles so they cannot become links or markup", () => {
  const md = answerMarkdown({ answer: "A", sources: [{ n: 1, title: "[evil](javascript:x) *bold*", authors: [], links: {} }] });
  assert.match(md, /\\\[evil\\\]\(javascript:x\) \\\*bold\\\*/);
});

// ---------------------------------------------------------------------------- sessions

const SESSIONS = [
  { id: "s1", title: "Raft questions", updated: "2025-01-02T10:00:00Z", paused: false },
  { id: "s2", title: "Lock services survey", updated: "2025-01-01T10:00:00Z", paused: true },
  { id: "s3", title: "Attention", updated: "2024-12-01T10:00:00Z", paused: false },
];

test("the picker marks paused sessions; rename, delete (two clicks) and find", (t) => {
  const w = mount(t, { state: { sessions: SESSIONS } });
  const picker = w.byId("session-picker");
  const labels = [...picker.options].map((o) => o.textContent);
  assert.match(labels[1], /^Paused · Lock services survey/);
  assert.doesNotMatch(labels[0], /Paused/);

  w.click(w.byId("rename-session"));
  const title = w.byId("session-title-input");
  assert.equal(title.hidden, false);
  assert.equal(title.value, "Raft questions");
  title.value = "Raft: leader election";
  w.key(title, "Enter");
  assert.deepEqual(w.model.sentOf("rename_session"), [{ kind: "rename_session", session_id: "s1", title: "Raft: leader election" }]);

  w.click(w.byId("delete-session"));
  assert.equal(w.model.sentOf("delete_session").length, 0, "the first click only asks");
  w.click(w.byId("delete-session"));
  assert.deepEqual(w.model.sentOf("delete_session"), [{ kind: "delete_session", session_id: "s1" }]);

  const find = w.byId("session-search");
  const none = w.byId("session-search-empty");
  w.type(find, "lock");
  assert.deepEqual([...picker.options].map((o) => o.value), ["s1", "s2"], "the open one stays, the match shows");
  assert.equal(none.hidden, true);
  w.type(find, "zebra");
  assert.deepEqual([...picker.options].map((o) => o.value), ["s1"]);
  assert.equal(none.hidden, false, "a search that matches nothing says so");
  assert.equal(none.textContent, "No session title contains “zebra”.");
  w.type(find, "");
  assert.equal(none.hidden, true);
});

// ---------------------------------------------------------------------------- empty screen

test("the empty screen: the library's size, example prompts from it, and paused sessions to resume", (t) => {
  const library = { items: 37, collections: 7, examples: ["What problem does “Raft” address, and how?", "What does my library say about consensus?"] };
  const w = mount(t, { state: { session_id: "", library, sessions: SESSIONS } });
  assert.equal(w.byId("library-size").textContent, "37 papers · 7 collections");
  const examples = w.allById("example-prompt");
  assert.deepEqual(examples.map((e) => e.textContent), library.examples);
  w.click(examples[1]);
  assert.equal(w.byId("chat-input").value, library.examples[1]);
  assert.equal(w.model.sentOf("ask").length, 0, "an example fills the box; the researcher sends it");
  const offer = w.byId("paused-offer");
  assert.match(offer.textContent, /Resume “Lock services survey”/);
  w.click(offer);
  assert.deepEqual(w.model.sentOf("open_session").at(-1), { kind: "open_session", session_id: "s2" });
});

test("one paper, no collections: singular words", (t) => {
  const w = mount(t, { state: { session_id: "", library: { items: 1, collections: 0, examples: [] } } });
  assert.equal(w.byId("library-size").textContent, "1 paper");
});

// ---------------------------------------------------------------------------- loading models

test("'Loading models…' before the turn has an id shows in the waiting bubble, which then gets its id", (t) => {
  const w = mount(t);
  w.ask("First question after a restart");
  w.model.py.event({ type: "step", turn_id: "", phase: "loading", label: "Loading models: the search index and embedding model…" });
  w.model.py.event({ type: "step", turn_id: "", phase: "loading", label: "Loading models: the reranker…" });
  assert.equal(w.allById("step").length, 2);
  w.model.py.send({ kind: "turn_started", turn_id: "t9", prompt: "First question after a restart" });
  w.model.py.set("busy", true);
  w.model.py.event({ type: "step", turn_id: "t9", phase: "route", label: "Searching the library" });
  assert.equal(w.allById("assistant-message").length, 1, "one bubble");
  assert.equal(w.byId("assistant-message").getAttribute("data-turn-id"), "t9");
  assert.deepEqual(w.allById("step").map((s) => s.getAttribute("data-phase")), ["loading", "loading", "route"]);
});

// ---------------------------------------------------------------------------- checkpoint words

test("the checkpoint card's words match its numbers, name the papers and suggest guidance from the search", (t) => {
  assert.equal(checkpointTitle({ calls_used: 8, budget: 10, words_used: 3000, word_ceiling: 7500 }), "The search asks for more room to fill the gaps below");
  assert.equal(checkpointTitle({ calls_used: 10, budget: 10, words_used: 3000, word_ceiling: 7500 }), "The search used all 10 of its calls");
  assert.equal(checkpointTitle({ calls_used: 1, budget: 1, words_used: 500, word_ceiling: 7500 }), "The search used its one call");
  assert.equal(checkpointTitle({ calls_used: 6, budget: 10, words_used: 7600, word_ceiling: 7500 }), "The search gathered its 7,500 words of evidence");
  const w = pausedPanel(t, sampleCheckpoint({ calls_used: 8, papers: ["Raft", "Chubby"], missing_aspects: ["nothing found about lock delays"] }));
  const card = w.byId("checkpoint-card");
  assert.doesNotMatch(card.textContent, /budget is used up/);
  assert.deepEqual([...w.byId("checkpoint-papers", card).children].map((li) => li.textContent), ["Raft", "Chubby"]);
  assert.equal(w.byId("guidance-input", card).placeholder, "e.g. “look for lock delays”");
  const w2 = pausedPanel(t, sampleCheckpoint({ missing_aspects: ['"Leases and Lock Delays": relevant sections not read yet'] }));
  assert.equal(w2.byId("guidance-input").placeholder, "e.g. “read the relevant sections of Leases and Lock Delays”");
  w.click(w.byId("synthesize-button", card));
  assert.match(w.byId("checkpoint-decision", card).textContent, /Synthesizing with the current evidence \(2 papers covered\)/);
});
