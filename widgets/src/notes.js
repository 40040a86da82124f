// "Save as note" under every answer: the answer, its linked citations and its sources (with the
// pages they were found on) as a Zotero note. A confirm step names where it will be written
// (the Zotero app, or the web library: there a child note of the one cited paper); only its
// button sends `save_note` with `confirmed: true`, and Python's `note_result` says what happened.

export const NOTE_DESTINATIONS = [
  { to: "connector", label: "Zotero app", where: "the Zotero app on this computer, as a note in the collection selected there" },
  { to: "web", label: "Zotero web library", where: "your Zotero web library (a child note of the paper when the answer cites one)" },
];

export class NoteSaver {
  /** `turn` is the answer's TurnView: its chat, turn id and bubble. */
  constructor(turn) {
    const h = turn.h;
    this.turn = turn;
    this.h = h;
    this.saving = false;
    this.button = h("button", {
      type: "button",
      class: "zc-action",
      "data-testid": "save-note",
      title: "Save the answer and its sources as a Zotero note",
      "aria-label": "Save the answer and its sources as a Zotero note",
      text: "Save as note",
      onclick: () => this.ask(),
    });
    this.confirmEl = h("div", { class: "zc-save-confirm", "data-testid": "note-confirm", role: "dialog", "aria-label": "Confirm saving the note", hidden: true });
    this.resultEl = h("div", { class: "zc-save-result", "data-testid": "note-result", role: "status", hidden: true });
  }

  /** The confirm step: where the note goes. Nothing is sent before its button. */
  ask() {
    const h = this.h;
    if (this.saving || !this.turn.turnId) return;
    const select = h(
      "select",
      { class: "zc-save-destination", "data-testid": "note-destination", "aria-label": "Save the note to" },
      NOTE_DESTINATIONS.map((d) => h("option", { value: d.to, text: d.label })),
    );
    const title = h("div", { class: "zc-confirm-title" });
    const describe = () => {
      const dest = NOTE_DESTINATIONS.find((d) => d.to === select.value) ?? NOTE_DESTINATIONS[0];
      title.textContent = `Save this answer and its sources as a note in ${dest.where}?`;
    };
    select.addEventListener("change", describe);
    describe();
    this.resultEl.hidden = true;
    this.confirmEl.replaceChildren(
      title,
      h("div", { class: "zc-save-row" }, h("label", { class: "zc-save-label", text: "Save to" }), select),
      h("p", { class: "zc-confirm-note", text: "Nothing is written until you confirm. Your Zotero database file is never touched." }),
      h(
        "div",
        { class: "zc-confirm-buttons" },
        h("button", { type: "button", class: "zc-action zc-primary", "data-testid": "confirm-note", text: "Save note", onclick: () => this.confirm(select.value) }),
        h("button", { type: "button", class: "zc-action", "data-testid": "cancel-note", text: "Cancel", onclick: () => this.cancel() }),
      ),
    );
    this.confirmEl.hidden = false;
  }

  cancel() {
    this.confirmEl.hidden = true;
    this.confirmEl.replaceChildren();
  }

  confirm(to) {
    if (this.saving) return;
    if (!this.turn.chat.send({ kind: "save_note", turn_id: this.turn.turnId, to, confirmed: true })) return;
    this.cancel();
    this.saving = true;
    this.button.disabled = true;
    this.show("Saving the note…", "pending");
  }

  show(text, state) {
    this.resultEl.replaceChildren(this.h("span", { text }));
    this.resultEl.setAttribute("data-state", state);
    this.resultEl.hidden = false;
  }

  /** Python's `note_result`: `{turn_id, ok, message}`. */
  onResult(msg) {
    this.saving = false;
    this.button.disabled = false;
    this.show(msg.message || (msg.ok ? "Saved the note." : "The note was not saved."), msg.ok ? "done" : "error");
  }
}
