// A question streams into one assistant bubble: steps, thinking, markdown answer, elapsed time.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mount } from "./helpers.js";

test("Enter sends the question and shows it at once, before the kernel answers", (t) => {
  const w = mount(t);
  w.ask("How does attention work?");
  assert.deepEqual(w.model.sentOf("ask"), [{ kind: "ask", prompt: "How does attention work?" }]);
  assert.equal(w.byId("user-message").querySelector(".zc-bubble-user").textContent, "How does attention work?");
  assert.equal(w.allById("assistant-message").length, 1);
  assert.equal(w.byId("chat-input").value, "");
  // Stop is offered right away, even before Python reports busy.
  assert.equal(w.byId("stop-button").hidden, false);
  assert.equal(w.byId("send-button").hidden, true);
});

test("text deltas render as markdown, throttled to one re-render per animation frame", async (t) => {
  const w = mount(t);
  w.ask("Explain");
  w.model.py.send({ kind: "turn_started", turn_id: "t1", prompt: "Explain" });
  w.model.py.set("busy", true);
  const answer = w.byId("answer");
  for (const text of ["Self-", "attention is **cheap** ", "for `short` sequences.\n\n", "| n | cost |\n|---|---|\n| 1 | $O(n^2)$ |\n"]) {
    w.model.py.event({ type: "text_delta", turn_id: "t1", text });
  }
  assert.equal(answer.innerHTML, "", "no re-render before the frame");
  await w.frame();
  await w.frame();
  assert.equal(answer.querySelector("strong").textContent, "cheap");
  assert.equal(answer.querySelector("code").textContent, "short");
  assert.equal(answer.querySelector("table td").textContent, "1");
  const math = answer.querySelector("table math");
  assert.ok(math, "inline math becomes MathML");
  assert.match(math.textContent, /O/);
  assert.equal(answer.querySelector("annotation")?.textContent, "O(n^2)");

  w.model.py.event({ type: "text_delta", turn_id: "t1", text: "\n```python\nprint('hi')\n```\n" });
  await w.frame();
  await w.frame();
  assert.equal(answer.querySelector("pre code.language-python").textContent, "print('hi')\n");
  assert.equal(w.allById("assistant-message").length, 1);
});

test("steps list: the current step spins, finished steps show their duration", async (t) => {
  const w = mount(t);
  w.ask("q");
  w.model.py.send({ kind: "turn_started", turn_id: "t1", prompt: "q" });
  w.model.py.event({ type: "step", turn_id: "t1", phase: "search", label: "Searching the library for attention", detail: {} });
  await w.sleep(30);
  w.model.py.event({ type: "step", turn_id: "t1", phase: "read", label: "Reading §2 Model Architecture of Attention Is All You Need" });
  const steps = w.allById("step");
  assert.deepEqual(
    steps.map((s) => s.querySelector(".zc-step-label").textContent),
    ["Searching the library for attention", "Reading §2 Model Architecture of Attention Is All You Need"],
  );
  assert.ok(steps[0].classList.contains("zc-step-done"));
  assert.match(steps[0].querySelector(".zc-step-time").textContent, /^\d+\.\d s$/);
  assert.ok(steps[1].classList.contains("zc-step-current"), "the latest step has the spinner");
  assert.equal(steps[1].getAttribute("data-phase"), "read");
  // The live clock ticks while the turn runs.
  await w.sleep(450);
  assert.match(w.el.querySelector(".zc-meta-time").textContent, /^0\.\d s$/);
  // `done` closes the list without adding a row.
  w.model.py.event({ type: "step", turn_id: "t1", phase: "done", label: "Done" });
  assert.equal(w.allById("step").length, 2);
  assert.equal(w.el.querySelectorAll(".zc-step-current").length, 0);
});

test("thinking streams into a collapsed section, as plain text", (t) => {
  const w = mount(t);
  w.ask("q");
  const thinking = w.byId("thinking");
  assert.equal(thinking.hidden, true);
  w.model.py.event({ type: "thinking", turn_id: "t1", role: "planner", text: "First look for " });
  w.model.py.event({ type: "thinking", turn_id: "t1", role: "planner", text: "<b>papers</b>." });
  w.model.py.event({ type: "thinking", turn_id: "t1", role: "synthesizer", text: "Now write." });
  assert.equal(thinking.hidden, false);
  assert.equal(thinking.open, false, "collapsed by default");
  const blocks = thinking.querySelectorAll(".zc-thinking-block");
  assert.equal(blocks.length, 2);
  assert.equal(blocks[0].querySelector(".zc-thinking-role").textContent, "planner");
  assert.equal(blocks[0].querySelector(".zc-thinking-text").textContent, "First look for <b>papers</b>.");
  assert.equal(thinking.querySelector("b"), null);
});

test("an event before turn_started binds the waiting bubble to its turn", (t) => {
  const w = mount(t);
  w.ask("q");
  w.model.py.event({ type: "step", turn_id: "tx", phase: "route", label: "Routing" });
  const bubble = w.byId("assistant-message");
  assert.equal(bubble.getAttribute("data-turn-id"), "tx");
  w.model.py.send({ kind: "turn_started", turn_id: "tx", prompt: "q" });
  assert.equal(w.allById("assistant-message").length, 1);
});

test("a turn started elsewhere (another view, z.ask) gets its own pair of bubbles", (t) => {
  const w = mount(t);
  w.model.py.send({ kind: "turn_started", turn_id: "t9", prompt: "From another view" });
  w.model.py.event({ type: "text_delta", turn_id: "t9", text: "Hi" });
  assert.equal(w.byId("user-message").textContent, "From another view");
  assert.equal(w.byId("assistant-message").getAttribute("data-turn-id"), "t9");
});

test("events of another session are ignored", (t) => {
  const w = mount(t);
  w.model.py.event({ type: "step", session_id: "other", turn_id: "t1", phase: "search", label: "Elsewhere" });
  assert.equal(w.allById("assistant-message").length, 0);
});

test("the stop button appears while busy and sends stop", (t) => {
  const w = mount(t);
  w.ask("q");
  w.model.py.send({ kind: "turn_started", turn_id: "t1", prompt: "q" });
  w.model.py.set("busy", true);
  const stop = w.byId("stop-button");
  assert.equal(stop.hidden, false);
  w.click(stop);
  assert.deepEqual(w.model.sentOf("stop"), [{ kind: "stop" }]);
  w.model.py.event({ type: "text_delta", turn_id: "t1", text: "partial" });
  w.model.py.set("busy", false);
  const bubble = w.byId("assistant-message");
  assert.equal(bubble.getAttribute("data-status"), "cancelled");
  assert.equal(bubble.querySelector(".zc-meta-status").textContent, "Stopped");
  assert.equal(w.byId("answer").textContent.trim(), "partial", "the partial answer stays");
  assert.equal(stop.hidden, true);
  assert.equal(w.byId("send-button").hidden, false);
});
