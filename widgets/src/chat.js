// The zocrates-nb chat panel: an anywidget front end (ESM). It holds no retrieval or agent logic;
// it renders the typed events of zocrates_nb/events.py and sends the messages of PROTOCOL.md.
// This module is the panel itself (layout, input, busy state, the conversation) and the entry
// point; `npm run build` bundles it with the other modules of src/ and the dependencies into
// dist/chat.js (see PROTOCOL.md).
import { CitationPopover } from "./citations.js";
import { icon, makeH, oneLine } from "./dom.js";
import { connect } from "./protocol.js";
import { rescueSideViews } from "./rescue.js";
import { ScopePicker } from "./scope.js";
import { SessionHeader } from "./sessions.js";
import { StagedTray } from "./staging.js";
import { TurnView } from "./turn.js";

export { MAX_SCOPE_ITEMS } from "./scope.js";
export { markdownToSafeHtml, renderMarkdownInto } from "./markdown.js";
export { formatAuthors, formatSeconds } from "./dom.js";

const TICK_MS = 200;
const DEFAULT_MAX_PROMPT = 4000;
const COUNTER_FROM = 0.8; // the counter shows from 80 % of the limit
const TOAST_MS = 3500;
const LOST_STATUSES = new Set(["restarting", "autorestarting", "dead", "terminating"]);

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
    this.connected = true;
    this.disposers = [];
    this.build();
    this.listen();
    this.header.render();
    this.staging.render();
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

  /** Send a message to Python; false (and the disconnected state) when the kernel is gone. */
  send(message) {
    if (!this.connected) {
      this.showDisconnected();
      return false;
    }
    try {
      this.model.send(message);
      return true;
    } catch {
      this.setConnected(false); // "Cannot send": the comm went with the kernel
      return false;
    }
  }

  // Connection ---------------------------------------------------------------------------------

  /** Whether the view's widget is disconnected (ipywidgets marks its element on a restart). */
  checkConnection() {
    const lost = Boolean(this.el.closest?.(".jupyter-widgets-disconnected"));
    if (lost) this.setConnected(false);
  }

  setConnected(connected) {
    if (this.connected === connected) return;
    this.connected = connected;
    this.root.classList.toggle("zc-disconnected", !connected);
    this.root.setAttribute("data-connection", connected ? "live" : "lost");
    this.disconnectedBanner.hidden = connected;
    this.input.disabled = !connected;
    this.sendButton.disabled = !connected;
    if (!connected) {
      this.awaiting = false;
      for (const turn of this.allTurns()) if (turn.running) turn.showStopped();
      this.updateBusy();
    }
  }

  showDisconnected() {
    this.setConnected(false);
    this.disconnectedBanner.classList.remove("zc-flash");
    void this.disconnectedBanner.offsetWidth; // restart the flash animation
    this.disconnectedBanner.classList.add("zc-flash");
  }

  /** Follow the kernel of the notebook (JupyterLab's widget manager exposes its session). */
  watchKernel() {
    const session = this.model.widget_manager?.context?.sessionContext;
    const signal = session?.statusChanged;
    if (!signal?.connect) return;
    const onStatus = (_sender, status) => {
      if (LOST_STATUSES.has(status)) this.setConnected(false);
    };
    signal.connect(onStatus);
    this.disposers.push(() => signal.disconnect?.(onStatus));
  }

  /** A short notice over the composer (copied, inserted…). */
  toast(text) {
    this.toastEl.textContent = text;
    this.toastEl.hidden = false;
    this.win.clearTimeout(this.toastTimer);
    this.toastTimer = this.win.setTimeout(() => {
      this.toastEl.hidden = true;
    }, TOAST_MS);
  }

  // Layout -------------------------------------------------------------------------------------

  build() {
    const h = this.h;
    this.header = new SessionHeader(this);
    this.staging = new StagedTray(this);
    this.header.sessionEl.after(this.staging.button);
    this.conversation = h("div", { class: "zc-conversation", role: "log", "aria-live": "polite" });
    this.popover = new CitationPopover(h);
    this.errorBanner = h("div", { class: "zc-error-banner", "data-testid": "error-banner", role: "alert", hidden: true });
    this.disconnectedBanner = h(
      "div",
      { class: "zc-disconnected-banner", "data-testid": "disconnected-banner", role: "alert", hidden: true },
      h("strong", { text: "Disconnected from the kernel." }),
      h("span", {
        text:
          " It restarted or stopped, so this panel can no longer ask. Run the panel's cell again to reconnect: your sessions are saved, and a question paused at a checkpoint is offered there.",
      }),
    );
    this.pausedHint = h("div", { class: "zc-paused-hint", "data-testid": "paused-hint", role: "status", hidden: true });
    this.counter = h("span", { class: "zc-counter", "data-testid": "input-counter", hidden: true, "aria-live": "polite" });
    this.toastEl = h("div", { class: "zc-toast", "data-testid": "toast", role: "status", hidden: true });
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
      this.disconnectedBanner,
      this.errorBanner,
      this.pausedHint,
      this.scopePicker.el,
      h("div", { class: "zc-input-row" }, this.input, this.sendButton, this.stopButton),
      h(
        "div",
        { class: "zc-hint-row" },
        h("span", { class: "zc-hint", text: "Enter to send · Shift+Enter for a new line · Esc stops" }),
        this.counter,
      ),
      this.toastEl,
    );
    this.root = h(
      "div",
      { class: "zc-chat", "data-connection": "live" },
      this.header.el,
      this.staging.el,
      this.conversation,
      this.composer,
      this.popover.el,
    );
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
    on(this.input, "input", () => {
      this.autosize();
      this.updateCounter();
      this.pausedHint.hidden = true;
    });
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
    on(this.conversation, "scroll", () => {
      this.popover.close();
      this.followLatest = this.atBottom(); // scrolling up to read stops following
    });
    if (typeof this.win.ResizeObserver === "function") {
      // A view laid out (or resized) after its history came keeps the latest turn in sight.
      const observer = new this.win.ResizeObserver(() => {
        if (this.followLatest) this.conversation.scrollTop = this.conversation.scrollHeight;
      });
      observer.observe(this.conversation);
      this.disposers.push(() => observer.disconnect());
    }
    this.timer = this.win.setInterval(() => {
      for (const turn of this.turns.values()) if (turn.running) turn.tick();
      if (this.pendingTurn?.running) this.pendingTurn.tick();
      if (this.rescued && !this.root.isConnected) this.dispose(); // its side view was closed
    }, TICK_MS);
    this.disposers.push(() => this.win.clearInterval(this.timer));
    this.disposers.push(() => this.win.clearTimeout(this.toastTimer));
    this.disposers.push(() => this.scopePicker.dispose());
    this.watchKernel();
    this.fitToContainer();
  }

  dispose() {
    for (const dispose of this.disposers.splice(0)) dispose();
  }

  atBottom() {
    const c = this.conversation;
    return c.scrollHeight - c.scrollTop - c.clientHeight < 48;
  }

  stickToBottom(mutate) {
    const atBottom = this.atBottom();
    mutate();
    if (atBottom) this.conversation.scrollTop = this.conversation.scrollHeight;
  }

  /** Show the latest turn, and keep it in sight until the researcher scrolls up. */
  scrollToLatest() {
    this.followLatest = true;
    this.conversation.scrollTop = this.conversation.scrollHeight;
  }

  /**
   * In a view of its own ("Create New View for Cell Output") the panel takes the view's height,
   * so the input stays visible and only the conversation scrolls, however small the view.
   */
  fitToContainer(attempt = 0) {
    if (typeof this.win.ResizeObserver !== "function") return;
    if (!this.el.isConnected) {
      // anywidget renders before the output is attached: look again once it is.
      if (attempt < 100) {
        const timer = this.win.setTimeout(() => this.fitToContainer(attempt + 1), 50);
        this.disposers.push(() => this.win.clearTimeout(timer));
      }
      return;
    }
    const view = this.el.closest?.(".jp-LinkedOutputView");
    if (!view) return;
    const fit = () => {
      const top = this.root.getBoundingClientRect().top - view.getBoundingClientRect().top + view.scrollTop;
      const height = Math.max(view.clientHeight - top - 4, 200);
      this.root.style.height = `${Math.floor(height)}px`;
    };
    const observer = new this.win.ResizeObserver(fit);
    observer.observe(view);
    fit();
    this.disposers.push(() => observer.disconnect());
  }

  maxPrompt() {
    const max = Number(this.model.get("max_prompt"));
    return Number.isFinite(max) && max > 0 ? max : DEFAULT_MAX_PROMPT;
  }

  /** The counter near the limit, and a clear message past it. */
  updateCounter() {
    const max = this.maxPrompt();
    const n = this.input.value.trim().length;
    const over = n > max;
    this.counter.hidden = n < max * COUNTER_FROM;
    this.counter.textContent = over
      ? `${n.toLocaleString("en-US")} / ${max.toLocaleString("en-US")} characters: too long to send; shorten the question`
      : `${n.toLocaleString("en-US")} / ${max.toLocaleString("en-US")}`;
    this.counter.classList.toggle("zc-counter-over", over);
    this.root.classList.toggle("zc-too-long", over);
    return !over;
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

  /** The turn of this conversation that waits at a live checkpoint, if any. */
  pausedTurn() {
    return this.turnOrder.find((turn) => turn.status === "checkpoint") ?? null;
  }

  /** Send the question in the box; `wholeLibrary`: this once over the whole library, whatever
   * the chips say (they stay as they are). */
  ask({ wholeLibrary = false } = {}) {
    const prompt = this.input.value.trim();
    if (!prompt || this.isBusy()) return;
    if (!this.connected) {
      this.showDisconnected();
      return;
    }
    if (!this.updateCounter()) {
      this.counter.classList.remove("zc-flash");
      void this.counter.offsetWidth;
      this.counter.classList.add("zc-flash");
      return;
    }
    const paused = this.pausedTurn();
    if (paused) {
      // The question stays in the box; the card above takes the decision first.
      this.pausedHint.textContent =
        "A question above is paused at a checkpoint: choose “Grant deep research extension” or “Synthesize with current evidence” on its card first, or start a new session with the + button to ask this one there.";
      this.pausedHint.hidden = false;
      paused.checkpointCard?.el.scrollIntoView?.({ block: "nearest" });
      paused.checkpointCard?.el.classList.add("zc-attention");
      this.win.setTimeout(() => paused.checkpointCard?.el.classList.remove("zc-attention"), 1600);
      return;
    }
    if (!this.send(wholeLibrary ? { kind: "ask", prompt, whole_library: true } : { kind: "ask", prompt })) return;
    this.pausedHint.hidden = true;
    this.input.value = "";
    this.autosize();
    this.updateCounter();
    const scope = wholeLibrary ? { mode: "library", items: [], collections: [] } : this.scopePicker.scope();
    const turn = new TurnView(this, { prompt, scope });
    this.pendingTurn = turn;
    this.addTurnElement(turn);
    this.awaiting = true;
    this.updateBusy();
    this.scrollToLatest();
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

  /** Edit and resend: the question back in the box (and its scope in the chips). */
  editQuestion(turn) {
    if (!this.connected) return this.showDisconnected();
    if (turn.scope && !this.isBusy()) this.scopePicker.set(turn.scope);
    this.input.value = turn.prompt;
    this.autosize();
    this.updateCounter();
    this.input.focus();
    this.input.setSelectionRange?.(this.input.value.length, this.input.value.length);
  }

  /** Ask the same question again, under the scope it ran under. */
  regenerate(turn) {
    if (this.isBusy()) return;
    if (turn.scope) this.scopePicker.set(turn.scope);
    this.input.value = turn.prompt;
    this.ask();
  }

  /** The staging list changed (or a request about it was refused): the tray and every card. */
  onStagedChange() {
    this.staging.render();
    for (const turn of this.allTurns()) turn.candidateCards?.update();
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
    const library = this.model.get("library") || {};
    const plural = (n, noun) => `${Number(n).toLocaleString("en-US")} ${noun}${n === 1 ? "" : "s"}`;
    const size = Number.isFinite(library.items)
      ? [plural(library.items, "paper"), library.collections ? plural(library.collections, "collection") : ""].filter(Boolean).join(" · ")
      : "";
    const examples = (library.examples ?? []).slice(0, 3);
    const current = this.model.get("session_id") || "";
    const paused = (this.model.get("sessions") || []).filter((s) => s.paused && s.id !== current).slice(0, 3);
    this.conversation.append(
      h(
        "div",
        { class: "zc-empty", "data-testid": "empty-state" },
        h("div", { class: "zc-empty-title", text: "Ask your library" }),
        size ? h("div", { class: "zc-library-size", "data-testid": "library-size", text: size }) : null,
        h("div", {
          class: "zc-empty-text",
          text: "Answers cite the passages they rest on. Narrow the search with the chips below.",
        }),
        paused.length
          ? h(
              "div",
              { class: "zc-paused-offers" },
              h("div", { class: "zc-empty-label", text: "Paused at a checkpoint, waiting for your decision" }),
              paused.map((s) =>
                h(
                  "button",
                  {
                    type: "button",
                    class: "zc-paused-offer",
                    "data-testid": "paused-offer",
                    "data-session-id": s.id,
                    onclick: () => this.header.open(s.id),
                  },
                  icon(h, "pause", "zc-icon zc-paused-icon"),
                  h("span", { text: `Resume “${oneLine(s.title || "Untitled session", 70)}”` }),
                ),
              ),
            )
          : null,
        examples.length
          ? h(
              "div",
              { class: "zc-examples" },
              h("div", { class: "zc-empty-label", text: "Try" }),
              examples.map((text) =>
                h("button", {
                  type: "button",
                  class: "zc-example",
                  "data-testid": "example-prompt",
                  text,
                  onclick: () => {
                    this.input.value = text;
                    this.autosize();
                    this.updateCounter();
                    this.input.focus();
                  },
                }),
              ),
            )
          : null,
      ),
    );
  }

  /** Re-draw the empty screen (the library or the sessions changed) when it is showing. */
  refreshEmpty() {
    const empty = this.conversation.querySelector(".zc-empty[data-testid='empty-state']");
    if (!empty || this.conversation.children.length !== 1) return;
    empty.remove();
    this.renderEmpty();
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

/** A view of the panel in `el`; `rescued`: a side view it took over (see below). */
function mount(model, el, { rescued = false } = {}) {
  const view = new ChatView(model, el);
  view.rescued = rescued; // it ends itself when its side view is closed
  // Ask for the current session's turns: a view opened later (a second view, a reloaded page)
  // otherwise starts empty. Python answers with a `history` message.
  const sessionId = model.get("session_id");
  if (sessionId) model.send({ kind: "open_session", session_id: sessionId });
  // A side view a page reload left on "Loading widget..." gets the panel from here (rescue.js).
  view.disposers.push(rescueSideViews(model, view.win, (node) => mount(model, node, { rescued: true })));
  return view;
}

function render({ model, el }) {
  const view = mount(model, el);
  return () => view.dispose();
}

export default { render };
