// Enter sends, Shift+Enter is a newline, Escape stops the running turn.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mount } from "./helpers.js";

test("Enter sends; Shift+Enter leaves the newline to the browser", (t) => {
  const w = mount(t);
  const input = w.byId("chat-input");
  input.value = "line one";
  const shift = w.key(input, "Enter", { shiftKey: true });
  assert.equal(shift.defaultPrevented, false, "the browser inserts the newline");
  assert.equal(w.model.sentOf("ask").length, 0);
  input.value = "line one\nline two";
  const enter = w.key(input, "Enter");
  assert.equal(enter.defaultPrevented, true);
  assert.deepEqual(w.model.sentOf("ask"), [{ kind: "ask", prompt: "line one\nline two" }]);
});

test("Enter does nothing for a blank question, during IME composition, or while a turn runs", (t) => {
  const w = mount(t);
  const input = w.byId("chat-input");
  input.value = "   ";
  w.key(input, "Enter");
  input.value = "漢字";
  w.key(input, "Enter", { isComposing: true });
  assert.equal(w.model.sentOf("ask").length, 0);
  w.model.py.set("busy", true);
  w.key(input, "Enter");
  assert.equal(w.model.sentOf("ask").length, 0);
  assert.equal(input.value, "漢字", "the draft is kept while busy");
  w.model.py.set("busy", false);
  w.key(input, "Enter");
  assert.equal(w.model.sentOf("ask").length, 1);
});

test("Escape stops the running turn, and only then", (t) => {
  const w = mount(t);
  const input = w.byId("chat-input");
  w.key(input, "Escape");
  assert.equal(w.model.sentOf("stop").length, 0);
  w.ask("q");
  w.model.py.set("busy", true);
  w.key(input, "Escape");
  assert.deepEqual(w.model.sentOf("stop"), [{ kind: "stop" }]);
  // Escape from elsewhere in the panel (e.g. a focused button) stops too.
  w.model.sent.length = 0;
  w.key(w.byId("stop-button"), "Escape");
  assert.deepEqual(w.model.sentOf("stop"), [{ kind: "stop" }]);
});

test("keys typed in the panel do not reach JupyterLab's notebook shortcuts", (t) => {
  const w = mount(t);
  const seen = [];
  w.doc.addEventListener("keydown", (e) => seen.push(e.key));
  w.key(w.byId("chat-input"), "a");
  w.key(w.byId("chat-input"), "Escape");
  w.key(w.byId("scope-search"), "d");
  assert.deepEqual(seen, []);
});

test("stop before the kernel picked the turn up ends it locally", (t) => {
  const w = mount(t);
  w.ask("q");
  w.key(w.byId("chat-input"), "Escape");
  assert.equal(w.model.sentOf("stop").length, 1);
  assert.equal(w.byId("assistant-message").getAttribute("data-status"), "cancelled");
  assert.equal(w.byId("send-button").hidden, false);
});
