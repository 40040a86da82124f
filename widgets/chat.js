// The zocrates-nb chat panel: an anywidget front end (ESM). It holds no retrieval or agent logic;
// it renders the typed events of zocrates_nb/events.py and sends the messages of PROTOCOL.md.
// Bundled with its dependencies into dist/chat.js by `npm run build` (see PROTOCOL.md).
import MarkdownIt from "markdown-it";
import markdownItKatexModule from "@vscode/markdown-it-katex";
import createDOMPurify from "dompurify";

// The plugin is CommonJS with `exports.default`; node and esbuild interpret that differently.
const markdownItKatex = markdownItKatexModule.default ?? markdownItKatexModule;

export const MAX_SCOPE_ITEMS = 5;
const SEARCH_DEBOUNCE_MS = 150;
const TICK_MS = 200;

// ---------------------------------------------------------------------------------------------
// Markdown → sanitized DOM. Everything that comes from papers or models goes through here.

// Raw HTML is allowed through the parser on purpose (papers and models emit <sup>, <table>, …)
// and then everything is sanitized by DOMPurify: no scripts, handlers, frames, styles or forms.
const markdown = new MarkdownIt({ html: true, linkify: true, typographer: false });
// Math becomes MathML (rendered natively by Chromium, Firefox and Safari): no KaTeX fonts or CSS
// to ship. `trust: false` keeps \href, \htmlClass and friends inert.
markdown.use(markdownItKatex, { output: "mathml", throwOnError: false, trust: false, strict: "ignore" });

// Paper and model text never makes the panel fetch anything: a remote image (or a tracking
// pixel) would tell a third party what the researcher is reading. Markdown images show their
// alt text; raw media tags are dropped.
markdown.renderer.rules.image = (tokens, idx) => markdown.utils.escapeHtml(tokens[idx].content);

const SANITIZE_CONFIG = {
  USE_PROFILES: { html: true, mathMl: true },
  ADD_TAGS: ["semantics", "annotation"],
  ADD_ATTR: ["encoding"],
  FORBID_TAGS: [
    "style", "form", "input", "button", "textarea", "select", "option", "dialog", "template",
    "img", "picture", "video", "audio", "source", "track", "image",
  ],
  FORBID_ATTR: ["style", "id", "name", "srcset", "action", "formaction"],
  ALLOW_DATA_ATTR: false,
};

const purifiers = new WeakMap();

/** One DOMPurify instance per window, with the hook that makes every link open safely outside. */
function purifierFor(win) {
  let purify = purifiers.get(win);
  if (!purify) {
    purify = createDOMPurify(win);
    purify.addHook("afterSanitizeAttributes", (node) => {
      if (node.nodeName === "A") {
        if (node.hasAttribute("href")) {
          node.setAttribute("target", "_blank");
          node.setAttribute("rel", "noopener noreferrer");
        } else {
          node.removeAttribute("target");
        }
      }
    });
    purifiers.set(win, purify);
  }
  return purify;
}

/** Markdown source → sanitized HTML string for `win`'s document. */
export function markdownToSafeHtml(win, source) {
  return purifierFor(win).sanitize(markdown.render(String(source ?? "")), SANITIZE_CONFIG);
}

/** Render markdown into `target`, replacing its content. */
export function renderMarkdownInto(target, source) {
  target.innerHTML = markdownToSafeHtml(target.ownerDocument.defaultView, source);
  return target;
}

// ---------------------------------------------------------------------------------------------
// Small helpers.

function makeH(doc) {
  return function h(tag, attrs = {}, ...children) {
    const el = doc.createElement(tag);
    for (const [key, value] of Object.entries(attrs)) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "class") el.className = value;
      else if (key === "text") el.textContent = value;
      else if (key.startsWith("on") && typeof value === "function") el.addEventListener(key.slice(2), value);
      else el.setAttribute(key, value === true ? "" : String(value));
    }
    for (const child of children.flat()) {
      if (child !== null && child !== undefined && child !== false) el.append(child);
    }
    return el;
  };
}

// Constant icon markup (never built from data).
const ICONS = {
  send: '<svg viewBox="0 0 16 16" aria-hidden="true"><path d="M8 13V3M3.5 7.5 8 3l4.5 4.5" fill="none" stroke="currentColor" stroke-width="1.8" stroke-linecap="round" stroke-linejoin="round"/></svg>',
  stop: '<svg viewBox="0 0 16 16" aria-hidden="true"><rect x="4" y="4" width="8" height="8" rx="1.5" fill="currentColor"/></svg>',
  plus: '<svg viewBox="0 0 16 16" aria-hidden="true"><path d="M8 3v10M3 8h10" fill="none" stroke="currentColor" stroke-width="1.6" stroke-linecap="round"/></svg>',
  close: '<svg viewBox="0 0 16 16" aria-hidden="true"><path d="M4.5 4.5l7 7M11.5 4.5l-7 7" fill="none" stroke="currentColor" stroke-width="1.6" stroke-linecap="round"/></svg>',
  library: '<svg viewBox="0 0 16 16" aria-hidden="true"><path d="M3 2.5v11M6 2.5v11M9 3l3.2 10.2" fill="none" stroke="currentColor" stroke-width="1.5" stroke-linecap="round"/></svg>',
  paper: '<svg viewBox="0 0 16 16" aria-hidden="true"><path d="M4 1.8h5.2L12.5 5v9.2H4z M9 2v3.2h3.3" fill="none" stroke="currentColor" stroke-width="1.3" stroke-linejoin="round"/></svg>',
  folder: '<svg viewBox="0 0 16 16" aria-hidden="true"><path d="M2 4.2h4.2l1.4 1.5H14v7.6H2z" fill="none" stroke="currentColor" stroke-width="1.3" stroke-linejoin="round"/></svg>',
  chip: '<svg viewBox="0 0 16 16" aria-hidden="true"><circle cx="8" cy="8" r="3" fill="currentColor"/></svg>',
};

function icon(h, name, cls = "zc-icon") {
  const span = h("span", { class: cls, "aria-hidden": "true" });
  span.innerHTML = ICONS[name];
  return span;
}

export function formatSeconds(seconds) {
  if (!Number.isFinite(seconds) || seconds < 0) return "";
  if (seconds < 10) return `${seconds.toFixed(1)} s`;
  if (seconds < 60) return `${Math.round(seconds)} s`;
  const m = Math.floor(seconds / 60);
  const s = Math.round(seconds - m * 60);
  return `${m} m ${String(s).padStart(2, "0")} s`;
}

export function formatAuthors(authors) {
  const list = (authors ?? []).filter(Boolean);
  if (list.length === 0) return "";
  if (list.length <= 3) return list.join(", ");
  return `${list[0]} et al.`;
}

function formatNumber(n) {
  return Number.isFinite(n) ? Math.round(n).toLocaleString("en-US") : "–";
}

function formatUpdated(value) {
  if (!value) return "";
  const date = typeof value === "number" ? new Date(value * 1000) : new Date(value);
  if (Number.isNaN(date.getTime())) return String(value);
  return date.toLocaleString(undefined, { month: "short", day: "numeric", hour: "2-digit", minute: "2-digit" });
}

const emptyScope = () => ({ mode: "library", items: [], collections: [] });

function normalizeScope(scope) {
  const s = scope && typeof scope === "object" ? scope : {};
  const mode = ["library", "items", "collections"].includes(s.mode) ? s.mode : "library";
  return {
    mode,
    items: mode === "items" ? [...(s.items ?? [])] : [],
    collections: mode === "collections" ? [...(s.collections ?? [])] : [],
  };
}

// `[3]`, `[1, 2]`, `[1,2; 4]` — the flat single-ID citation markers of the synthesizer.
const CITATION_MARKER = /\[(\d+(?:\s*[,;]\s*\d+)*)\]/g;
const NO_CITATIONS_INSIDE = new Set(["CODE", "PRE", "A", "BUTTON", "MATH", "SCRIPT", "STYLE"]);

// ---------------------------------------------------------------------------------------------
// One question and its answer.

class TurnView {
  constructor(chat, { turnId = "", prompt = "" } = {}) {
    this.chat = chat;
    const h = chat.h;
    this.h = h;
    this.turnId = turnId;
    this.prompt = prompt;
    this.status = "pending"; // pending | running | checkpoint | done | error | stopped
    this.text = "";
    this.renderScheduled = false;
    this.startedAt = chat.now();
    this.endedAt = null;
    this.steps = [];
    this.citations = new Map();
    this.checkpoint = null;
    this.stopRequested = false;
    this.seconds = null; // the turn's duration as measured by the kernel, once known
    this.historical = false; // rebuilt from a `history` message: no live clock

    this.el = h("div", { class: "zc-turn" });
    if (prompt) {
      this.userEl = h(
        "div",
        { class: "zc-msg zc-msg-user", "data-testid": "user-message" },
        h("div", { class: "zc-bubble zc-bubble-user", text: prompt }),
      );
      this.el.append(this.userEl);
    }
    this.metaStatus = h("span", { class: "zc-meta-status" });
    this.metaTime = h("span", { class: "zc-meta-time" });
    this.stepsList = h("ol", { class: "zc-steps-list" });
    this.stepsSummary = h("summary", { class: "zc-steps-summary" }, h("span", { class: "zc-steps-title", text: "Working" }));
    this.stepsEl = h("details", { class: "zc-steps", open: true, hidden: true }, this.stepsSummary, this.stepsList);
    this.thinkingBody = h("div", { class: "zc-thinking-body" });
    this.thinkingEl = h(
      "details",
      { class: "zc-thinking", "data-testid": "thinking", hidden: true },
      h("summary", { text: "Thinking" }),
      this.thinkingBody,
    );
    this.waitingEl = h("div", { class: "zc-waiting", "aria-label": "Waiting for the first step" }, h("span"), h("span"), h("span"));
    this.answerEl = h("div", { class: "zc-answer zc-markdown", "data-testid": "answer", "aria-live": "polite" });
    this.checkpointSlot = h("div", { class: "zc-checkpoint-slot" });
    this.errorEl = h("div", { class: "zc-msg-error", "data-testid": "message-error", role: "alert", hidden: true });
    this.sourcesEl = h("div", { class: "zc-sources-slot" });
    this.footerEl = h("div", { class: "zc-msg-footer", hidden: true });
    this.bubble = h(
      "div",
      { class: "zc-bubble zc-bubble-assistant" },
      h("div", { class: "zc-meta" }, h("span", { class: "zc-meta-name", text: "Zocrates" }), this.metaStatus, this.metaTime),
      this.stepsEl,
      this.thinkingEl,
      this.waitingEl,
      this.answerEl,
      this.checkpointSlot,
      this.errorEl,
      this.sourcesEl,
      this.footerEl,
    );
    this.assistantEl = h("div", { class: "zc-msg zc-msg-assistant", "data-testid": "assistant-message" }, this.bubble);
    this.el.append(this.assistantEl);
    this.setTurnId(turnId);
    this.setStatus("pending");
  }

  setTurnId(turnId) {
    this.turnId = turnId || "";
    if (this.turnId) this.assistantEl.setAttribute("data-turn-id", this.turnId);
  }

  get running() {
    return this.status === "pending" || this.status === "running";
  }

  setStatus(status) {
    this.status = status;
    this.assistantEl.setAttribute("data-status", status);
    const labels = { pending: "", running: "", checkpoint: "Paused", done: "", error: "Failed", stopped: "Stopped" };
    this.metaStatus.textContent = labels[status] ?? "";
    this.waitingEl.hidden = !(status === "pending" && this.steps.length === 0 && !this.text);
    if (!this.running) {
      this.endedAt ??= this.chat.now();
      this.closeCurrentStep();
    } else {
      this.endedAt = null;
    }
    this.tick();
  }

  // Steps --------------------------------------------------------------------------------------

  closeCurrentStep() {
    const now = this.chat.now();
    for (const step of this.steps) {
      if (step.endedAt === null) {
        step.endedAt = now;
        step.el.classList.remove("zc-step-current");
        step.el.classList.add("zc-step-done");
        step.timeEl.textContent = formatSeconds((step.endedAt - step.startedAt) / 1000);
      }
    }
  }

  addStep(step, { finished = false } = {}) {
    const h = this.h;
    this.closeCurrentStep();
    const phase = step.phase ?? "";
    if (phase === "done") return; // the end of the work is shown by the answer itself
    const now = this.chat.now();
    const timeEl = h("span", { class: "zc-step-time" });
    const el = h(
      "li",
      { class: "zc-step zc-step-current", "data-testid": "step", "data-phase": phase },
      h("span", { class: "zc-step-icon", "aria-hidden": "true" }),
      h("span", { class: "zc-step-label", text: step.label ?? "" }),
      timeEl,
    );
    const entry = { el, timeEl, startedAt: now, endedAt: null };
    this.steps.push(entry);
    this.stepsList.append(el);
    this.stepsEl.hidden = false;
    this.waitingEl.hidden = true;
    if (finished || !this.running) {
      entry.endedAt = now;
      el.classList.remove("zc-step-current");
      el.classList.add("zc-step-done");
      if (Number.isFinite(step.seconds)) timeEl.textContent = formatSeconds(step.seconds);
    }
    this.updateStepsSummary();
  }

  updateStepsSummary() {
    const title = this.stepsSummary.querySelector(".zc-steps-title");
    const n = this.steps.length;
    if (this.running) title.textContent = "Working";
    else title.textContent = `${n} step${n === 1 ? "" : "s"}`;
  }

  /** Refresh the live timers (called every TICK_MS while a turn runs). */
  tick() {
    const now = this.chat.now();
    if (this.seconds !== null) {
      this.metaTime.textContent = formatSeconds(this.seconds); // the kernel's own measure
    } else if (this.historical) {
      this.metaTime.textContent = "";
    } else {
      this.metaTime.textContent = formatSeconds(((this.endedAt ?? now) - this.startedAt) / 1000);
    }
    for (const step of this.steps) {
      if (step.endedAt === null) step.timeEl.textContent = formatSeconds((now - step.startedAt) / 1000);
    }
    this.updateStepsSummary();
  }

  // Streaming ----------------------------------------------------------------------------------

  appendText(text) {
    this.text += text;
    this.waitingEl.hidden = true;
    this.scheduleRender();
  }

  scheduleRender() {
    if (this.renderScheduled) return;
    this.renderScheduled = true;
    this.chat.requestFrame(() => {
      // A final, error or stop in the same frame already rendered the whole answer (with its
      // citation buttons): a stale draft render must not overwrite it.
      if (!this.renderScheduled) return;
      this.renderScheduled = false;
      this.chat.stickToBottom(() => renderMarkdownInto(this.answerEl, this.text));
    });
  }

  appendThinking(role, text) {
    const h = this.h;
    this.thinkingEl.hidden = false;
    if (!this.thinkingBlock || this.thinkingRole !== role) {
      this.thinkingRole = role;
      this.thinkingText = this.chat.doc.createTextNode("");
      this.thinkingBlock = h(
        "div",
        { class: "zc-thinking-block" },
        role ? h("div", { class: "zc-thinking-role", text: role }) : null,
        h("div", { class: "zc-thinking-text" }, this.thinkingText),
      );
      this.thinkingBody.append(this.thinkingBlock);
    }
    // Plain text node: thinking is shown verbatim and can never become markup.
    this.thinkingText.appendData(text);
  }

  // Terminal states ----------------------------------------------------------------------------

  showFinal(final) {
    this.renderScheduled = false;
    this.text = final.answer || this.text;
    this.citations = new Map();
    for (const citation of final.citations ?? []) {
      const list = this.citations.get(citation.n) ?? [];
      list.push(citation);
      this.citations.set(citation.n, list);
    }
    renderMarkdownInto(this.answerEl, this.text);
    this.linkCitations();
    this.renderSources(final.cited_sources ?? [], final.other_sources ?? []);
    this.footerEl.textContent = final.model ? `Answered by ${final.model}` : "";
    this.footerEl.hidden = !final.model;
    if (Number.isFinite(final.seconds) && final.seconds > 0) this.seconds = final.seconds;
    this.errorEl.hidden = true;
    this.setStatus("done");
    this.stepsEl.open = false;
  }

  showError(message) {
    this.renderScheduled = false;
    if (this.text) renderMarkdownInto(this.answerEl, this.text);
    this.errorEl.textContent = message || "The turn failed.";
    this.errorEl.hidden = false;
    this.setStatus("error");
  }

  showStopped() {
    this.renderScheduled = false;
    if (this.text) renderMarkdownInto(this.answerEl, this.text);
    this.setStatus("stopped");
  }

  /** Turn `[n]` / `[1, 2]` markers of the rendered answer into citation buttons. */
  linkCitations() {
    const doc = this.chat.doc;
    const win = doc.defaultView;
    const walker = doc.createTreeWalker(this.answerEl, win.NodeFilter.SHOW_TEXT, {
      acceptNode: (node) => {
        for (let p = node.parentNode; p && p !== this.answerEl; p = p.parentNode) {
          if (NO_CITATIONS_INSIDE.has(p.nodeName.toUpperCase()) || p.classList?.contains("katex")) {
            return win.NodeFilter.FILTER_REJECT;
          }
        }
        return win.NodeFilter.FILTER_ACCEPT;
      },
    });
    const textNodes = [];
    for (let n = walker.nextNode(); n; n = walker.nextNode()) textNodes.push(n);
    for (const node of textNodes) {
      const value = node.nodeValue;
      CITATION_MARKER.lastIndex = 0;
      if (!CITATION_MARKER.test(value)) continue;
      const fragment = doc.createDocumentFragment();
      let last = 0;
      CITATION_MARKER.lastIndex = 0;
      for (let m = CITATION_MARKER.exec(value); m; m = CITATION_MARKER.exec(value)) {
        const numbers = m[1].split(/\s*[,;]\s*/).map(Number);
        if (!numbers.some((n) => this.citations.has(n))) continue;
        fragment.append(value.slice(last, m.index));
        fragment.append(this.citationGroup(numbers));
        last = m.index + m[0].length;
      }
      fragment.append(value.slice(last));
      node.replaceWith(fragment);
    }
  }

  citationGroup(numbers) {
    const h = this.h;
    const group = h("span", { class: "zc-cite-group" });
    numbers.forEach((n, i) => {
      if (i > 0) group.append(h("span", { class: "zc-cite-sep", text: "," }));
      if (this.citations.has(n)) {
        group.append(
          h("button", {
            type: "button",
            class: "zc-cite",
            "data-testid": "citation",
            "data-n": n,
            "aria-haspopup": "dialog",
            "aria-expanded": "false",
            "aria-label": `Citation ${n}: ${this.citations.get(n)[0].title ?? ""}`,
            text: String(n),
            onclick: (event) => {
              event.stopPropagation();
              this.chat.togglePopover(event.currentTarget, this.citations.get(n), n);
            },
          }),
        );
      } else {
        group.append(h("span", { class: "zc-cite-unverified", text: String(n) }));
      }
    });
    return group;
  }

  renderSources(cited, other) {
    const h = this.h;
    this.sourcesEl.replaceChildren();
    if (cited.length === 0 && other.length === 0) return;
    const row = (source) =>
      h(
        "li",
        { class: "zc-source", "data-item-key": source.item_key ?? "" },
        source.n != null
          ? h("span", { class: "zc-source-n", text: (source.numbers?.length ? source.numbers : [source.n]).join(", ") })
          : null,
        h(
          "span",
          { class: "zc-source-text" },
          h("span", { class: "zc-source-title", text: source.title || source.item_key || "Untitled" }),
          h("span", {
            class: "zc-source-meta",
            text: [formatAuthors(source.authors), source.year ?? ""].filter(Boolean).join(" · "),
          }),
        ),
      );
    const citedEl = h(
      "div",
      { class: "zc-sources-cited", "data-testid": "sources-cited" },
      h("div", { class: "zc-sources-heading", text: "Cited" }),
      cited.length
        ? h("ol", { class: "zc-source-list" }, cited.map(row))
        : h("p", { class: "zc-sources-none", text: "No passage was verified as supporting the answer." }),
    );
    const otherEl = h(
      "details",
      { class: "zc-sources-other", "data-testid": "sources-other" },
      h("summary", { class: "zc-sources-heading", text: `Other considered (${other.length})` }),
      h("ul", { class: "zc-source-list" }, other.map(row)),
    );
    if (other.length === 0) otherEl.hidden = true;
    this.sourcesEl.append(h("section", { class: "zc-sources", "aria-label": "Sources" }, citedEl, otherEl));
  }

  // Checkpoint ---------------------------------------------------------------------------------

  showCheckpoint(cp, { pending = true } = {}) {
    const h = this.h;
    this.checkpoint = cp;
    const summary = h("div", { class: "zc-cp-summary zc-markdown", "data-testid": "checkpoint-summary" });
    renderMarkdownInto(summary, cp.covered_summary || "_No summary of the covered evidence._");
    const usage = [
      `Calls ${formatNumber(cp.calls_used)} / ${formatNumber(cp.budget)}`,
      `Words ${formatNumber(cp.words_used)} / ${formatNumber(cp.word_ceiling)}`,
    ];
    if (cp.cost_usd !== null && cp.cost_usd !== undefined) usage.push(`Cost $${Number(cp.cost_usd).toFixed(cp.cost_usd < 0.1 ? 4 : 2)}`);
    const aspects = cp.missing_aspects ?? [];
    const guidance = h("textarea", {
      class: "zc-cp-guidance",
      "data-testid": "guidance-input",
      rows: "2",
      placeholder: "Optional guidance for the next search, e.g. “look for ablations on small models”",
      "aria-label": "Guidance for the next search",
    });
    const decision = h("p", { class: "zc-cp-decision", "data-testid": "checkpoint-decision", role: "status", hidden: true });
    const grant = h("button", {
      type: "button",
      class: "zc-btn zc-btn-primary",
      "data-testid": "grant-button",
      text: "Grant deep research extension",
      onclick: () => this.resolveCheckpoint("extend_budget"),
    });
    const synthesize = h("button", {
      type: "button",
      class: "zc-btn",
      "data-testid": "synthesize-button",
      text: "Synthesize with current evidence",
      onclick: () => this.resolveCheckpoint("synthesize"),
    });
    guidance.addEventListener("keydown", (event) => event.stopPropagation());
    const card = h(
      "section",
      {
        class: "zc-checkpoint",
        "data-testid": "checkpoint-card",
        "data-interrupt-id": cp.interrupt_id ?? "",
        "aria-label": "Search checkpoint",
      },
      h(
        "header",
        { class: "zc-cp-header" },
        h("span", { class: "zc-badge", text: `Extension ${cp.extension ?? 1} of ${cp.max_extensions ?? 2}` }),
        h("span", { class: "zc-cp-title", text: "The search budget is used up" }),
      ),
      h("div", { class: "zc-cp-label", text: "Covered so far" }),
      summary,
      aspects.length
        ? h(
            "div",
            { class: "zc-cp-missing" },
            h("div", { class: "zc-cp-label", text: "Still missing" }),
            h("ul", { "data-testid": "missing-aspects" }, aspects.map((a) => h("li", { text: a }))),
          )
        : null,
      h("div", { class: "zc-cp-usage", "data-testid": "checkpoint-usage" }, usage.map((u) => h("span", { text: u }))),
      guidance,
      h("div", { class: "zc-cp-actions" }, grant, synthesize),
      decision,
    );
    this.checkpointCard = { card, guidance, grant, synthesize, decision };
    this.checkpointSlot.replaceChildren(card);
    if (pending) {
      this.setStatus("checkpoint");
    } else {
      this.disableCheckpoint("This checkpoint was resolved.");
    }
  }

  disableCheckpoint(text) {
    const { card, guidance, grant, synthesize, decision } = this.checkpointCard;
    card.classList.add("zc-checkpoint-decided");
    guidance.disabled = true;
    grant.disabled = true;
    synthesize.disabled = true;
    decision.textContent = text;
    decision.hidden = false;
  }

  resolveCheckpoint(action) {
    if (!this.checkpoint || this.status !== "checkpoint") return;
    const guidance = this.checkpointCard.guidance.value.trim();
    this.chat.send({ kind: "resume", interrupt_id: this.checkpoint.interrupt_id, action, guidance });
    const ext = this.checkpoint.extension ?? 1;
    let text =
      action === "extend_budget"
        ? `Extension ${ext} granted — searching further.`
        : "Synthesizing with the current evidence.";
    if (guidance) text += ` Guidance: “${guidance}”`;
    this.disableCheckpoint(text);
    this.checkpointCard.card.setAttribute("data-decision", action);
    this.chat.awaiting = true;
    this.setStatus("running");
    this.chat.updateBusy();
  }
}

// ---------------------------------------------------------------------------------------------
// The panel.

class ChatView {
  constructor(model, el) {
    this.model = model;
    this.el = el;
    this.doc = el.ownerDocument;
    this.win = this.doc.defaultView;
    this.h = makeH(this.doc);
    this.turns = new Map();
    this.turnOrder = [];
    this.pendingTurn = null;
    this.awaiting = false;
    this.localScope = null;
    this.titleResults = { query: "", items: [], collections: [] };
    this.activeResult = -1;
    this.dismissedError = null;
    this.disposers = [];
    this.build();
    this.listen();
    this.renderHeader();
    this.renderScope();
    this.renderError();
    this.updateBusy();
    this.renderEmpty();
  }

  now() {
    return this.win.performance?.now?.() ?? Date.now();
  }

  requestFrame(callback) {
    if (typeof this.win.requestAnimationFrame === "function") this.win.requestAnimationFrame(callback);
    else this.win.setTimeout(callback, 16);
  }

  send(message) {
    this.model.send(message);
  }

  // Layout -------------------------------------------------------------------------------------

  build() {
    const h = this.h;
    this.sessionPicker = h("select", {
      class: "zc-session-picker",
      "data-testid": "session-picker",
      "aria-label": "Session",
      onchange: () => this.openSession(this.sessionPicker.value),
    });
    this.newSessionButton = h(
      "button",
      {
        type: "button",
        class: "zc-icon-btn",
        "data-testid": "new-session",
        title: "New session",
        "aria-label": "New session",
        onclick: () => this.newSession(),
      },
      icon(h, "plus"),
    );
    this.modelLabel = h("span", { class: "zc-model-label", "data-testid": "model-label" });
    this.header = h(
      "header",
      { class: "zc-header" },
      h("span", { class: "zc-brand", text: "Zocrates" }),
      h("div", { class: "zc-session" }, this.sessionPicker, this.newSessionButton),
      this.modelLabel,
    );

    this.conversation = h("div", { class: "zc-conversation", role: "log", "aria-live": "polite" });
    this.popover = h("div", {
      class: "zc-popover",
      "data-testid": "citation-popover",
      role: "dialog",
      "aria-label": "Citation",
      hidden: true,
    });

    this.errorBanner = h("div", { class: "zc-error-banner", "data-testid": "error-banner", role: "alert", hidden: true });
    this.chips = h("div", { class: "zc-chips" });
    this.scopeSearch = h("input", {
      type: "search",
      class: "zc-scope-search",
      "data-testid": "scope-search",
      placeholder: "Add papers or a collection…",
      "aria-label": "Search library titles to narrow the scope",
      autocomplete: "off",
      spellcheck: "false",
    });
    this.resultsEl = h("ul", { class: "zc-results", "data-testid": "title-results", role: "listbox", hidden: true });
    this.scopeEl = h(
      "div",
      { class: "zc-scope", "data-testid": "scope" },
      h("span", { class: "zc-scope-label", text: "Searching" }),
      this.chips,
      h("div", { class: "zc-scope-picker" }, this.scopeSearch, this.resultsEl),
    );

    this.input = h("textarea", {
      class: "zc-input",
      "data-testid": "chat-input",
      rows: "1",
      placeholder: "Ask about your library…",
      "aria-label": "Question",
    });
    this.sendButton = h(
      "button",
      { type: "button", class: "zc-send", "data-testid": "send-button", title: "Send (Enter)", "aria-label": "Send" },
      icon(h, "send"),
    );
    this.stopButton = h(
      "button",
      { type: "button", class: "zc-stop", "data-testid": "stop-button", title: "Stop (Esc)", hidden: true },
      icon(h, "stop"),
      h("span", { text: "Stop" }),
    );
    this.composer = h(
      "footer",
      { class: "zc-composer" },
      this.errorBanner,
      this.scopeEl,
      h("div", { class: "zc-input-row" }, this.input, this.sendButton, this.stopButton),
      h("div", { class: "zc-hint", text: "Enter to send · Shift+Enter for a new line · Esc stops" }),
    );
    this.root = h("div", { class: "zc-chat" }, this.header, this.conversation, this.composer, this.popover);
    this.el.replaceChildren(this.root);
  }

  listen() {
    const on = (target, type, handler, options) => {
      target.addEventListener(type, handler, options);
      this.disposers.push(() => target.removeEventListener(type, handler, options));
    };
    const onModel = (name, handler) => {
      this.model.on(name, handler);
      this.disposers.push(() => this.model.off?.(name, handler));
    };
    onModel("msg:custom", (msg) => this.onMessage(msg));
    onModel("change:busy", () => this.onBusyChange());
    onModel("change:sessions", () => this.renderHeader());
    onModel("change:session_id", () => this.renderHeader());
    onModel("change:model_label", () => this.renderHeader());
    onModel("change:scope", () => {
      this.localScope = null;
      this.renderScope();
    });
    onModel("change:error", () => {
      this.dismissedError = null;
      this.renderError();
      // A refused set_scope is reported through `error`: show the scope Python actually has.
      if (this.model.get("error")) {
        this.localScope = null;
        this.renderScope();
      }
    });

    on(this.input, "keydown", (event) => this.onInputKeydown(event));
    on(this.input, "input", () => this.autosize());
    on(this.sendButton, "click", () => this.ask());
    on(this.stopButton, "click", () => this.stop());
    on(this.scopeSearch, "input", () => this.onScopeSearchInput());
    on(this.scopeSearch, "keydown", (event) => this.onScopeSearchKeydown(event));
    on(this.scopeSearch, "blur", () => this.win.setTimeout(() => this.hideResults(), 150));
    on(this.root, "keydown", (event) => {
      if (event.key === "Escape") {
        event.stopPropagation();
        if (!this.popover.hidden) this.closePopover();
        else if (this.isBusy()) this.stop();
      }
    });
    on(this.doc, "click", (event) => {
      if (!this.popover.hidden && !this.popover.contains(event.target)) this.closePopover();
    });
    on(this.conversation, "scroll", () => this.closePopover());
    this.timer = this.win.setInterval(() => {
      for (const turn of this.turns.values()) if (turn.running) turn.tick();
      if (this.pendingTurn?.running) this.pendingTurn.tick();
    }, TICK_MS);
    this.disposers.push(() => this.win.clearInterval(this.timer));
    this.disposers.push(() => this.win.clearTimeout(this.searchTimer));
  }

  dispose() {
    for (const dispose of this.disposers.splice(0)) dispose();
  }

  stickToBottom(mutate) {
    const c = this.conversation;
    const atBottom = c.scrollHeight - c.scrollTop - c.clientHeight < 48;
    mutate();
    if (atBottom) c.scrollTop = c.scrollHeight;
  }

  autosize() {
    this.input.style.height = "auto";
    const height = this.input.scrollHeight;
    this.input.style.height = height ? `${Math.min(height, 200)}px` : "";
  }

  // Header, scope, errors ----------------------------------------------------------------------

  renderHeader() {
    const h = this.h;
    const current = this.model.get("session_id") || "";
    const sessions = this.model.get("sessions") || [];
    const options = sessions.map((s) =>
      h("option", { value: s.id, text: [s.title || "Untitled session", formatUpdated(s.updated)].filter(Boolean).join(" — ") }),
    );
    if (!sessions.some((s) => s.id === current)) {
      options.unshift(h("option", { value: current, text: "New session" }));
    }
    this.sessionPicker.replaceChildren(...options);
    this.sessionPicker.value = current;
    const label = this.model.get("model_label") || "";
    this.modelLabel.replaceChildren(h("span", { class: "zc-model-dot", "aria-hidden": "true" }), label);
    this.modelLabel.title = label;
    this.modelLabel.hidden = !label;
  }

  scope() {
    return this.localScope ?? normalizeScope(this.model.get("scope"));
  }

  renderScope() {
    const h = this.h;
    const scope = this.scope();
    const chips = [];
    const removable = (kind, key, label, title, iconName) =>
      h(
        "span",
        { class: `zc-chip zc-chip-${kind}`, "data-testid": "scope-chip", "data-kind": kind, "data-key": key, title },
        icon(h, iconName, "zc-chip-icon"),
        h("span", { class: "zc-chip-label", text: label }),
        h(
          "button",
          {
            type: "button",
            class: "zc-chip-remove",
            "data-testid": "scope-chip-remove",
            "aria-label": `Remove ${title}`,
            onclick: () => this.removeFromScope(kind, key),
          },
          icon(h, "close"),
        ),
      );
    if (scope.mode === "items") {
      for (const item of scope.items) {
        const label = item.year ? `${item.title} (${item.year})` : item.title;
        chips.push(removable("item", item.key, label, item.title || item.key, "paper"));
      }
    } else if (scope.mode === "collections") {
      for (const c of scope.collections) chips.push(removable("collection", c.key, c.name, c.name || c.key, "folder"));
    }
    if (chips.length === 0) {
      chips.push(
        h(
          "span",
          { class: "zc-chip zc-chip-library", "data-testid": "scope-chip", "data-kind": "library" },
          icon(h, "library", "zc-chip-icon"),
          h("span", { class: "zc-chip-label", text: "Whole library" }),
        ),
      );
    } else {
      chips.push(
        h("button", {
          type: "button",
          class: "zc-scope-reset",
          "data-testid": "scope-reset",
          text: "Clear",
          title: "Search the whole library again",
          onclick: () => this.setScope(emptyScope()),
        }),
      );
    }
    this.chips.replaceChildren(...chips);
    const full = scope.mode === "items" && scope.items.length >= MAX_SCOPE_ITEMS;
    this.scopeSearch.placeholder = full ? `${MAX_SCOPE_ITEMS} papers at most` : "Add papers or a collection…";
    let placeholder = "Ask about your whole library…";
    if (scope.mode === "items") {
      placeholder = scope.items.length === 1 ? "Ask about this paper…" : `Ask about these ${scope.items.length} papers…`;
    } else if (scope.mode === "collections") {
      placeholder = scope.collections.length === 1 ? `Ask about “${scope.collections[0].name}”…` : "Ask about these collections…";
    }
    this.input.placeholder = placeholder;
  }

  setScope(scope) {
    const next = normalizeScope(scope);
    this.localScope = next;
    this.send({ kind: "set_scope", scope: next });
    this.renderScope();
  }

  addToScope(kind, entry) {
    const scope = this.scope();
    if (kind === "item") {
      const items = scope.mode === "items" ? scope.items : [];
      if (items.some((i) => i.key === entry.key) || items.length >= MAX_SCOPE_ITEMS) return;
      this.setScope({ mode: "items", items: [...items, { key: entry.key, title: entry.title, year: entry.year ?? null }], collections: [] });
    } else {
      const collections = scope.mode === "collections" ? scope.collections : [];
      if (collections.some((c) => c.key === entry.key)) return;
      this.setScope({ mode: "collections", items: [], collections: [...collections, { key: entry.key, name: entry.name }] });
    }
  }

  removeFromScope(kind, key) {
    const scope = this.scope();
    if (kind === "item") {
      const items = scope.items.filter((i) => i.key !== key);
      this.setScope(items.length ? { mode: "items", items, collections: [] } : emptyScope());
    } else {
      const collections = scope.collections.filter((c) => c.key !== key);
      this.setScope(collections.length ? { mode: "collections", items: [], collections } : emptyScope());
    }
  }

  onScopeSearchInput() {
    this.win.clearTimeout(this.searchTimer);
    const query = this.scopeSearch.value.trim();
    if (!query) {
      this.hideResults();
      return;
    }
    this.searchTimer = this.win.setTimeout(() => this.send({ kind: "search_titles", query }), SEARCH_DEBOUNCE_MS);
  }

  onTitleResults(msg) {
    if ((msg.query ?? "") !== this.scopeSearch.value.trim()) return; // a stale answer
    this.titleResults = { query: msg.query, items: msg.items ?? [], collections: msg.collections ?? [] };
    this.renderResults();
  }

  renderResults() {
    const h = this.h;
    const scope = this.scope();
    const pickedItems = new Set(scope.mode === "items" ? scope.items.map((i) => i.key) : []);
    const pickedCollections = new Set(scope.mode === "collections" ? scope.collections.map((c) => c.key) : []);
    const full = scope.mode === "items" && scope.items.length >= MAX_SCOPE_ITEMS;
    this.resultEntries = [];
    const rows = [];
    for (const c of this.titleResults.collections) {
      if (pickedCollections.has(c.key)) continue;
      this.resultEntries.push({ kind: "collection", entry: c });
      rows.push(
        h(
          "li",
          { class: "zc-result zc-result-collection", "data-testid": "title-result", "data-key": c.key, role: "option" },
          icon(h, "folder", "zc-result-icon"),
          h("span", { class: "zc-result-title", text: c.name }),
          h("span", { class: "zc-result-meta", text: "Collection" }),
        ),
      );
    }
    for (const item of this.titleResults.items) {
      if (pickedItems.has(item.key)) continue;
      this.resultEntries.push({ kind: "item", entry: item, disabled: full });
      rows.push(
        h(
          "li",
          {
            class: "zc-result zc-result-item",
            "data-testid": "title-result",
            "data-key": item.key,
            role: "option",
            "aria-disabled": full ? "true" : null,
          },
          icon(h, "paper", "zc-result-icon"),
          h("span", { class: "zc-result-title", text: item.title }),
          h("span", {
            class: "zc-result-meta",
            text: [formatAuthors(item.authors), item.year ?? ""].filter(Boolean).join(" · "),
          }),
        ),
      );
    }
    rows.forEach((row, index) => {
      row.addEventListener("mousedown", (event) => event.preventDefault()); // keep focus in the search box
      row.addEventListener("click", () => this.pickResult(index));
    });
    if (rows.length === 0) rows.push(h("li", { class: "zc-result-empty", text: "No matching titles" }));
    this.activeResult = -1;
    this.resultsEl.replaceChildren(...rows);
    this.resultsEl.hidden = false;
  }

  pickResult(index) {
    const picked = this.resultEntries?.[index];
    if (!picked || picked.disabled) return;
    this.addToScope(picked.kind, picked.entry);
    this.scopeSearch.value = "";
    this.hideResults();
  }

  hideResults() {
    this.resultsEl.hidden = true;
    this.activeResult = -1;
  }

  onScopeSearchKeydown(event) {
    event.stopPropagation(); // keep JupyterLab's notebook shortcuts out of the search box
    const count = this.resultEntries?.length ?? 0;
    if (event.key === "ArrowDown" || event.key === "ArrowUp") {
      if (this.resultsEl.hidden || count === 0) return;
      event.preventDefault();
      const delta = event.key === "ArrowDown" ? 1 : -1;
      this.activeResult = (this.activeResult + delta + count) % count;
      [...this.resultsEl.children].forEach((row, i) => row.classList.toggle("zc-result-active", i === this.activeResult));
    } else if (event.key === "Enter") {
      event.preventDefault();
      if (!this.resultsEl.hidden) this.pickResult(this.activeResult >= 0 ? this.activeResult : 0);
    } else if (event.key === "Escape") {
      if (!this.resultsEl.hidden) this.hideResults();
      else if (this.isBusy()) this.stop();
    } else if (event.key === "Backspace" && !this.scopeSearch.value) {
      const scope = this.scope();
      if (scope.mode === "items" && scope.items.length) this.removeFromScope("item", scope.items.at(-1).key);
      else if (scope.mode === "collections" && scope.collections.length) {
        this.removeFromScope("collection", scope.collections.at(-1).key);
      }
    }
  }

  renderError() {
    const error = this.model.get("error") || "";
    const h = this.h;
    if (!error || error === this.dismissedError) {
      this.errorBanner.hidden = true;
      return;
    }
    this.errorBanner.replaceChildren(
      h("span", { class: "zc-error-text", text: error }),
      h(
        "button",
        {
          type: "button",
          class: "zc-icon-btn",
          "aria-label": "Dismiss",
          onclick: () => {
            this.dismissedError = error;
            this.renderError();
          },
        },
        icon(h, "close"),
      ),
    );
    this.errorBanner.hidden = false;
  }

  // Busy, asking, stopping ---------------------------------------------------------------------

  isBusy() {
    return Boolean(this.model.get("busy")) || this.awaiting;
  }

  updateBusy() {
    const busy = this.isBusy();
    this.sendButton.hidden = busy;
    this.stopButton.hidden = !busy;
    this.stopButton.disabled = Boolean(this.stopping);
    this.root.classList.toggle("zc-busy", busy);
    if (!busy) this.stopping = false;
  }

  onBusyChange() {
    if (this.model.get("busy")) {
      this.awaiting = false; // the kernel has taken over
    } else {
      this.awaiting = false;
      // A turn that is still streaming when the kernel goes idle was stopped (or lost).
      for (const turn of this.allTurns()) if (turn.running) turn.showStopped();
    }
    this.updateBusy();
  }

  onInputKeydown(event) {
    event.stopPropagation(); // typing here must never trigger notebook shortcuts
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      this.ask();
    } else if (event.key === "Escape") {
      event.preventDefault();
      if (!this.popover.hidden) this.closePopover();
      else if (this.isBusy()) this.stop();
    }
  }

  ask() {
    const prompt = this.input.value.trim();
    if (!prompt || this.isBusy()) return;
    this.send({ kind: "ask", prompt });
    this.input.value = "";
    this.autosize();
    const turn = new TurnView(this, { prompt });
    this.pendingTurn = turn;
    this.addTurnElement(turn);
    this.awaiting = true;
    this.updateBusy();
    this.conversation.scrollTop = this.conversation.scrollHeight;
  }

  stop() {
    if (!this.isBusy()) return;
    this.send({ kind: "stop" });
    this.stopping = true;
    if (!this.model.get("busy")) {
      // The kernel never picked the turn up: end it here.
      this.awaiting = false;
      for (const turn of this.allTurns()) if (turn.running) turn.showStopped();
    } else {
      for (const turn of this.allTurns()) if (turn.running) turn.stopRequested = true;
    }
    this.updateBusy();
  }

  openSession(sessionId) {
    if (!sessionId || sessionId === this.model.get("session_id")) return;
    this.closePopover();
    this.send({ kind: "open_session", session_id: sessionId });
    this.clearConversation();
    this.conversation.append(this.h("div", { class: "zc-empty", text: "Opening session…" }));
  }

  newSession() {
    this.closePopover();
    this.send({ kind: "new_session" });
    this.clearConversation();
    this.renderEmpty();
  }

  // Conversation -------------------------------------------------------------------------------

  allTurns() {
    const list = [...this.turns.values()];
    if (this.pendingTurn && !list.includes(this.pendingTurn)) list.push(this.pendingTurn);
    return list;
  }

  clearConversation() {
    this.turns = new Map();
    this.turnOrder = [];
    this.pendingTurn = null;
    this.awaiting = false;
    this.conversation.replaceChildren();
    this.updateBusy();
  }

  renderEmpty() {
    if (this.conversation.children.length) return;
    const h = this.h;
    this.conversation.append(
      h(
        "div",
        { class: "zc-empty", "data-testid": "empty-state" },
        h("div", { class: "zc-empty-title", text: "Ask your library" }),
        h("div", {
          class: "zc-empty-text",
          text: "Answers cite the passages they rest on. Narrow the search with the chips below.",
        }),
      ),
    );
  }

  addTurnElement(turn) {
    this.conversation.querySelector(".zc-empty")?.remove();
    this.conversation.append(turn.el);
    if (turn.turnId) this.turns.set(turn.turnId, turn);
    this.turnOrder.push(turn);
  }

  bindPending(turnId) {
    const turn = this.pendingTurn;
    this.pendingTurn = null;
    turn.setTurnId(turnId);
    if (turnId) this.turns.set(turnId, turn);
    return turn;
  }

  /** Which bubble an event belongs to: its turn, the bubble waiting for an id, or a new one. */
  turnFor(turnId, prompt = "") {
    if (turnId && this.turns.has(turnId)) return this.turns.get(turnId);
    if (this.pendingTurn) return this.bindPending(turnId);
    if (!turnId && this.turnOrder.length) return this.turnOrder.at(-1);
    const turn = new TurnView(this, { turnId, prompt });
    this.addTurnElement(turn);
    return turn;
  }

  onMessage(msg) {
    if (!msg || typeof msg !== "object") return;
    switch (msg.kind) {
      case "event":
        this.onEvent(msg.event ?? {});
        break;
      case "history":
        this.onHistory(msg.turns ?? []);
        break;
      case "title_results":
        this.onTitleResults(msg);
        break;
      case "turn_started": {
        const turn = this.turnFor(msg.turn_id, msg.prompt ?? "");
        if (turn.status === "checkpoint") turn.setStatus("running");
        else if (turn.status === "pending") turn.setStatus("running");
        break;
      }
      default:
        break;
    }
  }

  onEvent(event) {
    const current = this.model.get("session_id");
    if (event.session_id && current && event.session_id !== current) return; // another session's turn
    const turn = this.turnFor(event.turn_id || "");
    this.stickToBottom(() => {
      switch (event.type) {
        case "text_delta":
          if (turn.status === "pending") turn.setStatus("running");
          turn.appendText(event.text ?? "");
          break;
        case "thinking":
          if (turn.status === "pending") turn.setStatus("running");
          turn.appendThinking(event.role ?? "", event.text ?? "");
          break;
        case "step":
          if (turn.status === "pending") turn.setStatus("running");
          turn.addStep(event);
          break;
        case "checkpoint":
          turn.showCheckpoint(event, { pending: true });
          this.awaiting = false;
          break;
        case "final":
          turn.showFinal(event);
          this.awaiting = false;
          break;
        case "error":
          turn.showError(event.message);
          this.awaiting = false;
          break;
        default:
          break;
      }
    });
    this.updateBusy();
  }

  onHistory(turns) {
    this.closePopover();
    this.clearConversation();
    for (const t of turns) {
      const turn = new TurnView(this, { turnId: t.turn_id, prompt: t.prompt ?? "" });
      turn.historical = (t.status ?? "done") !== "running";
      this.addTurnElement(turn);
      turn.setStatus("running");
      for (const step of t.steps ?? []) turn.addStep(step, { finished: true });
      if (t.thinking) turn.appendThinking("", t.thinking);
      const status = t.status ?? "done";
      if (status === "done") {
        turn.showFinal({
          answer: t.answer ?? "",
          cited_sources: t.cited_sources ?? [],
          other_sources: t.other_sources ?? [],
          citations: t.citations ?? [],
          seconds: t.seconds ?? 0,
          model: t.model ?? "",
        });
      } else if (status === "checkpoint" && t.checkpoint) {
        if (t.answer) turn.appendText(t.answer);
        turn.showCheckpoint(t.checkpoint, { pending: true });
      } else if (status === "running") {
        if (Number.isFinite(t.seconds)) turn.startedAt = this.now() - t.seconds * 1000; // keep the clock honest
        if (t.answer) turn.appendText(t.answer);
        // keeps streaming: later events with this turn_id continue this bubble
      } else if (status === "stopped") {
        turn.text = t.answer ?? "";
        turn.showStopped();
      } else {
        turn.text = t.answer ?? "";
        turn.showError(t.error || "This turn failed.");
      }
      if (status !== "checkpoint" && t.checkpoint) turn.showCheckpoint(t.checkpoint, { pending: false });
      if (status !== "running") turn.closeCurrentStep();
    }
    this.renderEmpty();
    this.updateBusy();
    this.conversation.scrollTop = this.conversation.scrollHeight;
  }

  // Citation popover ---------------------------------------------------------------------------

  togglePopover(button, citations, n) {
    if (this.popoverAnchor === button && !this.popover.hidden) {
      this.closePopover();
      return;
    }
    this.closePopover();
    const h = this.h;
    const entries = citations.map((c) => {
      const passage = h("blockquote", { class: "zc-pop-passage zc-markdown", "data-testid": "citation-passage" });
      renderMarkdownInto(passage, c.text || "");
      const where = [c.section ? `§ ${c.section}` : "", c.page != null ? `p. ${c.page}` : ""].filter(Boolean).join(" · ");
      const support = Number.isFinite(c.support) ? Math.round(c.support * 100) : null;
      return h(
        "div",
        { class: "zc-pop-entry" },
        h("div", { class: "zc-pop-title", "data-testid": "citation-title", text: c.title || c.item_key }),
        h("div", {
          class: "zc-pop-meta",
          "data-testid": "citation-meta",
          text: [formatAuthors(c.authors), c.year ?? ""].filter(Boolean).join(" · "),
        }),
        where ? h("div", { class: "zc-pop-where", "data-testid": "citation-where", text: where }) : null,
        c.text ? passage : null,
        h(
          "div",
          { class: "zc-pop-support", "data-testid": "citation-support" },
          support === null
            ? h("span", { text: "Support not verified" })
            : [
                h("span", { class: "zc-meter", "aria-hidden": "true" }, meterFill(h, support)),
                h("span", { text: `Support ${support}%` }),
              ],
        ),
      );
    });
    this.popover.replaceChildren(
      h(
        "div",
        { class: "zc-pop-head" },
        h("span", { class: "zc-pop-n", text: `[${n}]` }),
        h(
          "button",
          { type: "button", class: "zc-icon-btn", "aria-label": "Close", onclick: () => this.closePopover() },
          icon(h, "close"),
        ),
      ),
      ...entries,
    );
    this.popover.hidden = false;
    this.popoverAnchor = button;
    button.setAttribute("aria-expanded", "true");
    this.positionPopover(button);
  }

  positionPopover(button) {
    const rootRect = this.root.getBoundingClientRect();
    const rect = button.getBoundingClientRect();
    const width = Math.min(360, Math.max(200, rootRect.width - 16));
    const left = Math.max(8, Math.min(rect.left - rootRect.left - 16, rootRect.width - width - 8));
    const below = rect.bottom - rootRect.top + 6;
    this.popover.style.width = `${width}px`;
    this.popover.style.left = `${left}px`;
    this.popover.style.top = `${below}px`;
    // Flip above the marker when there is no room below.
    const height = this.popover.offsetHeight || 0;
    if (height && below + height > rootRect.height - 8 && rect.top - rootRect.top - height - 6 > 8) {
      this.popover.style.top = `${rect.top - rootRect.top - height - 6}px`;
    }
  }

  closePopover() {
    if (this.popover.hidden) return;
    this.popover.hidden = true;
    this.popover.replaceChildren();
    this.popoverAnchor?.setAttribute("aria-expanded", "false");
    this.popoverAnchor = null;
  }
}

function meterFill(h, percent) {
  const fill = h("span", { class: "zc-meter-fill" });
  fill.style.width = `${Math.max(0, Math.min(100, percent))}%`;
  return fill;
}

// ---------------------------------------------------------------------------------------------
// anywidget entry point.

function render({ model, el }) {
  const view = new ChatView(model, el);
  // Ask for the current session's turns: a view opened later (a second view, a reloaded page)
  // otherwise starts empty. Python answers with a `history` message.
  const sessionId = model.get("session_id");
  if (sessionId) model.send({ kind: "open_session", session_id: sessionId });
  return () => view.dispose();
}

export default { render };
