// The staging list (the `staged` trait: the open session's candidates waiting to be saved): a
// "Staged (N)" button in the header opens a tray listing them with Remove, a destination (the
// Zotero app, the Zotero web library, a RIS or BibTeX download) and Save. Saving always shows
// a confirm step naming what will be written where; only its button sends `save_staged` with
// `confirmed: true`. The `save_result` says what happened; a file arrives as a download.
import { AddPapers } from "./adding.js";
import { candidateMeta } from "./candidates.js";
import { icon, oneLine } from "./dom.js";

export const DESTINATIONS = [
  { to: "connector", label: "Zotero app", where: "the Zotero app on this computer, into the collection selected there (Zotero must be running)" },
  { to: "web", label: "Zotero web library", where: "your Zotero web library, online through the Zotero Web API" },
  { to: "ris", label: "Download RIS", where: "a RIS file your browser downloads (nothing is written to Zotero)" },
  { to: "bibtex", label: "Download BibTeX", where: "a BibTeX file your browser downloads (nothing is written to Zotero)" },
];
const FILE_TARGETS = new Set(["ris", "bibtex"]);
const plural = (n) => `${n} paper${n === 1 ? "" : "s"}`;

export class StagedTray {
  /** `chat` is the panel (ChatView): its model, `send`, window and turns. */
  constructor(chat) {
    this.chat = chat;
    const h = chat.h;
    this.h = h;
    this.confirming = null; // the ids the confirm step lists
    this.saving = false;
    this.button = h("button", {
      type: "button",
      class: "zc-staged-toggle",
      "data-testid": "staged-toggle",
      "aria-expanded": "false",
      title: "Papers staged for saving to Zotero",
      onclick: () => this.setOpen(this.el.hidden),
    });
    this.list = h("ol", { class: "zc-staged-list", "data-testid": "staged-list" });
    this.destination = h(
      "select",
      {
        class: "zc-save-destination",
        "data-testid": "save-destination",
        "aria-label": "Save to",
        onchange: () => {
          this.cancelConfirm();
          this.render();
        },
      },
      DESTINATIONS.map((d) => h("option", { value: d.to, text: d.label })),
    );
    this.saveButton = h("button", { type: "button", class: "zc-action zc-save", "data-testid": "save-staged", onclick: () => this.askConfirm() });
    this.confirmEl = h("div", { class: "zc-save-confirm", "data-testid": "save-confirm", role: "dialog", "aria-label": "Confirm saving", hidden: true });
    this.resultEl = h("div", { class: "zc-save-result", "data-testid": "save-result", role: "status", hidden: true });
    this.el = h(
      "section",
      { class: "zc-staged-tray", "data-testid": "staged-tray", "aria-label": "Staged papers", hidden: true },
      h(
        "div",
        { class: "zc-staged-head" },
        h("span", { class: "zc-staged-title", text: "Staged for Zotero" }),
        h("button", { type: "button", class: "zc-icon-btn", "aria-label": "Close", title: "Close", onclick: () => this.setOpen(false) }, icon(h, "close")),
      ),
      this.list,
      h("div", { class: "zc-save-row" }, h("label", { class: "zc-save-label", text: "Save to" }), this.destination, this.saveButton),
      this.confirmEl,
      this.resultEl,
    );
    this.adder = new AddPapers(this);
    this.resultEl.before(this.adder.el);
  }

  staged() {
    return (this.chat.model.get("staged") || []).filter((c) => c && c.id);
  }

  isStaged(id) {
    return this.staged().some((c) => c.id === id);
  }

  stage(candidate) {
    return this.chat.send({ kind: "stage", ids: [candidate.id] });
  }

  unstage(candidate) {
    return this.chat.send({ kind: "unstage", ids: [candidate.id] });
  }

  setOpen(open) {
    this.el.hidden = !open;
    this.button.setAttribute("aria-expanded", open ? "true" : "false");
    if (!open) this.cancelConfirm();
    this.render();
  }

  /** Show the `staged` trait: the header's count and the tray's list. */
  render() {
    const h = this.h;
    const staged = this.staged();
    this.button.textContent = `Staged (${staged.length})`;
    this.button.hidden = false; // the tray also adds papers by identifier: always reachable
    this.list.replaceChildren(
      ...(staged.length
        ? staged.map((c) =>
            h(
              "li",
              { class: "zc-staged-item", "data-testid": "staged-item", "data-candidate-id": c.id },
              h("span", { class: "zc-staged-text" }, h("span", { class: "zc-staged-name", text: c.title || c.id }), h("span", { class: "zc-staged-meta", text: candidateMeta(c) })),
              h("button", {
                type: "button",
                class: "zc-action zc-unstage",
                "data-testid": "unstage-button",
                title: "Take it off the list",
                text: "Remove",
                onclick: () => this.unstage(c),
              }),
            ),
          )
        : [h("li", { class: "zc-staged-empty", text: "Nothing staged yet: press Stage on a paper found beyond your library." })]),
    );
    const file = FILE_TARGETS.has(this.destination.value);
    this.saveButton.textContent = file ? "Download…" : "Save to Zotero…";
    this.saveButton.disabled = staged.length === 0 || this.saving;
    // The confirm step lists what will be written: it goes when that list no longer holds.
    if (this.confirming && !this.confirming.every((id) => staged.some((c) => c.id === id))) this.cancelConfirm();
  }

  destinationOf(to) {
    return DESTINATIONS.find((d) => d.to === to) ?? DESTINATIONS[0];
  }

  /** The confirm step: what will be written where. Nothing is sent before its button. */
  askConfirm() {
    const h = this.h;
    const staged = this.staged();
    if (!staged.length || this.saving) return;
    const dest = this.destinationOf(this.destination.value);
    this.confirming = staged.map((c) => c.id);
    this.resultEl.hidden = true;
    this.confirmEl.replaceChildren(
      h("div", { class: "zc-confirm-title", text: `${FILE_TARGETS.has(dest.to) ? "Export" : "Save"} ${plural(staged.length)} to ${dest.where}?` }),
      h("ul", { class: "zc-confirm-list" }, staged.map((c) => h("li", { text: oneLine(c.title || c.id, 120) }))),
      h("p", { class: "zc-confirm-note", text: "Nothing is written until you confirm. Your Zotero database file is never touched." }),
      h(
        "div",
        { class: "zc-confirm-buttons" },
        h("button", { type: "button", class: "zc-action zc-primary", "data-testid": "confirm-save", text: FILE_TARGETS.has(dest.to) ? "Download" : `Save ${plural(staged.length)}`, onclick: () => this.confirm(dest.to) }),
        h("button", { type: "button", class: "zc-action", "data-testid": "cancel-save", text: "Cancel", onclick: () => this.cancelConfirm() }),
      ),
    );
    this.confirmEl.hidden = false;
  }

  cancelConfirm() {
    this.confirming = null;
    this.confirmEl.hidden = true;
    this.confirmEl.replaceChildren();
  }

  confirm(to) {
    const ids = this.confirming;
    if (!ids?.length || this.saving) return;
    if (!this.chat.send({ kind: "save_staged", to, ids, confirmed: true })) return;
    this.cancelConfirm();
    this.saving = true;
    this.showResult([this.h("span", { text: "Saving…" })], "pending");
    this.render();
  }

  showResult(children, state) {
    this.resultEl.replaceChildren(...children);
    this.resultEl.setAttribute("data-state", state);
    this.resultEl.hidden = false;
  }

  /** Python's `save_result`: saved N where, each failure with its reason, or why nothing was. */
  onSaveResult(msg) {
    const h = this.h;
    this.saving = false;
    if (!msg.ok) {
      this.showResult([h("span", { class: "zc-save-error", "data-testid": "save-error", text: msg.message || "Nothing was saved." })], "error");
      this.setOpen(true);
      return;
    }
    const saved = (msg.saved ?? []).length;
    const failed = msg.failed ?? [];
    const parts = [];
    if (msg.file && this.download(msg.file)) {
      parts.push(h("span", { text: `Downloaded ${msg.file.name} (${plural(saved)}).` }));
    } else if (msg.file) {
      parts.push(h("span", { class: "zc-save-error", text: "The browser refused the download." }));
    } else if (saved) {
      parts.push(h("span", { text: `Saved ${plural(saved)} to ${msg.where || "Zotero"}.` }));
    }
    const unattached = msg.unattached ?? [];
    if (msg.attached || unattached.length) {
      // Zotero's resolvers looked for each saved paper's PDF (connector only).
      const tried = (msg.attached ?? 0) + unattached.length;
      parts.push(
        h("div", { "data-testid": "save-pdfs", text: `Zotero attached PDFs to ${msg.attached ?? 0} of ${tried}.` }),
        h("ul", { class: "zc-save-failed" }, unattached.map((f) => h("li", { "data-testid": "save-unattached", text: `${oneLine(f.title || f.id, 80)}: ${f.reason}` }))),
      );
    }
    if (failed.length) {
      parts.push(
        h("div", { class: "zc-save-error", text: `Not saved: ${plural(failed.length)}` }),
        h("ul", { class: "zc-save-failed" }, failed.map((f) => h("li", { "data-testid": "save-failed", text: `${oneLine(f.title || f.id, 80)}: ${f.reason}` }))),
      );
    }
    if (msg.message) parts.push(h("div", { class: "zc-save-error", "data-testid": "save-message", text: msg.message }));
    if (!parts.length) parts.push(h("span", { text: "Nothing was saved." }));
    this.showResult(parts, failed.length || msg.message ? "partial" : "done");
    this.setOpen(true);
  }

  /** Hand `file` ({name, mime, text}) to the browser as a download (a Blob URL). */
  download(file) {
    const win = this.chat.win;
    const doc = this.chat.doc;
    try {
      const blob = new win.Blob([String(file.text ?? "")], { type: `${file.mime || "text/plain"};charset=utf-8` });
      const url = win.URL.createObjectURL(blob);
      const link = this.h("a", { href: url, download: file.name || "zocrates-staged.txt", hidden: true });
      doc.body.append(link);
      link.click();
      link.remove();
      win.setTimeout(() => win.URL.revokeObjectURL(url), 10_000);
      return true;
    } catch {
      return false;
    }
  }
}
