// The Sources block under an answer: the cited papers with their numbers and the pages their
// passages are on, and the other papers considered (collapsed). A paper from Zotero links to its
// item and to its PDF in the Zotero app, at the first cited page when one is known (plain
// `zotero://` links, built only from the URLs Python sends and checked here). A paper the
// scholarly record flags (`notice`: "this paper was retracted in 2021") says so in its row.
import { safeZoteroUrl } from "./actions.js";
import { formatAuthors } from "./dom.js";
import { pagesLabel, pagesOf, pdfCitationOf } from "./references.js";

function zoteroLinks(h, source, citations) {
  const select = safeZoteroUrl(source.links?.select);
  const pdf = safeZoteroUrl(pdfCitationOf(source, citations)?.links?.pdf) || safeZoteroUrl(source.links?.pdf);
  if (!select && !pdf) return null;
  return h(
    "span",
    { class: "zc-source-links" },
    select ? h("a", { href: select, class: "zc-source-link", "data-testid": "zotero-select", title: "Show in Zotero", text: "Zotero" }) : null,
    pdf ? h("a", { href: pdf, class: "zc-source-link", "data-testid": "zotero-pdf", title: "Open the PDF in Zotero", text: "PDF" }) : null,
  );
}

/** Replace `slot`'s content with the Sources block (nothing when there are no sources). */
export function renderSources(h, slot, cited, other, citations = []) {
  slot.replaceChildren();
  if (cited.length === 0 && other.length === 0) return;
  const row = (source) =>
    h(
      "li",
      { class: "zc-source", "data-item-key": source.item_key ?? "" },
      source.n != null
        ? h("span", { class: "zc-source-n", text: (source.numbers?.length ? source.numbers : [source.n]).join(", ") })
        : null,
      h(
        "span",
        { class: "zc-source-text" },
        h("span", { class: "zc-source-title", text: source.title || source.item_key || "Untitled" }),
        h("span", {
          class: "zc-source-meta",
          text: [formatAuthors(source.authors), source.year ?? "", source.n != null ? pagesLabel(pagesOf(source, citations)) : ""]
            .filter(Boolean)
            .join(" · "),
        }),
        source.notice ? h("span", { class: "zc-retraction", "data-testid": "source-retracted", text: `⚠ ${source.notice}` }) : null,
      ),
      zoteroLinks(h, source, source.n != null ? citations : []),
    );
  const citedEl = h(
    "div",
    { class: "zc-sources-cited", "data-testid": "sources-cited" },
    h("div", { class: "zc-sources-heading", text: "Cited" }),
    cited.length
      ? h("ol", { class: "zc-source-list" }, cited.map(row))
      : h("p", { class: "zc-sources-none", text: "No passage was verified as supporting the answer." }),
  );
  const otherEl = h(
    "details",
    { class: "zc-sources-other", "data-testid": "sources-other" },
    h("summary", { class: "zc-sources-heading", text: `Other considered (${other.length})` }),
    h("ul", { class: "zc-source-list" }, other.map(row)),
  );
  if (other.length === 0) otherEl.hidden = true;
  slot.append(h("section", { class: "zc-sources", "aria-label": "Sources" }, citedEl, otherEl));
}
