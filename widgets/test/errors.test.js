// Failures are shown where they happen; the panel stays usable.
import { test } from "node:test";
import assert from "node:assert/strict";
import widget from "../src/chat.js";
import { mount } from "./helpers.js";

test("an error event shows inline in its bubble and the input stays usable", async (t) => {
  const w = mount(t);
  w.ask("q");
  w.model.py.send({ kind: "turn_started", turn_id: "t1", prompt: "q" });
  w.model.py.set("busy", true);
  w.model.py.event({ type: "step", turn_id: "t1", phase: "synthesize", label: "Writing" });
  w.model.py.event({ type: "text_delta", turn_id: "t1", text: "Partial" });
  w.model.py.event({ type: "error", turn_id: "t1", message: "The model endpoint did not answer (timeout).", retryable: true });
  w.model.py.set("busy", false);
  const bubble = w.byId("assistant-message");
  assert.equal(bubble.getAttribute("data-status"), "error");
  assert.equal(w.byId("message-error", bubble).textContent, "The model endpoint did not answer (timeout).");
  assert.equal(w.byId("answer", bubble).textContent.trim(), "Partial");
  assert.equal(w.el.querySelectorAll(".zc-step-current").length, 0);
  // Ask again.
  assert.equal(w.byId("send-button").hidden, false);
  w.ask("second try");
  assert.equal(w.model.sentOf("ask").length, 2);
  assert.equal(w.allById("assistant-message").length, 2);
});

test("an error for a question the kernel refused lands in the waiting bubble", (t) => {
  const w = mount(t);
  w.ask("q");
  w.model.py.event({ type: "error", turn_id: "", message: "Resolve the pending checkpoint first." });
  assert.equal(w.byId("message-error").textContent, "Resolve the pending checkpoint first.");
  assert.equal(w.byId("stop-button").hidden, true, "nothing is running any more");
});

test("the error trait shows a dismissible banner above the input", (t) => {
  const w = mount(t);
  const banner = w.byId("error-banner");
  assert.equal(banner.hidden, true);
  w.model.py.set("error", "No index yet: run z.index() first.");
  assert.equal(banner.hidden, false);
  assert.match(banner.textContent, /run z\.index\(\) first/);
  w.click(banner.querySelector("button"));
  assert.equal(banner.hidden, true);
  w.model.py.set("error", "Another problem");
  assert.equal(banner.hidden, false);
  w.model.py.set("error", "");
  assert.equal(banner.hidden, true);
});

test("closing the view removes every listener and timer", (t) => {
  const w = mount(t);
  const counts = () => [...w.model.handlers.values()].reduce((n, set) => n + set.size, 0);
  assert.ok(counts() > 0);
  // A second view on the same model (JupyterLab's "Create new view for cell output").
  const el = w.doc.createElement("div");
  const before = counts();
  const cleanup = widget.render({ model: w.model, el });
  assert.ok(counts() > before);
  cleanup();
  assert.equal(counts(), before);
});


test("a failed answer whose search was kept offers Retry answer, which resumes without a new search", (t) => {
  const w = mount(t);
  w.ask("q");
  w.model.py.send({ kind: "turn_started", turn_id: "t1", prompt: "q" });
  w.model.py.event({ type: "error", turn_id: "t1", message: "Writing the answer failed. The search is kept.", retry_id: "t1-answer" });
  const bubble = w.byId("assistant-message");
  assert.match(w.byId("message-error", bubble).textContent, /The search is kept/);
  w.click(w.byId("retry-answer", bubble));
  const resumes = w.model.sentOf("resume");
  assert.equal(resumes.length, 1);
  assert.deepEqual(
    { interrupt_id: resumes[0].interrupt_id, action: resumes[0].action },
    { interrupt_id: "t1-answer", action: "synthesize" },
  );
  assert.equal(w.model.sentOf("ask").length, 1, "no new question, no new search");
  assert.equal(bubble.getAttribute("data-status"), "running");
});

test("an ordinary failure offers no Retry answer", (t) => {
  const w = mount(t);
  w.ask("q");
  w.model.py.send({ kind: "turn_started", turn_id: "t1", prompt: "q" });
  w.model.py.event({ type: "error", turn_id: "t1", message: "The model endpoint did not answer." });
  assert.equal(w.allById("retry-answer").length, 0);
});
