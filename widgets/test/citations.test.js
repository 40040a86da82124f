// On `final`: citation markers become buttons with popovers, and a two-tier Sources block appears.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mount, sampleFinal } from "./helpers.js";

function answered(t, final = sampleFinal()) {
  const w = mount(t);
  w.ask("What is attention?");
  w.model.py.send({ kind: "turn_started", turn_id: "t1", prompt: "What is attention?" });
  w.model.py.set("busy", true);
  w.model.py.event({ type: "step", turn_id: "t1", phase: "search", label: "Searching the library" });
  w.model.py.event({ type: "text_delta", turn_id: "t1", text: "Draft [1]" });
  w.model.py.event(final);
  w.model.py.set("busy", false);
  return w;
}

test("[n] and [1, 2] markers become citation buttons; unverified numbers stay plain", (t) => {
  const w = answered(t);
  const answer = w.byId("answer");
  const cites = w.allById("citation", answer);
  assert.deepEqual(cites.map((c) => c.textContent), ["1", "1", "2", "3"]);
  const groups = answer.querySelectorAll(".zc-cite-group");
  assert.equal(groups.length, 3, "[1], [1, 2] and [3]");
  assert.equal(groups[1].querySelectorAll("button").length, 2);
  assert.match(answer.textContent, /\[9\]/, "a marker without a verified citation is left as text");
  assert.equal(answer.querySelector("math") !== null, true, "math still renders in the final answer");
  const bubble = w.byId("assistant-message");
  assert.equal(bubble.getAttribute("data-status"), "answered");
  assert.equal(bubble.querySelector(".zc-meta-time").textContent, "4.2 s");
  assert.match(bubble.querySelector(".zc-msg-footer").textContent, /embedded offline engine/);
  assert.equal(bubble.querySelector(".zc-steps").open, false, "steps collapse once answered");
  assert.equal(bubble.querySelector(".zc-steps-title").textContent, "1 step");
});

test("a draft render still pending when the final arrives does not wipe the citations", async (t) => {
  const w = answered(t);
  await w.frame();
  assert.equal(w.allById("citation").length, 4, "citation buttons survive the next animation frame");
  assert.equal(w.byId("assistant-message").getAttribute("data-status"), "answered");
});

test("markers inside code are not citations", (t) => {
  const w = answered(t, sampleFinal({ answer: "Use `x[1]` and\n\n```\ny = a[2]\n```\n\nper [1]." }));
  const cites = w.allById("citation");
  assert.deepEqual(cites.map((c) => c.textContent), ["1"]);
  assert.equal(w.byId("answer").querySelector("code").textContent, "x[1]");
});

test("a citation's popover shows title, authors, year, section, page, passage and support", (t) => {
  const w = answered(t);
  const [first, , second] = w.allById("citation");
  w.click(first);
  const pop = w.byId("citation-popover");
  assert.equal(pop.hidden, false);
  assert.equal(first.getAttribute("aria-expanded"), "true");
  assert.equal(w.byId("citation-title", pop).textContent, "Attention Is All You Need");
  assert.equal(w.byId("citation-meta", pop).textContent, "Ashish Vaswani, Noam Shazeer · 2017");
  assert.equal(w.byId("citation-where", pop).textContent, "§ 3.2 Attention · p. 4");
  assert.match(w.byId("citation-passage", pop).textContent, /mapping a query and a set of key-value pairs/);
  assert.equal(w.byId("citation-support", pop).textContent, "Support 93%");
  assert.equal(pop.querySelector(".zc-meter-fill").style.width, "93%");

  // Another marker replaces the content; the passage's math is rendered.
  w.click(second);
  assert.equal(w.byId("citation-where", pop).textContent, "§ 3.2.1 Scaled Dot-Product Attention · p. 4");
  assert.ok(w.byId("citation-passage", pop).querySelector("math"));
  assert.equal(w.byId("citation-support", pop).textContent, "Support 81%");
  assert.equal(first.getAttribute("aria-expanded"), "false");

  // Clicking the same marker again closes it; so do Escape and a click elsewhere.
  w.click(second);
  assert.equal(pop.hidden, true);
  w.click(second);
  w.key(w.byId("chat-input"), "Escape");
  assert.equal(pop.hidden, true);
  assert.equal(w.model.sentOf("stop").length, 0, "Escape closed the popover, it did not stop anything");
  w.click(second);
  w.click(w.doc.body);
  assert.equal(pop.hidden, true);
});

test("a citation without verification or page says so", (t) => {
  const w = answered(t);
  const third = w.allById("citation").find((c) => c.textContent === "3");
  w.click(third);
  const pop = w.byId("citation-popover");
  assert.equal(w.byId("citation-where", pop).textContent, "§ 2 Method");
  assert.equal(w.byId("citation-support", pop).textContent, "Support not verified");
});

test("Sources: cited papers with their numbers, other considered papers apart", (t) => {
  const w = answered(t);
  const cited = w.byId("sources-cited");
  const rows = [...cited.querySelectorAll(".zc-source")];
  assert.deepEqual(
    rows.map((r) => [r.querySelector(".zc-source-n").textContent, r.querySelector(".zc-source-title").textContent]),
    [["1, 2", "Attention Is All You Need"], ["3", "Reciprocal Rank Fusion"]],
    "every number that cites a paper shows on its row; a source without `numbers` shows its n",
  );
  assert.equal(rows[0].querySelector(".zc-source-meta").textContent, "Ashish Vaswani et al. · 2017 · p. 4", "the page its cited passages are on");
  assert.equal(rows[1].querySelector(".zc-source-meta").textContent, "Gordon Cormack · 2009", "no page known: none shown");
  assert.equal(rows[0].getAttribute("data-item-key"), "VASWANI");
  const other = w.byId("sources-other");
  assert.equal(other.hidden, false);
  assert.equal(other.querySelector("summary").textContent, "Other considered (1)");
  assert.equal(other.querySelector(".zc-source-title").textContent, "BERT: Pre-training of Deep Bidirectional Transformers");
  assert.equal(other.querySelector(".zc-source-n"), null);
});

test("no verified citation: the Cited tier says so and everything is under Other considered", (t) => {
  const w = answered(
    t,
    sampleFinal({
      answer: "Unsupported claim [1].",
      cited_sources: [],
      citations: [],
      other_sources: sampleFinal().cited_sources.map((s) => ({ ...s, n: null, tier: "other" })),
    }),
  );
  assert.equal(w.allById("citation").length, 0);
  assert.match(w.byId("sources-cited").textContent, /No passage was verified/);
  assert.equal(w.byId("sources-other").querySelectorAll(".zc-source").length, 2);
});
