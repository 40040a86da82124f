// The checkpoint card: the search paused (its calls or words used up, or it asks for more room
// with gaps left); the card says which, in words that match its numbers, names the papers covered
// so far, what is missing, and offers "Grant" or "Synthesize" with optional guidance.
// The turn owns the decision (it sends `resume`); the card only shows and records it, then
// collapses to one line that says what was decided.
import { renderMarkdownInto } from "./markdown.js";

function formatNumber(n) {
  return Number.isFinite(n) ? Math.round(n).toLocaleString("en-US") : "–";
}

function short(text, n = 60) {
  const s = String(text ?? "").replace(/\s+/g, " ").trim();
  return s.length <= n ? s : `${s.slice(0, n - 1).trimEnd()}…`;
}

/** Why the search paused, in words true to its numbers. */
export function checkpointTitle(cp) {
  const callsOut = Number.isFinite(cp.calls_used) && Number.isFinite(cp.budget) && cp.calls_used >= cp.budget;
  const wordsOut =
    Number.isFinite(cp.words_used) && Number.isFinite(cp.word_ceiling) && cp.words_used >= cp.word_ceiling;
  if (callsOut && wordsOut) return "The search used all its calls and words";
  if (callsOut) return cp.budget === 1 ? "The search used its one call" : `The search used all ${formatNumber(cp.budget)} of its calls`;
  if (wordsOut) return `The search gathered its ${formatNumber(cp.word_ceiling)} words of evidence`;
  return "The search asks for more room to fill the gaps below";
}

/** Example guidance from this search itself: a missing aspect, else a paper it covered. */
export function guidanceExample(cp) {
  const aspect = (cp.missing_aspects ?? []).find((a) => a && a.length < 120);
  if (aspect) {
    const wish = aspect
      .replace(/^nothing found about /i, "look for ")
      .replace(/^"([^"]+)":\s*relevant sections not read yet$/i, "read the relevant sections of $1")
      .replace(/["“”]/g, "");
    return `e.g. “${short(wish, 80)}”`;
  }
  const paper = (cp.papers ?? [])[0];
  if (paper) return `e.g. “look closer at ${short(paper, 50)}”`;
  return "Optional guidance for the next search";
}

function plural(n, noun) {
  return `${n} ${noun}${n === 1 ? "" : "s"}`;
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
    const papers = cp.papers ?? [];
    this.extension = cp.extension ?? 1;
    this.guidanceEl = h("textarea", {
      class: "zc-cp-guidance",
      "data-testid": "guidance-input",
      rows: "2",
      placeholder: guidanceExample(cp),
      "aria-label": "Guidance for the next search (optional)",
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
    this.body = h(
      "div",
      { class: "zc-cp-body" },
      papers.length
        ? h(
            "div",
            { class: "zc-cp-papers" },
            h("div", { class: "zc-cp-label", text: `Papers covered so far (${papers.length})` }),
            h("ul", { "data-testid": "checkpoint-papers" }, papers.map((p) => h("li", { text: p }))),
          )
        : null,
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
    );
    this.title = h("span", { class: "zc-cp-title", "data-testid": "checkpoint-title", text: checkpointTitle(cp) });
    this.toggle = h("button", {
      type: "button",
      class: "zc-cp-toggle",
      "data-testid": "checkpoint-toggle",
      text: "Details",
      hidden: true,
      "aria-expanded": "false",
      onclick: () => this.setExpanded(this.body.hidden),
    });
    this.papers = papers;
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
        h("span", { class: "zc-cp-badge", text: `Extension ${this.extension} of ${cp.max_extensions ?? 2}` }),
        this.title,
        this.toggle,
      ),
      this.decision,
      this.body,
    );
  }

  /** The researcher's guidance, trimmed ("" when empty). */
  get guidance() {
    return this.guidanceEl.value.trim();
  }

  get isDecided() {
    return this.el.classList.contains("zc-checkpoint-decided");
  }

  setExpanded(expanded) {
    this.body.hidden = !expanded;
    this.toggle.setAttribute("aria-expanded", String(expanded));
    this.toggle.textContent = expanded ? "Hide" : "Details";
  }

  /** Freeze the card and collapse it to one line saying what happened to it. */
  disable(text) {
    this.el.classList.add("zc-checkpoint-decided");
    this.guidanceEl.disabled = true;
    this.grant.disabled = true;
    this.synthesize.disabled = true;
    this.decision.textContent = text;
    this.decision.hidden = false;
    this.title.hidden = true;
    this.toggle.hidden = false;
    this.setExpanded(false);
  }

  /** Record the decision just sent: the card freezes and says what was chosen. */
  decided(action, guidance) {
    const covered = this.papers.length ? ` (${plural(this.papers.length, "paper")} covered)` : "";
    let text =
      action === "extend_budget"
        ? `Extension ${this.extension} granted — searching further${covered}.`
        : `Synthesizing with the current evidence${covered}.`;
    if (guidance) text += ` Guidance: “${guidance}”`;
    this.disable(text);
    this.el.setAttribute("data-decision", action);
  }
}
