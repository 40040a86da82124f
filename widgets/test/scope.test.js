// Scope chips: whole library, 1–5 papers or collections, picked by searching titles.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mount, sampleFinal } from "./helpers.js";

const chips = (w) => w.allById("scope-chip").map((c) => `${c.dataset.kind}:${c.textContent}`);

const RESULTS = {
  kind: "title_results",
  query: "atten",
  items: [
    { key: "VASWANI", title: "Attention Is All You Need", year: 2017, authors: ["Ashish Vaswani", "Noam Shazeer"] },
    { key: "BAHDANAU", title: "Neural Machine Translation by Jointly Learning to Align", year: 2015, authors: ["Dzmitry Bahdanau"] },
  ],
  collections: [{ key: "COLL1", name: "Attention papers" }],
};

test("the whole library is the default scope, and the input says so", (t) => {
  const w = mount(t);
  assert.deepEqual(chips(w), ["library:Whole library"]);
  assert.equal(w.byId("chat-input").placeholder, "Ask about your whole library…");
});

test("typing searches titles (debounced), results come back, a click adds a paper chip", async (t) => {
  const w = mount(t);
  const search = w.byId("scope-search");
  w.type(search, "a");
  w.type(search, "att");
  w.type(search, "atten");
  await w.sleep(200);
  assert.deepEqual(w.model.sentOf("search_titles"), [{ kind: "search_titles", query: "atten" }]);
  w.model.py.send({ ...RESULTS, query: "att" }); // stale: ignored
  assert.equal(w.byId("title-results").hidden, true);
  w.model.py.send(RESULTS);
  const results = w.allById("title-result");
  assert.deepEqual(results.map((r) => r.dataset.key), ["COLL1", "VASWANI", "BAHDANAU"]);
  assert.match(results[1].textContent, /Ashish Vaswani, Noam Shazeer · 2017/);
  w.click(results[1]);
  assert.deepEqual(w.model.sentOf("set_scope"), [
    {
      kind: "set_scope",
      scope: { mode: "items", items: [{ key: "VASWANI", title: "Attention Is All You Need", year: 2017 }], collections: [] },
    },
  ]);
  assert.deepEqual(chips(w), ["item:Attention Is All You Need (2017)"]);
  assert.equal(search.value, "");
  assert.equal(w.byId("title-results").hidden, true);
  assert.equal(w.byId("chat-input").placeholder, "Ask about this paper…");
});

test("keyboard picking: arrows and Enter in the search box", async (t) => {
  const w = mount(t, { state: { scope: { mode: "items", items: [{ key: "VASWANI", title: "Attention Is All You Need", year: 2017 }], collections: [] } } });
  const search = w.byId("scope-search");
  w.type(search, "atten");
  w.model.py.send(RESULTS);
  // A paper already in scope is not offered again.
  assert.deepEqual(w.allById("title-result").map((r) => r.dataset.key), ["COLL1", "BAHDANAU"]);
  w.key(search, "ArrowDown");
  w.key(search, "ArrowDown");
  w.key(search, "Enter");
  assert.deepEqual(w.model.sentOf("set_scope").at(-1).scope.items.map((i) => i.key), ["VASWANI", "BAHDANAU"]);
  assert.equal(w.byId("chat-input").placeholder, "Ask about these 2 papers…");
  // Backspace in the empty box removes the last chip.
  w.key(search, "Backspace");
  assert.deepEqual(w.model.sentOf("set_scope").at(-1).scope.items.map((i) => i.key), ["VASWANI"]);
});

test("at most five papers", (t) => {
  const five = ["A", "B", "C", "D", "E"].map((k) => ({ key: k, title: `Paper ${k}`, year: 2020 }));
  const w = mount(t, { state: { scope: { mode: "items", items: five, collections: [] } } });
  assert.equal(w.allById("scope-chip").length, 5);
  const search = w.byId("scope-search");
  assert.equal(search.placeholder, "5 papers at most");
  w.type(search, "atten");
  w.model.py.send(RESULTS);
  const paper = w.allById("title-result").find((r) => r.dataset.key === "VASWANI");
  assert.equal(paper.getAttribute("aria-disabled"), "true");
  w.click(paper);
  assert.equal(w.model.sentOf("set_scope").length, 0);
});

test("a collection replaces papers; removing the last chip returns to the whole library", (t) => {
  const w = mount(t, { state: { scope: { mode: "items", items: [{ key: "VASWANI", title: "Attention Is All You Need", year: 2017 }], collections: [] } } });
  w.type(w.byId("scope-search"), "atten");
  w.model.py.send(RESULTS);
  w.click(w.allById("title-result").find((r) => r.dataset.key === "COLL1"));
  assert.deepEqual(w.model.sentOf("set_scope").at(-1).scope, {
    mode: "collections",
    items: [],
    collections: [{ key: "COLL1", name: "Attention papers" }],
  });
  assert.deepEqual(chips(w), ["collection:Attention papers"]);
  assert.equal(w.byId("chat-input").placeholder, "Ask about “Attention papers”…");
  w.click(w.byId("scope-chip-remove"));
  assert.deepEqual(w.model.sentOf("set_scope").at(-1).scope, { mode: "library", items: [], collections: [] });
  assert.deepEqual(chips(w), ["library:Whole library"]);
});

test("'Whole library' resets a narrowed scope; the Python trait wins when it changes", (t) => {
  const w = mount(t, { state: { scope: { mode: "collections", items: [], collections: [{ key: "C", name: "Reading group" }] } } });
  assert.deepEqual(chips(w), ["collection:Reading group"]);
  w.click(w.byId("scope-reset"));
  assert.deepEqual(w.model.sentOf("set_scope").at(-1).scope, { mode: "library", items: [], collections: [] });
  assert.deepEqual(chips(w), ["library:Whole library"]);
  w.model.py.set("scope", { mode: "items", items: [{ key: "K", title: "Set from Python", year: null }], collections: [] });
  assert.deepEqual(chips(w), ["item:Set from Python"]);
});

test("a scope Python refuses (reported through `error`) falls back to the trait", (t) => {
  const w = mount(t);
  w.type(w.byId("scope-search"), "atten");
  w.model.py.send(RESULTS);
  w.click(w.allById("title-result").find((r) => r.dataset.key === "VASWANI"));
  assert.deepEqual(chips(w), ["item:Attention Is All You Need (2017)"]);
  w.model.py.set("error", "Unknown item VASWANI");
  assert.deepEqual(chips(w), ["library:Whole library"]);
});

test("an answer pointing elsewhere in the library asks once over the whole library, chips kept", (t) => {
  const w = mount(t);
  w.ask("How does Raft elect a leader?");
  w.model.py.send({ kind: "turn_started", turn_id: "t1", prompt: "How does Raft elect a leader?" });
  w.model.py.event(sampleFinal({
    turn_id: "t1",
    chips: { mode: "items", items: [{ key: "GARDEN", title: "Gardening" }], collections: [] },
    widen_chips: { mode: "library", items: [], collections: [] },
  }));
  const button = w.byId("widen-scope");
  assert.equal(button.textContent, "Search the whole library");
  const before = chips(w);
  w.click(button);
  assert.deepEqual(w.model.sentOf("set_scope"), [], "the panel's scope is not changed");
  assert.deepEqual(chips(w), before, "the chips stay as the researcher set them");
  const asks = w.model.sentOf("ask");
  assert.equal(asks.length, 2);
  assert.equal(asks[1].prompt, "How does Raft elect a leader?");
  assert.equal(asks[1].whole_library, true);
  assert.equal(asks[0].whole_library, undefined);
});
