// Test helpers: a jsdom window, a fake anywidget model, and the widget rendered into it.
import { JSDOM } from "jsdom";
import widget from "../src/chat.js";

/**
 * The part of anywidget's model the widget uses, recording what the front end does and letting
 * a test play the Python side (`py.set` changes a trait, `py.send` delivers a custom message).
 */
export class FakeModel {
  constructor(state = {}) {
    this.state = {
      session_id: "s1",
      sessions: [{ id: "s1", title: "First session", updated: "2025-01-02T10:00:00Z" }],
      scope: { mode: "library", items: [], collections: [] },
      busy: false,
      model_label: "Embedded offline engine (no language model)",
      error: "",
      ...state,
    };
    this.sent = [];
    this.saved = 0;
    this.handlers = new Map();
    this.py = {
      set: (name, value) => {
        this.state[name] = value;
        this.emit(`change:${name}`, value);
      },
      send: (msg) => this.emit("msg:custom", msg, []),
      event: (event) => this.emit("msg:custom", { kind: "event", event: { session_id: "s1", ...event } }, []),
    };
  }

  get(name) {
    return this.state[name];
  }

  set(name, value) {
    this.state[name] = value;
  }

  save_changes() {
    this.saved += 1;
  }

  send(msg) {
    this.sent.push(structuredClone(msg));
  }

  on(name, callback) {
    if (!this.handlers.has(name)) this.handlers.set(name, new Set());
    this.handlers.get(name).add(callback);
  }

  off(name, callback) {
    this.handlers.get(name)?.delete(callback);
  }

  emit(name, ...args) {
    for (const callback of [...(this.handlers.get(name) ?? [])]) callback(...args);
  }

  /** Messages of one kind sent to Python. */
  sentOf(kind) {
    return this.sent.filter((m) => m.kind === kind);
  }
}

/** Render the widget (or another anywidget module) into a fresh jsdom window. */
export function mount(t, { state = {}, module = widget, widgetManager = undefined } = {}) {
  const dom = new JSDOM("<!doctype html><html><body></body></html>", { pretendToBeVisual: true });
  const win = dom.window;
  const doc = win.document;
  const el = doc.createElement("div");
  doc.body.append(el);
  const model = new FakeModel(state);
  if (widgetManager) model.widget_manager = widgetManager; // JupyterLab's, in a notebook
  const cleanup = module.render({ model, el });
  t.after(() => {
    cleanup?.();
    win.close();
  });
  const byId = (id, root = el) => root.querySelector(`[data-testid="${id}"]`);
  const allById = (id, root = el) => [...root.querySelectorAll(`[data-testid="${id}"]`)];
  return {
    win,
    doc,
    el,
    model,
    byId,
    allById,
    /** Wait for the next animation frame (the throttled markdown re-render). */
    frame: () => new Promise((resolve) => win.requestAnimationFrame(() => resolve())),
    sleep: (ms) => new Promise((resolve) => win.setTimeout(resolve, ms)),
    key(target, key, init = {}) {
      const event = new win.KeyboardEvent("keydown", { key, bubbles: true, cancelable: true, ...init });
      target.dispatchEvent(event);
      return event;
    },
    type(target, value) {
      target.value = value;
      target.dispatchEvent(new win.Event("input", { bubbles: true }));
    },
    click(target) {
      target.dispatchEvent(new win.MouseEvent("click", { bubbles: true, cancelable: true }));
    },
    /** Type a question and press Enter; returns the prompt. */
    ask(prompt) {
      const input = byId("chat-input");
      input.value = prompt;
      this.key(input, "Enter");
      return prompt;
    },
  };
}

/** A Final event with two cited papers (three citations) and one other considered paper. */
export function sampleFinal(overrides = {}) {
  return {
    type: "final",
    turn_id: "t1",
    answer:
      "Transformers rely on **self-attention** [1], scaled by $\\sqrt{d_k}$ [1, 2].\n\nRRF fuses rankings [3]; see also [9].",
    cited_sources: [
      { n: 1, numbers: [1, 2], item_key: "VASWANI", title: "Attention Is All You Need", authors: ["Ashish Vaswani", "Noam Shazeer", "Niki Parmar", "Jakob Uszkoreit"], year: 2017, tier: "cited" },
      { n: 3, item_key: "CORMACK", title: "Reciprocal Rank Fusion", authors: ["Gordon Cormack"], year: 2009, tier: "cited" },
    ],
    other_sources: [
      { item_key: "DEVLIN", title: "BERT: Pre-training of Deep Bidirectional Transformers", authors: ["Jacob Devlin"], year: 2019, tier: "other" },
    ],
    citations: [
      { n: 1, chunk_id: "c1", item_key: "VASWANI", title: "Attention Is All You Need", authors: ["Ashish Vaswani", "Noam Shazeer"], year: 2017, section: "3.2 Attention", page: 4, text: "An attention function can be described as mapping a query and a set of key-value pairs to an output.", support: 0.93 },
      { n: 2, chunk_id: "c2", item_key: "VASWANI", title: "Attention Is All You Need", authors: ["Ashish Vaswani"], year: 2017, section: "3.2.1 Scaled Dot-Product Attention", page: 4, text: "We scale the dot products by $1/\\sqrt{d_k}$.", support: 0.81 },
      { n: 3, chunk_id: "c3", item_key: "CORMACK", title: "Reciprocal Rank Fusion", authors: ["Gordon Cormack"], year: 2009, section: "2 Method", page: null, text: "RRF sums 1/(k + rank).", support: null },
    ],
    usage: {},
    seconds: 4.2,
    model: "embedded offline engine (no language model)",
    ...overrides,
  };
}

/** A checkpoint event (the first extension). */
export function sampleCheckpoint(overrides = {}) {
  return {
    type: "checkpoint",
    turn_id: "t1",
    interrupt_id: "int-1",
    extension: 1,
    max_extensions: 2,
    calls_used: 10,
    budget: 10,
    words_used: 7312,
    word_ceiling: 7500,
    covered_summary: "Found the **attention** formulation in two papers.",
    missing_aspects: ["Ablations on small models", "Training cost"],
    cost_usd: 0.0123,
    ...overrides,
  };
}
