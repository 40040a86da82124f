// One question and its answer: the user bubble and the assistant bubble with its steps,
// thinking, streamed markdown, checkpoint card, error, Sources and footer.
import { CheckpointCard } from "./checkpoint.js";
import { linkCitations } from "./citations.js";
import { formatSeconds } from "./dom.js";
import { renderMarkdownInto } from "./markdown.js";
import { renderSources } from "./sources.js";
import { StepList } from "./steps.js";

const STATUS_LABELS = { pending: "", running: "", checkpoint: "Paused", done: "", error: "Failed", stopped: "Stopped" };

export class TurnView {
  /** `chat` is the panel (ChatView): its clock, frames, scrolling, popover and `send`. */
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
    this.citations = new Map();
    this.checkpoint = null;
    this.checkpointCard = null;
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
    this.errorEl = h("div", { class: "zc-msg-error", "data-testid": "message-error", role: "alert", hidden: true });
    this.sourcesEl = h("div", { class: "zc-sources-slot" });
    this.footerEl = h("div", { class: "zc-msg-footer", hidden: true });
    this.bubble = h(
      "div",
      { class: "zc-bubble zc-bubble-assistant" },
      h("div", { class: "zc-meta" }, h("span", { class: "zc-meta-name", text: "Zocrates" }), this.metaStatus, this.metaTime),
      this.steps.el,
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
    renderSources(this.h, this.sourcesEl, final.cited_sources ?? [], final.other_sources ?? []);
    this.footerEl.textContent = final.model ? `Answered by ${final.model}` : "";
    this.footerEl.hidden = !final.model;
    if (Number.isFinite(final.seconds) && final.seconds > 0) this.seconds = final.seconds;
    this.errorEl.hidden = true;
    this.setStatus("done");
    this.steps.el.open = false;
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

  // Checkpoint ---------------------------------------------------------------------------------

  /** Show the card: live (`pending`, its buttons resume the turn) or resolved (disabled). */
  showCheckpoint(cp, { pending = true } = {}) {
    this.checkpoint = cp;
    this.checkpointCard = new CheckpointCard(this.h, cp, (action) => this.resolveCheckpoint(action));
    this.checkpointSlot.replaceChildren(this.checkpointCard.el);
    if (pending) {
      this.setStatus("checkpoint");
    } else {
      this.checkpointCard.disable("This checkpoint was resolved.");
    }
  }

  resolveCheckpoint(action) {
    if (!this.checkpoint || this.status !== "checkpoint") return;
    const guidance = this.checkpointCard.guidance;
    this.chat.send({ kind: "resume", interrupt_id: this.checkpoint.interrupt_id, action, guidance });
    this.checkpointCard.decided(action, guidance);
    this.chat.awaiting = true;
    this.setStatus("running");
    this.chat.updateBusy();
  }
}
