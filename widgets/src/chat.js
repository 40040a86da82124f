// The zocrates-nb chat panel: an anywidget front end (ESM). It holds no retrieval or agent logic;
// it renders the typed events of zocrates_nb/events.py and sends the messages of PROTOCOL.md.
// This module is the panel itself (layout, input, busy state, the conversation) and the entry
// point; `npm run build` bundles it with the other modules of src/ and the dependencies into
// dist/chat.js (see PROTOCOL.md).
import { CitationPopover } from "./citations.js";
import { icon, makeH } from "./dom.js";
import { connect } from "./protocol.js";
import { ScopePicker } from "./scope.js";
import { SessionHeader } from "./sessions.js";
import { TurnView } from "./turn.js";

export { MAX_SCOPE_ITEMS } from "./scope.js";
export { markdownToSafeHtml, renderMarkdownInto } from "./markdown.js";
export { formatAuthors, formatSeconds } from "./dom.js";

const TICK_MS = 200;

class ChatView {
  constructor(model, el) {
    this.model = model;
    this.el = el;
    this.doc = el.ownerDocument;
    this.win = this.doc.defaultView;
    this.h = makeH(this.doc);
    this.turns = new Map(); // turn_id → TurnView
    this.turnOrder = [];
    this.pendingTurn = null; // asked here, waiting for its turn_id
    this.awaiting = false; // asked (or resumed) here, the kernel not yet busy
    this.dismissedError = null;
    this.disposers = [];
    this.build();
    this.listen();
    this.header.render();
    this.scopePicker.render();
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
    this.header = new SessionHeader(this);
    this.conversation = h("div", { class: "zc-conversation", role: "log", "aria-live": "polite" });
    this.popover = new CitationPopover(h);
    this.errorBanner = h("div", { class: "zc-error-banner", "data-testid": "error-banner", role: "alert", hidden: true });
    this.input = h("textarea", {
      class: "zc-input",
      "data-testid": "chat-input",
      rows: "1",
      placeholder: "Ask about your library…",
      "aria-label": "Question",
    });
    this.scopePicker = new ScopePicker(this);
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
      this.scopePicker.el,
      h("div", { class: "zc-input-row" }, this.input, this.sendButton, this.stopButton),
      h("div", { class: "zc-hint", text: "Enter to send · Shift+Enter for a new line · Esc stops" }),
    );
    this.root = h("div", { class: "zc-chat" }, this.header.el, this.conversation, this.composer, this.popover.el);
    this.el.replaceChildren(this.root);
  }

  listen() {
    const on = (target, type, handler, options) => {
      target.addEventListener(type, handler, options);
      this.disposers.push(() => target.removeEventListener(type, handler, options));
    };
    connect(this, (name, handler) => {
      this.model.on(name, handler);
      this.disposers.push(() => this.model.off?.(name, handler));
    });

    on(this.input, "keydown", (event) => this.onInputKeydown(event));
    on(this.input, "input", () => this.autosize());
    on(this.sendButton, "click", () => this.ask());
    on(this.stopButton, "click", () => this.stop());
    this.scopePicker.listen(on);
    on(this.root, "keydown", (event) => {
      if (event.key === "Escape") {
        event.stopPropagation();
        if (this.popover.open) this.popover.close();
        else if (this.isBusy()) this.stop();
      }
    });
    on(this.doc, "click", (event) => {
      if (this.popover.open && !this.popover.contains(event.target)) this.popover.close();
    });
    on(this.conversation, "scroll", () => this.popover.close());
    this.timer = this.win.setInterval(() => {
      for (const turn of this.turns.values()) if (turn.running) turn.tick();
      if (this.pendingTurn?.running) this.pendingTurn.tick();
    }, TICK_MS);
    this.disposers.push(() => this.win.clearInterval(this.timer));
    this.disposers.push(() => this.scopePicker.dispose());
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

  /** The `error` trait as a dismissible banner above the input. */
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
      if (this.popover.open) this.popover.close();
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
