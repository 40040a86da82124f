// "Add a paper by identifier", in the staging tray: DOIs, arXiv ids or ISBNs (one or several,
// separated by spaces or commas) added to Zotero — the Zotero app or the web library, as the
// tray's destination says. A confirm step lists what will be looked up and where it goes;
// only its button sends `add_papers` with `confirmed: true`. Python answers with a
// `save_result`, shown in the tray as a save of the staging list is.
const WRITERS = new Set(["connector", "web"]);
const MAX = 20;

export function identifiersOf(text) {
  return [...new Set(String(text ?? "").split(/[\s,;]+/).map((s) => s.trim()).filter(Boolean))].slice(0, MAX);
}

export class AddPapers {
  /** `tray` is the StagedTray: its chat, destination and result area. */
  constructor(tray) {
    const h = tray.h;
    this.tray = tray;
    this.h = h;
    this.input = h("input", {
      type: "text",
      class: "zc-add-input",
      "data-testid": "add-identifiers",
      placeholder: "DOI, arXiv id or ISBN…",
      "aria-label": "Add a paper by DOI, arXiv id or ISBN",
      onkeydown: (event) => {
        if (event.key === "Enter") this.ask();
      },
    });
    this.button = h("button", { type: "button", class: "zc-action", "data-testid": "add-papers", text: "Add…", onclick: () => this.ask() });
    this.confirmEl = h("div", { class: "zc-save-confirm", "data-testid": "add-confirm", role: "dialog", "aria-label": "Confirm adding", hidden: true });
    this.el = h(
      "div",
      { class: "zc-add-papers" },
      h("div", { class: "zc-save-row" }, h("label", { class: "zc-save-label", text: "Add a paper by identifier" })),
      h("div", { class: "zc-save-row" }, this.input, this.button),
      this.confirmEl,
    );
  }

  destination() {
    const to = this.tray.destination.value;
    return this.tray.destinationOf(WRITERS.has(to) ? to : "connector");
  }

  ask() {
    const h = this.h;
    const ids = identifiersOf(this.input.value);
    if (!ids.length || this.tray.saving) return;
    const dest = this.destination();
    this.confirmEl.replaceChildren(
      h("div", { class: "zc-confirm-title", text: `Look up ${ids.length === 1 ? "this paper" : `these ${ids.length} papers`} and add ${ids.length === 1 ? "it" : "them"} to ${dest.where}?` }),
      h("ul", { class: "zc-confirm-list" }, ids.map((i) => h("li", { text: i }))),
      h("p", { class: "zc-confirm-note", text: "A paper already in Zotero is not added again. Nothing is written until you confirm." }),
      h(
        "div",
        { class: "zc-confirm-buttons" },
        h("button", { type: "button", class: "zc-action zc-primary", "data-testid": "confirm-add", text: "Add", onclick: () => this.confirm(ids, dest.to) }),
        h("button", { type: "button", class: "zc-action", "data-testid": "cancel-add", text: "Cancel", onclick: () => this.cancel() }),
      ),
    );
    this.confirmEl.hidden = false;
  }

  cancel() {
    this.confirmEl.hidden = true;
    this.confirmEl.replaceChildren();
  }

  confirm(ids, to) {
    if (!this.tray.chat.send({ kind: "add_papers", ids, to, confirmed: true })) return;
    this.cancel();
    this.input.value = "";
    this.tray.saving = true;
    this.tray.showResult([this.h("span", { text: "Adding…" })], "pending");
    this.tray.render();
  }
}
