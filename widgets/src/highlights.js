// "Highlight in Zotero" under every answer: its verified quotes written as highlights in the
// papers' PDFs in the Zotero web library. The button first asks Python for a dry run
// (`annotate` without `confirmed`), so the confirm step lists each highlight (paper, page,
// sentence) and what will be skipped and why; only its button sends `confirmed: true`, and
// Python's `annotate_result` says what was written.

const STATES = { written: "written", already: "already in Zotero", "would write": "", failed: "failed", pending: "not sent yet" };

export class Highlighter {
  /** `turn` is the answer's TurnView: its chat, turn id and bubble. */
  constructor(turn) {
    const h = turn.h;
    this.turn = turn;
    this.h = h;
    this.busy = false;
    this.button = h("button", {
      type: "button",
      class: "zc-action",
      "data-testid": "highlight-quotes",
      title: "Write this answer's verified quotes as highlights in your PDFs in Zotero",
      "aria-label": "Write this answer's verified quotes as highlights in your PDFs in Zotero",
      text: "Highlight in Zotero",
      onclick: () => this.ask(),
    });
    this.confirmEl = h("div", { class: "zc-save-confirm", "data-testid": "highlight-confirm", role: "dialog", "aria-label": "Confirm the highlights", hidden: true });
    this.resultEl = h("div", { class: "zc-save-result", "data-testid": "highlight-result", role: "status", hidden: true });
  }

  /** Ask Python what would be written (a dry run); the confirm step shows its answer. */
  ask() {
    if (this.busy || !this.turn.turnId) return;
    if (!this.turn.chat.send({ kind: "annotate", turn_id: this.turn.turnId })) return;
    this.busy = true;
    this.button.disabled = true;
    this.show("Finding the quotes in the PDFs…", "pending");
  }

  cancel() {
    this.confirmEl.hidden = true;
    this.confirmEl.replaceChildren();
  }

  confirm() {
    if (this.busy) return;
    if (!this.turn.chat.send({ kind: "annotate", turn_id: this.turn.turnId, confirmed: true })) return;
    this.cancel();
    this.busy = true;
    this.button.disabled = true;
    this.show("Writing the highlights…", "pending");
  }

  show(text, state) {
    this.resultEl.replaceChildren(this.h("span", { text }));
    this.resultEl.setAttribute("data-state", state);
    this.resultEl.hidden = false;
  }

  /** The highlights and the skipped quotes, as plain text lines. */
  lines(msg) {
    const h = this.h;
    const rows = (msg.highlights || []).map((x) => {
      const state = STATES[x.state] ?? x.state;
      return h("li", { class: "zc-highlight", "data-state": x.state, text: `${x.title}, p. ${x.page_label}: “${x.quote}”${state ? ` (${state})` : ""}` });
    });
    const skipped = (msg.skipped || []).map((x) => h("li", { class: "zc-highlight-skipped", text: `Skipped${x.title ? ` (${x.title})` : ""}: “${x.quote}”: ${x.why}` }));
    return h("ul", { class: "zc-highlight-list", "data-testid": "highlight-list" }, ...rows, ...skipped);
  }

  /** Python's `annotate_result`: a dry run opens the confirm step; a write shows the result. */
  onResult(msg) {
    const h = this.h;
    this.busy = false;
    this.button.disabled = false;
    const n = (msg.highlights || []).length;
    if (msg.dry_run && msg.ok && n) {
      this.resultEl.hidden = true;
      this.confirmEl.replaceChildren(
        h("div", { class: "zc-confirm-title", text: `Write ${n} highlight${n === 1 ? "" : "s"} in your Zotero web library?` }),
        this.lines(msg),
        h("p", { class: "zc-confirm-note", text: "Nothing is written until you confirm; a highlight already there is not written again. Your Zotero database file is never touched." }),
        h(
          "div",
          { class: "zc-confirm-buttons" },
          h("button", { type: "button", class: "zc-action zc-primary", "data-testid": "confirm-highlights", text: "Write highlights", onclick: () => this.confirm() }),
          h("button", { type: "button", class: "zc-action", "data-testid": "cancel-highlights", text: "Cancel", onclick: () => this.cancel() }),
        ),
      );
      this.confirmEl.hidden = false;
      return;
    }
    const said = msg.message || (msg.dry_run ? "No quote of this answer can be highlighted." : msg.ok ? "Highlights written." : "Not every highlight was written.");
    this.resultEl.replaceChildren(h("span", { text: said }), this.lines(msg));
    this.resultEl.setAttribute("data-state", msg.ok && n ? "done" : "error");
    this.resultEl.hidden = false;
  }
}
