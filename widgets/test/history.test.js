// Sessions: the picker, and the history message that rebuilds a conversation.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mount, sampleCheckpoint, sampleFinal } from "./helpers.js";

const doneTurn = () => {
  const f = sampleFinal();
  return {
    turn_id: "t1",
    prompt: "What is attention?",
    answer: f.answer,
    status: "answered",
    cited_sources: f.cited_sources,
    other_sources: f.other_sources,
    citations: f.citations,
    steps: [
      { phase: "search", label: "Searching the library for attention", detail: {} },
      { phase: "rerank", label: "Reranking 23 passages", detail: {}, seconds: 0.4 },
    ],
    checkpoint: null,
    seconds: 3.5,
  };
};

const pausedTurn = () => ({
  turn_id: "t2",
  prompt: "Survey attention variants",
  answer: "",
  status: "checkpoint",
  cited_sources: [],
  other_sources: [],
  citations: [],
  steps: [{ phase: "search", label: "Searching the library", detail: {} }],
  checkpoint: sampleCheckpoint({ turn_id: "t2", interrupt_id: "int-7" }),
});

test("a view asks for its session's history when it opens", (t) => {
  const w = mount(t);
  assert.deepEqual(w.model.sent, [{ kind: "open_session", session_id: "s1" }]);
  const fresh = mount(t, { state: { session_id: "", sessions: [] } });
  assert.deepEqual(fresh.model.sent, [], "no session yet: nothing to load");
  assert.ok(fresh.byId("empty-state"));
});

test("history rebuilds answered turns with citations and sources", (t) => {
  const w = mount(t);
  w.model.py.send({ kind: "history", turns: [doneTurn()] });
  assert.equal(w.byId("user-message").textContent, "What is attention?");
  const bubble = w.byId("assistant-message");
  assert.equal(bubble.getAttribute("data-turn-id"), "t1");
  assert.equal(bubble.getAttribute("data-status"), "answered");
  assert.equal(bubble.querySelector(".zc-meta-time").textContent, "3.5 s");
  assert.equal(w.allById("step").length, 2);
  assert.equal(w.allById("step")[1].querySelector(".zc-step-time").textContent, "0.4 s");
  assert.equal(w.el.querySelectorAll(".zc-step-current").length, 0);
  assert.deepEqual(w.allById("citation").map((c) => c.textContent), ["1", "1", "2", "3"]);
  assert.equal(w.byId("sources-cited").querySelectorAll(".zc-source").length, 2);
  assert.equal(w.byId("sources-other").querySelectorAll(".zc-source").length, 1);
  w.click(w.allById("citation")[0]);
  assert.equal(w.byId("citation-title").textContent, "Attention Is All You Need");
  assert.equal(w.byId("empty-state"), null);
});

test("history brings a pending checkpoint card back, and it still resumes", (t) => {
  const w = mount(t);
  w.model.py.send({ kind: "history", turns: [doneTurn(), pausedTurn()] });
  const bubbles = w.allById("assistant-message");
  assert.equal(bubbles.length, 2);
  const card = w.byId("checkpoint-card", bubbles[1]);
  assert.ok(card);
  assert.equal(bubbles[1].getAttribute("data-status"), "checkpoint");
  assert.equal(w.byId("grant-button", card).disabled, false);
  w.byId("guidance-input", card).value = "training cost";
  w.click(w.byId("grant-button", card));
  assert.deepEqual(w.model.sentOf("resume"), [
    { kind: "resume", interrupt_id: "int-7", action: "extend_budget", guidance: "training cost" },
  ]);
  // The resumed stream lands in the reloaded bubble.
  w.model.py.set("busy", true);
  w.model.py.event({ type: "step", turn_id: "t2", phase: "search", label: "Searching further" });
  w.model.py.event(sampleFinal({ turn_id: "t2" }));
  w.model.py.set("busy", false);
  assert.equal(w.allById("assistant-message").length, 2);
  assert.equal(w.allById("step", bubbles[1]).length, 2);
  assert.equal(bubbles[1].getAttribute("data-status"), "answered");
});

test("history shows failed and stopped turns, and a running turn keeps streaming", async (t) => {
  const w = mount(t);
  w.model.py.send({
    kind: "history",
    turns: [
      { ...doneTurn(), turn_id: "a", status: "error", answer: "", error: "Endpoint unreachable" },
      { ...doneTurn(), turn_id: "b", status: "cancelled", answer: "Half an" },
      { ...doneTurn(), turn_id: "c", status: "running", answer: "So far", steps: [{ phase: "read", label: "Reading" }] },
    ],
  });
  const [a, b, c] = w.allById("assistant-message");
  assert.equal(w.byId("message-error", a).textContent, "Endpoint unreachable");
  assert.equal(b.getAttribute("data-status"), "cancelled");
  assert.equal(w.byId("answer", b).textContent.trim(), "Half an");
  w.model.py.event({ type: "text_delta", turn_id: "c", text: " and more" });
  await w.frame();
  await w.frame();
  assert.equal(w.byId("answer", c).textContent.trim(), "So far and more");
});

test("the session picker lists sessions and opens the chosen one", (t) => {
  const w = mount(t, {
    state: {
      sessions: [
        { id: "s1", title: "First session", updated: "2025-01-02T10:00:00Z" },
        { id: "s2", title: "Attention questions", updated: "2025-01-03T09:00:00Z" },
      ],
    },
  });
  w.model.py.send({ kind: "history", turns: [doneTurn()] });
  const picker = w.byId("session-picker");
  assert.deepEqual([...picker.options].map((o) => o.value), ["s1", "s2"]);
  assert.match(picker.options[1].textContent, /^Attention questions — /);
  assert.equal(picker.value, "s1");
  picker.value = "s2";
  picker.dispatchEvent(new w.win.Event("change", { bubbles: true }));
  assert.deepEqual(w.model.sentOf("open_session").at(-1), { kind: "open_session", session_id: "s2" });
  assert.equal(w.allById("assistant-message").length, 0, "the old conversation is cleared");
  w.model.py.set("session_id", "s2");
  w.model.py.send({ kind: "history", turns: [pausedTurn()] });
  assert.equal(picker.value, "s2");
  assert.ok(w.byId("checkpoint-card"));
});

test("New session sends new_session; an unsaved session shows as 'New session'", (t) => {
  const w = mount(t);
  w.model.py.send({ kind: "history", turns: [doneTurn()] });
  w.click(w.byId("new-session"));
  assert.deepEqual(w.model.sentOf("new_session"), [{ kind: "new_session" }]);
  assert.equal(w.allById("assistant-message").length, 0);
  assert.ok(w.byId("empty-state"));
  w.model.py.set("session_id", "s3");
  const picker = w.byId("session-picker");
  assert.equal(picker.value, "s3");
  assert.equal(picker.selectedOptions[0].textContent, "New session");
});

test("the header shows the model label honestly", (t) => {
  const w = mount(t);
  assert.equal(w.byId("model-label").textContent, "Embedded offline engine (no language model)");
  w.model.py.set("model_label", "openai:gpt-4.1-mini");
  assert.equal(w.byId("model-label").textContent, "openai:gpt-4.1-mini");
});
