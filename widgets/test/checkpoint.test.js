// The checkpoint card: the search paused; the researcher grants an extension or synthesizes now,
// and the resumed stream continues in the same bubble.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { mount, sampleCheckpoint, sampleFinal } from "./helpers.js";

function paused(t, checkpoint = sampleCheckpoint()) {
  const w = mount(t);
  w.ask("Survey attention variants");
  w.model.py.send({ kind: "turn_started", turn_id: "t1", prompt: "Survey attention variants" });
  w.model.py.set("busy", true);
  w.model.py.event({ type: "step", turn_id: "t1", phase: "search", label: "Searching the library" });
  w.model.py.event({ type: "step", turn_id: "t1", phase: "checkpoint", label: "Search budget used up" });
  w.model.py.event(checkpoint);
  w.model.py.set("busy", false);
  return w;
}

test("the card shows the extension, what is covered and missing, and the usage so far", (t) => {
  const w = paused(t);
  const bubble = w.byId("assistant-message");
  const card = w.byId("checkpoint-card", bubble);
  assert.ok(card, "the card sits inside the assistant bubble");
  assert.equal(card.getAttribute("data-interrupt-id"), "int-1");
  assert.equal(card.querySelector(".zc-cp-badge").textContent, "Extension 1 of 2");
  assert.equal(w.byId("checkpoint-summary", card).querySelector("strong").textContent, "attention");
  assert.deepEqual([...w.byId("missing-aspects", card).children].map((li) => li.textContent), [
    "Ablations on small models",
    "Training cost",
  ]);
  assert.deepEqual([...w.byId("checkpoint-usage", card).children].map((s) => s.textContent), [
    "Calls 10 / 10",
    "Words 7,312 / 7,500",
    "Cost $0.0123",
  ]);
  assert.equal(bubble.getAttribute("data-status"), "checkpoint");
  assert.equal(bubble.getAttribute("data-status") === "cancelled", false, "busy=false does not mark it stopped");
  assert.equal(w.el.querySelectorAll(".zc-step-current").length, 0, "no spinner while paused");
  assert.equal(w.byId("stop-button").hidden, true);
});

test("without a cost the usage line leaves it out", (t) => {
  const w = paused(t, sampleCheckpoint({ cost_usd: null, extension: 2 }));
  const card = w.byId("checkpoint-card");
  assert.equal(card.querySelector(".zc-cp-badge").textContent, "Extension 2 of 2");
  assert.doesNotMatch(w.byId("checkpoint-usage", card).textContent, /Cost/);
});

test("Grant sends resume with the guidance, then the card shows the decision and disables", (t) => {
  const w = paused(t);
  const card = w.byId("checkpoint-card");
  w.byId("guidance-input", card).value = "  focus on linear attention  ";
  w.click(w.byId("grant-button", card));
  assert.deepEqual(w.model.sentOf("resume"), [
    { kind: "resume", interrupt_id: "int-1", action: "extend_budget", guidance: "focus on linear attention" },
  ]);
  assert.equal(w.byId("grant-button", card).disabled, true);
  assert.equal(w.byId("synthesize-button", card).disabled, true);
  assert.equal(w.byId("guidance-input", card).disabled, true);
  assert.equal(card.getAttribute("data-decision"), "extend_budget");
  assert.match(w.byId("checkpoint-decision", card).textContent, /Extension 1 granted.*focus on linear attention/);
  // A second click does nothing.
  w.click(w.byId("synthesize-button", card));
  assert.equal(w.model.sentOf("resume").length, 1);
  assert.equal(w.byId("stop-button").hidden, false, "the resumed turn can be stopped");
});

test("Synthesize sends resume with action synthesize and empty guidance", (t) => {
  const w = paused(t);
  w.click(w.byId("synthesize-button"));
  assert.deepEqual(w.model.sentOf("resume"), [{ kind: "resume", interrupt_id: "int-1", action: "synthesize", guidance: "" }]);
  assert.match(w.byId("checkpoint-decision").textContent, /Synthesizing with the current evidence/);
});

test("the resumed stream continues in the same bubble, through a second checkpoint to the answer", async (t) => {
  const w = paused(t);
  w.click(w.byId("grant-button"));
  w.model.py.send({ kind: "turn_started", turn_id: "t1", prompt: "Survey attention variants" });
  w.model.py.set("busy", true);
  w.model.py.event({ type: "step", turn_id: "t1", phase: "search", label: "Searching for linear attention" });
  w.model.py.event(sampleCheckpoint({ interrupt_id: "int-2", extension: 2 }));
  w.model.py.set("busy", false);
  const cards = w.allById("checkpoint-card");
  assert.equal(cards.length, 2, "the decided card stays, collapsed, above the new one");
  assert.equal(cards[0].querySelector(".zc-cp-badge").textContent, "Extension 1 of 2");
  assert.equal(cards[0].classList.contains("zc-checkpoint-decided"), true);
  assert.match(w.byId("checkpoint-decision", cards[0]).textContent, /Extension 1 granted/);
  assert.equal(cards[0].querySelector(".zc-cp-body").hidden, true, "collapsed to its one line");
  assert.equal(cards[1].querySelector(".zc-cp-badge").textContent, "Extension 2 of 2");
  assert.equal(w.byId("grant-button", cards[1]).disabled, false);
  w.click(w.byId("synthesize-button"));
  assert.equal(w.model.sentOf("resume").at(-1).interrupt_id, "int-2");
  w.model.py.set("busy", true);
  w.model.py.event({ type: "step", turn_id: "t1", phase: "synthesize", label: "Writing the answer" });
  w.model.py.event({ type: "text_delta", turn_id: "t1", text: "Linear attention [1]" });
  await w.frame();
  w.model.py.event(sampleFinal());
  w.model.py.set("busy", false);

  assert.equal(w.allById("assistant-message").length, 1, "one bubble for the whole turn");
  assert.equal(w.allById("user-message").length, 1);
  const labels = w.allById("step").map((s) => s.querySelector(".zc-step-label").textContent);
  assert.deepEqual(labels, [
    "Searching the library",
    "Search budget used up",
    "Searching for linear attention",
    "Writing the answer",
  ]);
  assert.ok(w.allById("citation").length > 0);
  assert.equal(w.byId("assistant-message").getAttribute("data-status"), "answered");
  assert.ok(w.allById("checkpoint-card").every((c) => c.classList.contains("zc-checkpoint-decided")));
  // The decided cards sit above the answer, never between the answer and its sources.
  const bubble = w.byId("assistant-message");
  const order = [...bubble.querySelectorAll("[data-testid=checkpoint-card], [data-testid=answer], [data-testid=sources-cited]")]
    .map((e) => e.getAttribute("data-testid"));
  assert.deepEqual(order, ["checkpoint-card", "checkpoint-card", "answer", "sources-cited"]);
});

test("the card's header starts where its body does: no rule of the stylesheet pushes it right", (t) => {
  const w = paused(t);
  // The stylesheet as the browser gets it (jsdom cascades it: no layout, but margins and flex).
  const style = w.doc.createElement("style");
  style.textContent = readFileSync(new URL("../src/chat.css", import.meta.url), "utf8");
  w.doc.head.append(style);
  const header = w.byId("checkpoint-card").querySelector(".zc-cp-header");
  const css = (el) => w.win.getComputedStyle(el);
  assert.ok(["", "normal", "flex-start", "start"].includes(css(header).justifyContent));
  for (const el of [header.querySelector(".zc-cp-badge"), w.byId("checkpoint-title")]) {
    assert.notEqual(css(el).marginLeft, "auto", `${el.className} is pushed to the right`);
  }
  // The card's badge keeps the card's colours (not the candidate cards' green badge).
  assert.match(css(header.querySelector(".zc-cp-badge")).color, /--zc-warn/);
});
