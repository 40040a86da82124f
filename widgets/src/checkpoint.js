// The checkpoint card: the search budget is used up; the card shows what is covered, what is
// missing and the usage so far, and offers "Grant" or "Synthesize" with optional guidance.
// The turn owns the decision (it sends `resume`); the card only shows and records it.
import { renderMarkdownInto } from "./markdown.js";

function formatNumber(n) {
  return Number.isFinite(n) ? Math.round(n).toLocaleString("en-US") : "–";
}

export class CheckpointCard {
  /** `cp` is a checkpoint event (PROTOCOL.md); `onDecide(action)` runs on a button click. */
  constructor(h, cp, onDecide) {
    const summary = h("div", { class: "zc-cp-summary zc-markdown", "data-testid": "checkpoint-summary" });
    renderMarkdownInto(summary, cp.covered_summary || "_No summary of the covered evidence._");
    const usage = [
      `Calls ${formatNumber(cp.calls_used)} / ${formatNumber(cp.budget)}`,
      `Words ${formatNumber(cp.words_used)} / ${formatNumber(cp.word_ceiling)}`,
    ];
    if (cp.cost_usd !== null && cp.cost_usd !== undefined) usage.push(`Cost $${Number(cp.cost_usd).toFixed(cp.cost_usd < 0.1 ? 4 : 2)}`);
    const aspects = cp.missing_aspects ?? [];
    this.extension = cp.extension ?? 1;
    this.guidanceEl = h("textarea", {
      class: "zc-cp-guidance",
      "data-testid": "guidance-input",
      rows: "2",
      placeholder: "Optional guidance for the next search, e.g. “look for ablations on small models”",
      "aria-label": "Guidance for the next search",
    });
    this.decision = h("p", { class: "zc-cp-decision", "data-testid": "checkpoint-decision", role: "status", hidden: true });
    this.grant = h("button", {
      type: "button",
      class: "zc-btn zc-btn-primary",
      "data-testid": "grant-button",
      text: "Grant deep research extension",
      onclick: () => onDecide("extend_budget"),
    });
    this.synthesize = h("button", {
      type: "button",
      class: "zc-btn",
      "data-testid": "synthesize-button",
      text: "Synthesize with current evidence",
      onclick: () => onDecide("synthesize"),
    });
    this.guidanceEl.addEventListener("keydown", (event) => event.stopPropagation());
    this.el = h(
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
        h("span", { class: "zc-badge", text: `Extension ${this.extension} of ${cp.max_extensions ?? 2}` }),
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
      this.guidanceEl,
      h("div", { class: "zc-cp-actions" }, this.grant, this.synthesize),
      this.decision,
    );
  }

  /** The researcher's guidance, trimmed ("" when empty). */
  get guidance() {
    return this.guidanceEl.value.trim();
  }

  /** Freeze the card with a line saying what happened to it. */
  disable(text) {
    this.el.classList.add("zc-checkpoint-decided");
    this.guidanceEl.disabled = true;
    this.grant.disabled = true;
    this.synthesize.disabled = true;
    this.decision.textContent = text;
    this.decision.hidden = false;
  }

  /** Record the decision just sent: the card freezes and says what was chosen. */
  decided(action, guidance) {
    let text =
      action === "extend_budget"
        ? `Extension ${this.extension} granted — searching further.`
        : "Synthesizing with the current evidence.";
    if (guidance) text += ` Guidance: “${guidance}”`;
    this.disable(text);
    this.el.setAttribute("data-decision", action);
  }
}
