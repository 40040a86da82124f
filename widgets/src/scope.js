// The scope chips and picker: the whole library, 1–5 papers or some collections, picked by
// searching titles. The chip shows at once; the `scope` trait (what Python applied) wins when it
// changes or when Python refuses a scope.
import { formatAuthors, icon } from "./dom.js";

export const MAX_SCOPE_ITEMS = 5;
const SEARCH_DEBOUNCE_MS = 150;

const emptyScope = () => ({ mode: "library", items: [], collections: [] });

function normalizeScope(scope) {
  const s = scope && typeof scope === "object" ? scope : {};
  const mode = ["library", "items", "collections"].includes(s.mode) ? s.mode : "library";
  return {
    mode,
    items: mode === "items" ? [...(s.items ?? [])] : [],
    collections: mode === "collections" ? [...(s.collections ?? [])] : [],
  };
}

export class ScopePicker {
  /** `chat` is the panel (ChatView): its model, `send`, window, question input and busy state. */
  constructor(chat) {
    this.chat = chat;
    const h = chat.h;
    this.h = h;
    this.localScope = null; // picked here, not yet confirmed by the trait
    this.titleResults = { query: "", items: [], collections: [] };
    this.resultEntries = [];
    this.activeResult = -1;
    this.chips = h("div", { class: "zc-chips" });
    this.search = h("input", {
      type: "search",
      class: "zc-scope-search",
      "data-testid": "scope-search",
      placeholder: "Add papers or a collection…",
      "aria-label": "Search library titles to narrow the scope",
      autocomplete: "off",
      spellcheck: "false",
    });
    this.resultsEl = h("ul", { class: "zc-results", "data-testid": "title-results", role: "listbox", hidden: true });
    this.el = h(
      "div",
      { class: "zc-scope", "data-testid": "scope" },
      h("span", { class: "zc-scope-label", text: "Searching" }),
      this.chips,
      h("div", { class: "zc-scope-picker" }, this.search, this.resultsEl),
    );
  }

  /** Register the search box's listeners through the panel's `on` (which removes them on dispose). */
  listen(on) {
    on(this.search, "input", () => this.onSearchInput());
    on(this.search, "keydown", (event) => this.onSearchKeydown(event));
    on(this.search, "blur", () => this.chat.win.setTimeout(() => this.hideResults(), 150));
  }

  dispose() {
    this.chat.win.clearTimeout(this.searchTimer);
  }

  /** Show the scope Python has (the trait changed, or Python refused the one picked here). */
  reset() {
    this.localScope = null;
    this.render();
  }

  scope() {
    return this.localScope ?? normalizeScope(this.chat.model.get("scope"));
  }

  render() {
    const h = this.h;
    const scope = this.scope();
    const chips = [];
    const removable = (kind, key, label, title, iconName) =>
      h(
        "span",
        { class: `zc-chip zc-chip-${kind}`, "data-testid": "scope-chip", "data-kind": kind, "data-key": key, title },
        icon(h, iconName, "zc-chip-icon"),
        h("span", { class: "zc-chip-label", text: label }),
        h(
          "button",
          {
            type: "button",
            class: "zc-chip-remove",
            "data-testid": "scope-chip-remove",
            "aria-label": `Remove ${title}`,
            onclick: () => this.remove(kind, key),
          },
          icon(h, "close"),
        ),
      );
    if (scope.mode === "items") {
      for (const item of scope.items) {
        const label = item.year ? `${item.title} (${item.year})` : item.title;
        chips.push(removable("item", item.key, label, item.title || item.key, "paper"));
      }
    } else if (scope.mode === "collections") {
      for (const c of scope.collections) chips.push(removable("collection", c.key, c.name, c.name || c.key, "folder"));
    }
    if (chips.length === 0) {
      chips.push(
        h(
          "span",
          { class: "zc-chip zc-chip-library", "data-testid": "scope-chip", "data-kind": "library" },
          icon(h, "library", "zc-chip-icon"),
          h("span", { class: "zc-chip-label", text: "Whole library" }),
        ),
      );
    } else {
      chips.push(
        h("button", {
          type: "button",
          class: "zc-scope-reset",
          "data-testid": "scope-reset",
          text: "Clear",
          title: "Search the whole library again",
          onclick: () => this.set(emptyScope()),
        }),
      );
    }
    this.chips.replaceChildren(...chips);
    const full = scope.mode === "items" && scope.items.length >= MAX_SCOPE_ITEMS;
    this.search.placeholder = full ? `${MAX_SCOPE_ITEMS} papers at most` : "Add papers or a collection…";
    let placeholder = "Ask about your whole library…";
    if (scope.mode === "items") {
      placeholder = scope.items.length === 1 ? "Ask about this paper…" : `Ask about these ${scope.items.length} papers…`;
    } else if (scope.mode === "collections") {
      placeholder = scope.collections.length === 1 ? `Ask about “${scope.collections[0].name}”…` : "Ask about these collections…";
    }
    this.chat.input.placeholder = placeholder;
  }

  set(scope) {
    const next = normalizeScope(scope);
    this.localScope = next;
    this.chat.send({ kind: "set_scope", scope: next });
    this.render();
  }

  add(kind, entry) {
    const scope = this.scope();
    if (kind === "item") {
      const items = scope.mode === "items" ? scope.items : [];
      if (items.some((i) => i.key === entry.key) || items.length >= MAX_SCOPE_ITEMS) return;
      this.set({ mode: "items", items: [...items, { key: entry.key, title: entry.title, year: entry.year ?? null }], collections: [] });
    } else {
      const collections = scope.mode === "collections" ? scope.collections : [];
      if (collections.some((c) => c.key === entry.key)) return;
      this.set({ mode: "collections", items: [], collections: [...collections, { key: entry.key, name: entry.name }] });
    }
  }

  remove(kind, key) {
    const scope = this.scope();
    if (kind === "item") {
      const items = scope.items.filter((i) => i.key !== key);
      this.set(items.length ? { mode: "items", items, collections: [] } : emptyScope());
    } else {
      const collections = scope.collections.filter((c) => c.key !== key);
      this.set(collections.length ? { mode: "collections", items: [], collections } : emptyScope());
    }
  }

  // Title search -------------------------------------------------------------------------------

  onSearchInput() {
    const win = this.chat.win;
    win.clearTimeout(this.searchTimer);
    const query = this.search.value.trim();
    if (!query) {
      this.hideResults();
      return;
    }
    this.searchTimer = win.setTimeout(() => this.chat.send({ kind: "search_titles", query }), SEARCH_DEBOUNCE_MS);
  }

  /** A `title_results` message: shown unless it answers an older query. */
  onTitleResults(msg) {
    if ((msg.query ?? "") !== this.search.value.trim()) return; // a stale answer
    this.titleResults = { query: msg.query, items: msg.items ?? [], collections: msg.collections ?? [] };
    this.renderResults();
  }

  renderResults() {
    const h = this.h;
    const scope = this.scope();
    const pickedItems = new Set(scope.mode === "items" ? scope.items.map((i) => i.key) : []);
    const pickedCollections = new Set(scope.mode === "collections" ? scope.collections.map((c) => c.key) : []);
    const full = scope.mode === "items" && scope.items.length >= MAX_SCOPE_ITEMS;
    this.resultEntries = [];
    const rows = [];
    for (const c of this.titleResults.collections) {
      if (pickedCollections.has(c.key)) continue;
      this.resultEntries.push({ kind: "collection", entry: c });
      rows.push(
        h(
          "li",
          { class: "zc-result zc-result-collection", "data-testid": "title-result", "data-key": c.key, role: "option" },
          icon(h, "folder", "zc-result-icon"),
          h("span", { class: "zc-result-title", text: c.name }),
          h("span", { class: "zc-result-meta", text: "Collection" }),
        ),
      );
    }
    for (const item of this.titleResults.items) {
      if (pickedItems.has(item.key)) continue;
      this.resultEntries.push({ kind: "item", entry: item, disabled: full });
      rows.push(
        h(
          "li",
          {
            class: "zc-result zc-result-item",
            "data-testid": "title-result",
            "data-key": item.key,
            role: "option",
            "aria-disabled": full ? "true" : null,
          },
          icon(h, "paper", "zc-result-icon"),
          h("span", { class: "zc-result-title", text: item.title }),
          h("span", {
            class: "zc-result-meta",
            text: [formatAuthors(item.authors), item.year ?? ""].filter(Boolean).join(" · "),
          }),
        ),
      );
    }
    rows.forEach((row, index) => {
      row.addEventListener("mousedown", (event) => event.preventDefault()); // keep focus in the search box
      row.addEventListener("click", () => this.pickResult(index));
    });
    if (rows.length === 0) rows.push(h("li", { class: "zc-result-empty", text: "No matching titles" }));
    this.activeResult = -1;
    this.resultsEl.replaceChildren(...rows);
    this.resultsEl.hidden = false;
  }

  pickResult(index) {
    const picked = this.resultEntries[index];
    if (!picked || picked.disabled) return;
    this.add(picked.kind, picked.entry);
    this.search.value = "";
    this.hideResults();
  }

  hideResults() {
    this.resultsEl.hidden = true;
    this.activeResult = -1;
  }

  onSearchKeydown(event) {
    event.stopPropagation(); // keep JupyterLab's notebook shortcuts out of the search box
    const count = this.resultEntries.length;
    if (event.key === "ArrowDown" || event.key === "ArrowUp") {
      if (this.resultsEl.hidden || count === 0) return;
      event.preventDefault();
      const delta = event.key === "ArrowDown" ? 1 : -1;
      this.activeResult = (this.activeResult + delta + count) % count;
      [...this.resultsEl.children].forEach((row, i) => row.classList.toggle("zc-result-active", i === this.activeResult));
    } else if (event.key === "Enter") {
      event.preventDefault();
      if (!this.resultsEl.hidden) this.pickResult(this.activeResult >= 0 ? this.activeResult : 0);
    } else if (event.key === "Escape") {
      if (!this.resultsEl.hidden) this.hideResults();
      else if (this.chat.isBusy()) this.chat.stop();
    } else if (event.key === "Backspace" && !this.search.value) {
      const scope = this.scope();
      if (scope.mode === "items" && scope.items.length) this.remove("item", scope.items.at(-1).key);
      else if (scope.mode === "collections" && scope.collections.length) {
        this.remove("collection", scope.collections.at(-1).key);
      }
    }
  }
}
