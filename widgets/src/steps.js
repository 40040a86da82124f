// The step list of one answer: the current step spins with a live clock; finished steps get a
// check mark and their duration; the list collapses under "n steps" once the answer is in.
import { formatSeconds, oneLine } from "./dom.js";

const STEP_LABEL_CHARS = 120; // a step is one line: a long question shows as its first words

export class StepList {
  /** `now()` is the panel's clock (ms), so the steps and the turn share one time base. */
  constructor(h, now) {
    this.h = h;
    this.now = now;
    this.entries = [];
    this.list = h("ol", { class: "zc-steps-list" });
    this.title = h("span", { class: "zc-steps-title", text: "Working" });
    this.summary = h("summary", { class: "zc-steps-summary" }, this.title);
    this.el = h("details", { class: "zc-steps", open: true, hidden: true }, this.summary, this.list);
  }

  get length() {
    return this.entries.length;
  }

  /** Stop the clock of the running step and mark it done. */
  closeCurrent() {
    const now = this.now();
    for (const step of this.entries) {
      if (step.endedAt === null) {
        step.endedAt = now;
        step.el.classList.remove("zc-step-current");
        step.el.classList.add("zc-step-done");
        step.timeEl.textContent = formatSeconds((step.endedAt - step.startedAt) / 1000);
      }
    }
  }

  /**
   * Close the running step and add `step` as the current one (already finished when `finished`
   * or when the turn is not `running`). `phase: "done"` adds no row: returns whether one was added.
   */
  add(step, { finished = false, running = true } = {}) {
    const h = this.h;
    this.closeCurrent();
    const phase = step.phase ?? "";
    if (phase === "done") return false; // the end of the work is shown by the answer itself
    const now = this.now();
    const timeEl = h("span", { class: "zc-step-time" });
    const el = h(
      "li",
      { class: "zc-step zc-step-current", "data-testid": "step", "data-phase": phase },
      h("span", { class: "zc-step-icon", "aria-hidden": "true" }),
      h("span", { class: "zc-step-label", text: oneLine(step.label, STEP_LABEL_CHARS), title: oneLine(step.label, 400) }),
      timeEl,
    );
    const entry = { el, timeEl, startedAt: now, endedAt: null };
    this.entries.push(entry);
    this.list.append(el);
    this.el.hidden = false;
    if (finished || !running) {
      entry.endedAt = now;
      el.classList.remove("zc-step-current");
      el.classList.add("zc-step-done");
      if (Number.isFinite(step.seconds)) timeEl.textContent = formatSeconds(step.seconds);
    }
    this.updateSummary(running);
    return true;
  }

  /** Refresh the running step's clock. */
  tick(running) {
    const now = this.now();
    for (const step of this.entries) {
      if (step.endedAt === null) step.timeEl.textContent = formatSeconds((now - step.startedAt) / 1000);
    }
    this.updateSummary(running);
  }

  updateSummary(running) {
    const n = this.entries.length;
    if (running) this.title.textContent = "Working";
    else this.title.textContent = `${n} step${n === 1 ? "" : "s"}`;
  }
}
