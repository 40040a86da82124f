// One question and its answer: the user bubble and the assistant bubble with its steps,
// thinking, streamed markdown, checkpoint card, error, the cards of papers found beyond the
// library (a discovery turn), Sources and footer.
import { answerMarkdown, copyText, insertMarkdownCell } from "./actions.js";
import { CandidateCards } from "./candidates.js";
import { CheckpointCard } from "./checkpoint.js";
import { linkCitations } from "./citations.js";
import { formatSeconds, icon, oneLine } from "./dom.js";
import { renderMarkdownInto } from "./markdown.js";
import { NoteSaver } from "./notes.js";
import { Highlighter } from "./highlights.js";
import { renderSources } from "./sources.js";
import { StepList } from "./steps.js";

// The statuses of zocrates_nb/turn.py:TurnStatus, and `pending` (a bubble awaiting its turn_started).
const STATUS_LABELS = { pending: "", running: "", checkpoint: "Paused", answered: "", error: "Failed", cancelled: "Stopped" };

/** A scope's words: "Whole library", "2 papers: A; B", "Collection: Systems". */
export function scopeLabel(scope) {
  if (scope?.mode === "items" && scope.items?.length) {
    const titles = scope.items.map((i) => oneLine(i.title || i.key, 40));
    return `${scope.items.length === 1 ? "Paper" : `${scope.items.length} papers`}: ${titles.join("; ")}`;
  }
  if (scope?.mode === "collections" && scope.collections?.length) {
    const names = scope.collections.map((c) => c.name || c.key);
    return `${names.length === 1 ? "Collection" : "Collections"}: ${names.join(", ")}`;
  }
  return "Whole library";
}

/** The small chips under a question: the scope it ran under. */
function scopeChips(h, scope) {
  const chips = [];
  if (scope?.mode === "items" && scope.items?.length) {
    for (const item of scope.items) {
      chips.push(h("span", { class: "zc-mini-chip", "data-kind": "item", title: item.title || item.key, text: oneLine(item.title || item.key, 32) }));
    }
  } else if (scope?.mode === "collections" && scope.collections?.length) {
    for (const c of scope.collections) {
      chips.push(h("span", { class: "zc-mini-chip", "data-kind": "collection", title: c.name || c.key, text: c.name || c.key }));
    }
  } else {
    chips.push(h("span", { class: "zc-mini-chip", "data-kind": "library", text: "Whole library" }));
  }
  return chips;
}

export class TurnView {
  /** `chat` is the panel (ChatView): its clock, frames, scrolling, popover and `send`. */
  constructor(chat, { turnId = "", prompt = "", scope = null } = {}) {
    this.chat = chat;
    const h = chat.h;
    this.h = h;
    this.turnId = turnId;
    this.prompt = prompt;
    this.status = "pending"; // pending | running | checkpoint | answered | error | cancelled
    this.text = "";
    this.renderScheduled = false;
    this.startedAt = chat.now();
    this.endedAt = null;
    this.citations = new Map();
    this.checkpoint = null;
    this.checkpointCard = null;
    this.stopRequested = false;
    this.seconds = null; // the turn's duration as measured by the kernel, once known
    this.historical = false; // rebuilt from a `history` message: no live clock
    this.final = null; // the `final` event (or history entry) once answered
    this.scope = null;

    this.el = h("div", { class: "zc-turn" });
    if (prompt) {
      this.scopeEl = h("div", { class: "zc-turn-scope", "data-testid": "turn-scope" });
      this.userEl = h(
        "div",
        { class: "zc-msg zc-msg-user", "data-testid": "user-message" },
        h("div", { class: "zc-bubble zc-bubble-user", text: prompt }),
        h(
          "div",
          { class: "zc-user-meta" },
          this.scopeEl,
          h(
            "button",
            {
              type: "button",
              class: "zc-icon-btn zc-mini-btn",
              "data-testid": "edit-question",
              title: "Edit and resend",
              "aria-label": "Edit and resend this question",
              onclick: () => chat.editQuestion(this),
            },
            icon(h, "edit"),
          ),
        ),
      );
      this.el.append(this.userEl);
      this.setScope(scope);
    }
    this.metaStatus = h("span", { class: "zc-meta-status" });
    this.metaTime = h("span", { class: "zc-meta-time" });
    this.steps = new StepList(h, () => chat.now());
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
    this.candidatesSlot = h("div", { class: "zc-candidates-slot" });
    this.candidateCards = null;
    this.errorEl = h("div", { class: "zc-msg-error", "data-testid": "message-error", role: "alert", hidden: true });
    this.sourcesEl = h("div", { class: "zc-sources-slot" });
    this.footerEl = h("div", { class: "zc-msg-footer", hidden: true });
    const action = (testid, iconName, title, onclick) =>
      h("button", { type: "button", class: "zc-action", "data-testid": testid, title, "aria-label": title, onclick }, icon(h, iconName), h("span", { text: title.split(" ")[0] }));
    this.copyButton = action("copy-answer", "copy", "Copy as Markdown", () => this.copy());
    this.insertButton = action("insert-answer", "insert", "Insert into the notebook as a Markdown cell", () => this.insert());
    this.actionsEl = h(
      "div",
      { class: "zc-actions", hidden: true },
      this.copyButton,
      this.insertButton,
      action("regenerate", "redo", "Regenerate (ask again)", () => chat.regenerate(this)),
    );
    this.noteSaver = new NoteSaver(this);
    this.highlighter = new Highlighter(this);
    this.actionsEl.append(this.noteSaver.button, this.highlighter.button);
    // Order: work (steps), decisions (checkpoint cards), then the answer with its sources, so a
    // resolved card never sits between an answer and its sources.
    this.bubble = h(
      "div",
      { class: "zc-bubble zc-bubble-assistant" },
      h("div", { class: "zc-meta" }, h("span", { class: "zc-meta-name", text: "Zocrates" }), this.metaStatus, this.metaTime),
      this.steps.el,
      this.thinkingEl,
      this.waitingEl,
      this.checkpointSlot,
      this.answerEl,
      this.candidatesSlot,
      this.errorEl,
      this.sourcesEl,
      this.footerEl,
      this.actionsEl,
      this.noteSaver.confirmEl,
      this.noteSaver.resultEl,
      this.highlighter.confirmEl,
      this.highlighter.resultEl,
    );
    this.assistantEl = h("div", { class: "zc-msg zc-msg-assistant", "data-testid": "assistant-message" }, this.bubble);
    this.el.append(this.assistantEl);
    this.setTurnId(turnId);
    this.setStatus("pending");
  }

  /** Show the scope this question ran under (from the chips when asked, or Python's record). */
  setScope(scope) {
    if (!this.scopeEl || !scope) return;
    this.scope = scope;
    this.scopeEl.replaceChildren(...scopeChips(this.h, scope));
    this.scopeEl.title = `Searched: ${scopeLabel(scope)}`;
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
    this.metaStatus.textContent = STATUS_LABELS[status] ?? "";
    this.waitingEl.hidden = !(status === "pending" && this.steps.length === 0 && !this.text);
    if (!this.running) {
      this.endedAt ??= this.chat.now();
      this.steps.closeCurrent();
    } else {
      this.endedAt = null;
    }
    this.tick();
  }

  addStep(step, { finished = false } = {}) {
    if (this.steps.add(step, { finished, running: this.running })) this.waitingEl.hidden = true;
  }

  /** Refresh the live timers (called every tick while a turn runs). */
  tick() {
    const now = this.chat.now();
    if (this.seconds !== null) {
      this.metaTime.textContent = formatSeconds(this.seconds); // the kernel's own measure
    } else if (this.historical) {
      this.metaTime.textContent = "";
    } else {
      this.metaTime.textContent = formatSeconds(((this.endedAt ?? now) - this.startedAt) / 1000);
    }
    this.steps.tick(this.running);
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
    linkCitations(this.h, this.answerEl, this.citations, (button, n) =>
      this.chat.popover.toggle(button, this.citations.get(n), n),
    );
    renderSources(this.h, this.sourcesEl, final.cited_sources ?? [], final.other_sources ?? [], final.citations ?? []);
    // A discovery turn: its candidates as cards under the answer, staged through the tray.
    this.candidateCards = final.discovery ? new CandidateCards(this.h, final.discovery, this.chat.staging) : null;
    this.candidatesSlot.replaceChildren(...(this.candidateCards ? [this.candidateCards.el] : []));
    // The offline engine signs its answers itself: say "Answered by …" once, not twice.
    const model = final.model ?? "";
    const base = model.replace(/\s*\(.*\)\s*$/, "").toLowerCase();
    const signed = base && this.text.toLowerCase().includes(`answered by the ${base}`);
    this.footerEl.textContent = model && !signed ? `Answered by ${model}` : "";
    this.footerEl.hidden = !model || signed;
    this.final = final;
    if (final.chips) this.setScope(final.chips);
    this.widenEl?.remove();
    this.widenEl = null;
    if (final.widen_chips) {
      this.widenEl = this.h("button", {
        type: "button",
        class: "zc-action zc-widen",
        "data-testid": "widen-scope",
        text: "Search the whole library",
        onclick: () => this.widen(),
      });
      this.actionsEl.append(this.widenEl);
    }
    this.showActions();
    if (Number.isFinite(final.seconds) && final.seconds > 0) this.seconds = final.seconds;
    this.errorEl.hidden = true;
    this.setStatus("answered");
    this.steps.el.open = false;
  }

  /** The failure inline; with a `retryId` the search was kept and "Retry answer" writes the
   * answer again from it without searching again. */
  showError(message, retryId = null) {
    this.renderScheduled = false;
    if (this.text) renderMarkdownInto(this.answerEl, this.text);
    this.errorEl.replaceChildren(this.h("span", { text: message || "The turn failed." }));
    if (retryId) {
      this.errorEl.append(
        this.h("button", {
          type: "button",
          class: "zc-action zc-retry-answer",
          "data-testid": "retry-answer",
          text: "Retry answer",
          onclick: () => this.retryAnswer(retryId),
        }),
      );
    }
    this.errorEl.hidden = false;
    this.setStatus("error");
  }

  retryAnswer(retryId) {
    if (this.status !== "error" || this.chat.isBusy()) return;
    if (!this.chat.connected) {
      this.chat.showDisconnected();
      return;
    }
    this.chat.send({ kind: "resume", interrupt_id: retryId, action: "synthesize", guidance: "" });
    this.errorEl.hidden = true;
    this.chat.awaiting = true;
    this.setStatus("running");
    this.chat.updateBusy();
  }

  /** "Search the whole library": the same question once over the whole library; the scope
   * chips stay as the researcher set them. */
  widen() {
    if (this.chat.isBusy()) return;
    this.chat.input.value = this.prompt;
    this.chat.ask({ wholeLibrary: true });
  }

  showStopped() {
    this.renderScheduled = false;
    if (this.text) renderMarkdownInto(this.answerEl, this.text);
    this.setStatus("cancelled");
    if (this.prompt) this.showActions(); // a stopped question can be asked again
  }

  /** The answer's actions: Regenerate always; Copy and Insert once there is text to take. */
  showActions() {
    const empty = !this.text.trim();
    this.copyButton.hidden = empty;
    this.insertButton.hidden = empty;
    this.actionsEl.hidden = false;
  }

  // Checkpoint ---------------------------------------------------------------------------------

  /** Show the card: live (`pending`, its buttons resume the turn) or resolved (disabled). */
  showCheckpoint(cp, { pending = true } = {}) {
    if (this.checkpoint?.interrupt_id === cp.interrupt_id && this.checkpointCard && !this.checkpointCard.isDecided) {
      this.checkpointCard.el.remove(); // the same checkpoint shown again (history after a stop)
    }
    this.checkpoint = cp;
    this.checkpointCard = new CheckpointCard(this.h, cp, (action) => this.resolveCheckpoint(action));
    // Earlier cards stay, collapsed to the one line of their decision.
    for (const el of [...this.checkpointSlot.children]) {
      if (el.getAttribute("data-interrupt-id") === (cp.interrupt_id ?? "")) el.remove();
    }
    this.checkpointSlot.append(this.checkpointCard.el);
    if (pending) {
      this.setStatus("checkpoint");
    } else {
      this.checkpointCard.disable("This checkpoint was resolved.");
    }
  }

  resolveCheckpoint(action) {
    if (!this.checkpoint || this.status !== "checkpoint") return;
    if (!this.chat.connected) {
      this.chat.showDisconnected();
      return;
    }
    const guidance = this.checkpointCard.guidance;
    this.chat.send({ kind: "resume", interrupt_id: this.checkpoint.interrupt_id, action, guidance });
    this.checkpointCard.decided(action, guidance);
    this.chat.awaiting = true;
    this.setStatus("running");
    this.chat.updateBusy();
  }

  // Answer actions (copy, insert) --------------------------------------------------------------

  /** The answer as Markdown with its question, scope and references. */
  markdown() {
    const final = this.final ?? {};
    return answerMarkdown({
      prompt: this.prompt,
      answer: this.text,
      scopeLabel: this.scope ? scopeLabel(this.scope) : "",
      sources: final.cited_sources ?? [],
      citations: final.citations ?? [],
    });
  }

  async copy() {
    const ok = await copyText(this.chat.win, this.markdown());
    this.chat.toast(ok ? "Copied the answer as Markdown." : "Could not copy: select the answer and copy it by hand.");
  }

  /** A Markdown cell below the panel's cell (after the answers inserted before); where there is
   * no notebook, a copy instead. */
  async insert() {
    const source = this.markdown();
    const where = insertMarkdownCell(this.chat.model, this.chat.model.get("widget_id"), source, this.turnId);
    if (where) {
      this.chat.toast(`Inserted the answer as a Markdown cell ${where.below ? "below the panel" : "at the end of the notebook"}.`);
      return;
    }
    const ok = await copyText(this.chat.win, source);
    this.chat.toast(
      ok
        ? "No notebook to insert into here: the answer is copied as Markdown; paste it into a cell."
        : "No notebook to insert into here, and copying failed.",
    );
  }
}
