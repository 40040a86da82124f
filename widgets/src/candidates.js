// Papers found beyond the library (a discovery turn's `discovery` record): one card per
// candidate under the answer — its title opening the paper's page, who, when, where, why it
// bears on the question, which APIs reported it, an open-access PDF when known, and a Stage
// toggle. Papers the library already holds come last, collapsed, with a badge and no Stage.
// Everything here is untrusted text set as text; links are http(s) only.

const MAX_AUTHORS = 3;

/** `url` when it is an absolute http(s) URL, else "" (no `javascript:`, `data:`, relative…). */
export function safeWebUrl(url) {
  if (typeof url !== "string" || !url.trim()) return "";
  try {
    const parsed = new URL(url.trim());
    return parsed.protocol === "http:" || parsed.protocol === "https:" ? parsed.href : "";
  } catch {
    return "";
  }
}

const encodePath = (id) => String(id).split("/").map(encodeURIComponent).join("/");

/** Where "Open" goes: the candidate's own page, else its DOI, else its arXiv abstract page. */
export function openUrl(candidate) {
  return (
    safeWebUrl(candidate.url) ||
    (candidate.doi ? safeWebUrl(`https://doi.org/${encodePath(candidate.doi)}`) : "") ||
    (candidate.arxiv_id ? safeWebUrl(`https://arxiv.org/abs/${encodePath(candidate.arxiv_id)}`) : "")
  );
}

/** "A, B, C et al." (the first three names). */
export function candidateAuthors(authors) {
  const list = (authors ?? []).filter(Boolean).map(String);
  return list.slice(0, MAX_AUTHORS).join(", ") + (list.length > MAX_AUTHORS ? " et al." : "");
}

/** Authors · year · venue, on one line. */
export function candidateMeta(candidate) {
  return [candidateAuthors(candidate.authors), candidate.year ?? "", candidate.venue ?? ""].filter(Boolean).join(" · ");
}

function externalLink(h, href, attrs, text) {
  return h("a", { ...attrs, href, target: "_blank", rel: "noopener noreferrer", text });
}

/**
 * The cards of one discovery record. `staging` is the panel's staging list:
 * `{isStaged(id), stage(candidate), unstage(candidate)}`; `update()` re-reads it (the `staged`
 * trait changed, or a request was refused) so each toggle shows where its paper stands.
 */
export class CandidateCards {
  constructor(h, discovery, staging) {
    this.h = h;
    this.staging = staging;
    this.toggles = new Map(); // candidate id → its Stage button
    const candidates = (discovery?.candidates ?? []).filter((c) => c && c.title);
    const fresh = candidates.filter((c) => !c.in_library);
    const held = candidates.filter((c) => c.in_library);
    const notices = (discovery?.errors ?? []).filter(Boolean).map((text) =>
      h("p", { class: "zc-discovery-notice", "data-testid": "discovery-notice", role: "note", text: String(text) }),
    );
    const query = String(discovery?.query ?? "").trim();
    const heading = fresh.length
      ? `Papers beyond your library (${fresh.length})`
      : candidates.length
        ? "Nothing new beyond your library"
        : "No papers found beyond your library";
    this.el = h(
      "section",
      { class: "zc-candidates", "data-testid": "candidates", "aria-label": "Papers beyond your library" },
      h("div", { class: "zc-candidates-heading" }, h("span", { text: heading }), query ? h("span", { class: "zc-candidates-query", text: `for “${query}”` }) : null),
      notices,
      fresh.length ? h("div", { class: "zc-candidate-list" }, fresh.map((c) => this.card(c))) : null,
      held.length
        ? h(
            "details",
            { class: "zc-candidates-held", "data-testid": "candidates-in-library" },
            h("summary", { text: `Already in your library (${held.length})` }),
            h("div", { class: "zc-candidate-list" }, held.map((c) => this.card(c))),
          )
        : null,
    );
    this.update();
  }

  card(c) {
    const h = this.h;
    const href = openUrl(c);
    const pdf = safeWebUrl(c.pdf_url);
    const ids = [c.doi ? `DOI ${c.doi}` : "", c.arxiv_id ? `arXiv ${c.arxiv_id}` : ""].filter(Boolean).join(" · ");
    const sources = (c.sources ?? []).filter(Boolean);
    let toggle = null;
    if (!c.in_library) {
      toggle = h(
        "button",
        {
          type: "button",
          class: "zc-action zc-stage",
          "data-testid": "stage-button",
          "aria-pressed": "false",
          onclick: () => this.toggle(c),
        },
        h("span", { class: "zc-stage-label", text: "Stage" }),
        h("span", { class: "zc-stage-undo", text: "Unstage" }),
      );
      this.toggles.set(c.id, toggle);
    }
    return h(
      "article",
      { class: `zc-candidate${c.in_library ? " zc-candidate-held" : ""}`, "data-testid": "candidate-card", "data-candidate-id": c.id ?? "", "data-in-library": c.in_library ? "true" : "false" },
      h(
        "div",
        { class: "zc-candidate-head" },
        href
          ? externalLink(h, href, { class: "zc-candidate-title", "data-testid": "candidate-open", title: "Open the paper's page in a new tab" }, c.title)
          : h("span", { class: "zc-candidate-title", "data-testid": "candidate-title", text: c.title }),
        c.in_library ? h("span", { class: "zc-badge", "data-testid": "in-library-badge", text: "In your library" }) : null,
      ),
      h("div", { class: "zc-candidate-meta", "data-testid": "candidate-meta", text: candidateMeta(c) }),
      ids ? h("div", { class: "zc-candidate-ids", text: ids }) : null,
      c.why ? h("p", { class: "zc-candidate-why", "data-testid": "candidate-why", text: c.why }) : null,
      c.notice ? h("p", { class: "zc-retraction", "data-testid": "candidate-retracted", text: `⚠ ${c.notice}` }) : null,
      h(
        "div",
        { class: "zc-candidate-foot" },
        sources.length ? h("span", { class: "zc-candidate-sources", "data-testid": "candidate-sources", text: `Found by ${sources.join(", ")}` }) : null,
        href ? externalLink(h, href, { class: "zc-source-link", "data-testid": "candidate-link", title: "Open the paper's page in a new tab" }, "Open") : null,
        pdf ? externalLink(h, pdf, { class: "zc-source-link", "data-testid": "candidate-pdf", title: "Open-access PDF (new tab)" }, "PDF") : null,
        toggle,
      ),
    );
  }

  toggle(candidate) {
    const button = this.toggles.get(candidate.id);
    if (!button || button.disabled) return;
    const sent = this.staging.isStaged(candidate.id) ? this.staging.unstage(candidate) : this.staging.stage(candidate);
    if (sent === false) return;
    button.disabled = true; // until the staging list says where the paper stands
    button.setAttribute("data-pending", "true");
  }

  /** Show each toggle as the staging list has it: "Stage", or "Staged ✓" (click: Unstage). */
  update() {
    for (const [id, button] of this.toggles) {
      const staged = Boolean(this.staging.isStaged(id));
      button.disabled = false;
      button.removeAttribute("data-pending");
      button.setAttribute("aria-pressed", staged ? "true" : "false");
      button.classList.toggle("zc-staged", staged);
      button.title = staged ? "Staged for saving to Zotero: click to unstage" : "Stage this paper for saving to Zotero";
      button.firstChild.textContent = staged ? "Staged ✓" : "Stage";
    }
  }
}
