// Citations: the `[n]` markers of a rendered answer become buttons, and a button opens the
// popover with the cited passages (title, authors, where, the passage, its support).
import { safeZoteroUrl } from "./actions.js";
import { formatAuthors, icon } from "./dom.js";
import { renderMarkdownInto } from "./markdown.js";

// `[3]`, `[1, 2]`, `[1,2; 4]` — the flat single-ID citation markers of the synthesizer.
const CITATION_MARKER = /\[(\d+(?:\s*[,;]\s*\d+)*)\]/g;
const NO_CITATIONS_INSIDE = new Set(["CODE", "PRE", "A", "BUTTON", "MATH", "SCRIPT", "STYLE"]);

/**
 * Turn the markers in `answerEl`'s text into citation buttons. `citations` maps n → the
 * citations with that number; a marker with no known number stays plain text, and an unknown
 * number next to a known one is shown unlinked. `onOpen(button, n)` runs on a click.
 */
export function linkCitations(h, answerEl, citations, onOpen) {
  const doc = answerEl.ownerDocument;
  const win = doc.defaultView;
  const walker = doc.createTreeWalker(answerEl, win.NodeFilter.SHOW_TEXT, {
    acceptNode: (node) => {
      for (let p = node.parentNode; p && p !== answerEl; p = p.parentNode) {
        if (NO_CITATIONS_INSIDE.has(p.nodeName.toUpperCase()) || p.classList?.contains("katex")) {
          return win.NodeFilter.FILTER_REJECT;
        }
      }
      return win.NodeFilter.FILTER_ACCEPT;
    },
  });
  const textNodes = [];
  for (let n = walker.nextNode(); n; n = walker.nextNode()) textNodes.push(n);
  const seen = new Map(); // n → how many of its markers came before (each has its own page)
  for (const node of textNodes) {
    const value = node.nodeValue;
    CITATION_MARKER.lastIndex = 0;
    if (!CITATION_MARKER.test(value)) continue;
    const fragment = doc.createDocumentFragment();
    let last = 0;
    CITATION_MARKER.lastIndex = 0;
    for (let m = CITATION_MARKER.exec(value); m; m = CITATION_MARKER.exec(value)) {
      const numbers = m[1].split(/\s*[,;]\s*/).map(Number);
      if (!numbers.some((n) => citations.has(n))) continue;
      fragment.append(value.slice(last, m.index));
      fragment.append(citationGroup(h, numbers, citations, onOpen, seen));
      last = m.index + m[0].length;
    }
    fragment.append(value.slice(last));
    node.replaceWith(fragment);
  }
}

function citationGroup(h, numbers, citations, onOpen, seen) {
  const group = h("span", { class: "zc-cite-group" });
  numbers.forEach((n, i) => {
    if (i > 0) group.append(h("span", { class: "zc-cite-sep", text: "," }));
    if (citations.has(n)) {
      const k = seen.get(n) ?? 0;
      seen.set(n, k + 1);
      group.append(
        h("button", {
          type: "button",
          class: "zc-cite",
          "data-testid": "citation",
          "data-n": n,
          "data-occurrence": k,
          "aria-haspopup": "dialog",
          "aria-expanded": "false",
          "aria-label": `Citation ${n}: ${citations.get(n)[0].title ?? ""}`,
          text: String(n),
          onclick: (event) => {
            event.stopPropagation();
            onOpen(event.currentTarget, n);
          },
        }),
      );
    } else {
      group.append(h("span", { class: "zc-cite-unverified", text: String(n) }));
    }
  });
  return group;
}

function meterFill(h, percent) {
  const fill = h("span", { class: "zc-meter-fill" });
  fill.style.width = `${Math.max(0, Math.min(100, percent))}%`;
  return fill;
}

/** The window's rectangle cut by every box around `el` that clips what overflows it. */
function visibleArea(el) {
  const doc = el.ownerDocument;
  const view = doc.defaultView;
  const area = {
    top: 0,
    left: 0,
    bottom: view?.innerHeight || doc.documentElement.clientHeight || Infinity,
    right: view?.innerWidth || doc.documentElement.clientWidth || Infinity,
  };
  for (let box = el; box && box !== doc.documentElement; box = box.parentElement) {
    const style = view?.getComputedStyle(box);
    if (!style || style.display === "contents") continue; // no box of its own: clips nothing
    if (style.overflowX === "visible" && style.overflowY === "visible") continue;
    const r = box.getBoundingClientRect();
    if (!r.width || !r.height) continue; // a box without size shows nothing, clips nothing
    area.top = Math.max(area.top, r.top);
    area.left = Math.max(area.left, r.left);
    area.bottom = Math.min(area.bottom, r.bottom);
    area.right = Math.min(area.right, r.right);
  }
  return area;
}

/** The one citation popover of the panel; it lives in the panel's root and is placed by a button. */
export class CitationPopover {
  constructor(h) {
    this.h = h;
    this.anchor = null;
    this.el = h("div", {
      class: "zc-popover",
      "data-testid": "citation-popover",
      role: "dialog",
      "aria-label": "Citation",
      hidden: true,
    });
  }

  get open() {
    return !this.el.hidden;
  }

  contains(node) {
    return this.el.contains(node);
  }

  /** Open the popover for `button` (citation number `n`), or close it if it is open there. */
  toggle(button, citations, n) {
    if (this.anchor === button && this.open) {
      this.close();
      return;
    }
    this.close();
    const h = this.h;
    const k = Number(button?.dataset?.occurrence ?? 0);
    const entries = citations.map((c) => {
      // This marker's own place: the page of the sentence it stands after, and its link.
      const page = c.occurrences?.[k]?.page ?? c.page;
      const passage = h("blockquote", { class: "zc-pop-passage zc-markdown", "data-testid": "citation-passage" });
      renderMarkdownInto(passage, c.text || "");
      const where = [c.section ? `§ ${c.section}` : "", page != null ? `p. ${page}` : ""].filter(Boolean).join(" · ");
      const pdf = safeZoteroUrl(c.occurrence_links?.[k]) || safeZoteroUrl(c.links?.pdf);
      const support = Number.isFinite(c.support) ? Math.round(c.support * 100) : null;
      return h(
        "div",
        { class: "zc-pop-entry" },
        h("div", { class: "zc-pop-title", "data-testid": "citation-title", text: c.title || c.item_key }),
        h("div", {
          class: "zc-pop-meta",
          "data-testid": "citation-meta",
          text: [formatAuthors(c.authors), c.year ?? ""].filter(Boolean).join(" · "),
        }),
        where
          ? h(
              "div",
              { class: "zc-pop-where", "data-testid": "citation-where" },
              h("span", { text: where }),
              pdf ? [" · ", h("a", { href: pdf, class: "zc-source-link", "data-testid": "citation-pdf", title: "Open the PDF at this page in Zotero", text: page != null ? "Open PDF at this page" : "Open PDF" })] : null,
            )
          : null,
        c.text ? passage : null,
        h(
          "div",
          { class: "zc-pop-support", "data-testid": "citation-support" },
          support === null
            ? h("span", { text: "Support not verified" })
            : [
                h("span", { class: "zc-meter", "aria-hidden": "true" }, meterFill(h, support)),
                h("span", { text: `Support ${support}%` }),
              ],
        ),
      );
    });
    this.el.replaceChildren(
      h(
        "div",
        { class: "zc-pop-head" },
        h("span", { class: "zc-pop-n", text: `[${n}]` }),
        h(
          "button",
          { type: "button", class: "zc-icon-btn", "aria-label": "Close", onclick: () => this.close() },
          icon(h, "close"),
        ),
      ),
      ...entries,
    );
    this.el.hidden = false;
    this.anchor = button;
    button.setAttribute("aria-expanded", "true");
    this.position(button);
  }

  /**
   * Below the button, inside the visible part of the panel; above it when there is no room
   * below; in a view too short for either (a narrow side view), as tall as that part allows
   * and kept inside it, scrolling within.
   */
  position(button) {
    const root = this.el.parentElement; // the panel's root, which positions the popover
    const rootRect = root.getBoundingClientRect();
    const rect = button.getBoundingClientRect();
    // The part of the panel the reader sees: inside the window and every scrolling or
    // clipping box around it (a notebook scrolled, a narrow side view), in the panel's terms.
    const area = visibleArea(root);
    const top = Math.max(0, area.top - rootRect.top) + 8;
    const bottom = Math.min(rootRect.height, area.bottom - rootRect.top) - 8;
    const start = Math.max(0, area.left - rootRect.left) + 8;
    const end = Math.min(rootRect.width, area.right - rootRect.left) - 8;
    const width = Math.min(360, Math.max(160, end - start));
    const left = Math.max(start, Math.min(rect.left - rootRect.left - 16, end - width));
    const below = rect.bottom - rootRect.top + 6;
    this.el.style.width = `${width}px`;
    this.el.style.left = `${left}px`;
    this.el.style.maxHeight = `${Math.max(80, Math.min(420, bottom - top))}px`;
    this.el.style.top = `${below}px`;
    const height = this.el.offsetHeight || 0;
    if (height && below + height > bottom) {
      const above = rect.top - rootRect.top - height - 6;
      this.el.style.top = `${above >= top ? above : Math.max(top, bottom - height)}px`;
    }
  }

  close() {
    if (!this.open) return;
    this.el.hidden = true;
    this.el.replaceChildren();
    this.anchor?.setAttribute("aria-expanded", "false");
    this.anchor = null;
  }
}
