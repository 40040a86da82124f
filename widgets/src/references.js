// An answer's references as they travel outside the panel (copied Markdown, a notebook cell):
// each paper linked by https — its DOI, else its own page — since JupyterLab's sanitizer drops
// `zotero://` links from cells, and the pages its cited passages are on. The panel itself
// keeps the `zotero://` links (Sources, the citation popover), which open Zotero from there.
import { formatAuthors } from "./dom.js";

/** An http(s) URL Python sent, or "" for anything else. */
export function safeHttpUrl(url) {
  return typeof url === "string" && /^https?:\/\/[^\s<>"]+$/i.test(url) ? url : "";
}

/** The sorted pages a source's cited sentences stand on (`citations`: the turn's list). */
export function pagesOf(source, citations = []) {
  const numbers = new Set(source.numbers?.length ? source.numbers : [source.n]);
  // Each [n]'s own page (the sentence it supports), else the citation's.
  const pages = citations
    .filter((c) => numbers.has(c.n))
    .flatMap((c) => (c.occurrences?.length ? c.occurrences.map((o) => o.page ?? c.page) : [c.page]))
    .filter((p) => Number.isInteger(p) && p > 0);
  return [...new Set(pages)].sort((a, b) => a - b);
}

/** "p. 4", "pp. 4, 7", or "" when no page is known. */
export function pagesLabel(pages) {
  if (!pages.length) return "";
  return `${pages.length === 1 ? "p." : "pp."} ${pages.join(", ")}`;
}

/** The first citation of a source that opens its PDF at a page (its `links.pdf`), or null. */
export function pdfCitationOf(source, citations = []) {
  const numbers = new Set(source.numbers?.length ? source.numbers : [source.n]);
  return citations.find((c) => numbers.has(c.n) && c.links?.pdf) ?? null;
}

function markdownUrl(url) {
  return url.replace(/[()\s]/g, (ch) => encodeURIComponent(ch));
}

/** One Markdown reference line: "- [1, 3] [Title](https://doi.org/…) (Authors, 2014), p. 4". */
export function referenceLine(source, citations, escape) {
  const numbers = (source.numbers?.length ? source.numbers : [source.n]).join(", ");
  const title = escape(source.title || source.item_key || "Untitled");
  const href = safeHttpUrl(source.href);
  const who = [formatAuthors(source.authors), source.year ?? ""].filter(Boolean).join(", ");
  const pages = pagesLabel(pagesOf(source, citations));
  return (
    `- [${numbers}] ${href ? `[${title}](${markdownUrl(href)})` : title}` +
    (who ? ` (${escape(who)})` : "") +
    (pages ? `, ${pages}` : "")
  );
}
