// Small DOM and text helpers shared by the panel's parts: element building, constant icons,
// the formatting of durations and author lists.

/** `h(tag, attrs, ...children)` for `doc`: `class`, `text`, `on<event>` handlers, plain attributes. */
export function makeH(doc) {
  return function h(tag, attrs = {}, ...children) {
    const el = doc.createElement(tag);
    for (const [key, value] of Object.entries(attrs)) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "class") el.className = value;
      else if (key === "text") el.textContent = value;
      else if (key.startsWith("on") && typeof value === "function") el.addEventListener(key.slice(2), value);
      else el.setAttribute(key, value === true ? "" : String(value));
    }
    for (const child of children.flat()) {
      if (child !== null && child !== undefined && child !== false) el.append(child);
    }
    return el;
  };
}

// Constant icon markup (never built from data).
const ICONS = {
  send: '<svg viewBox="0 0 16 16" aria-hidden="true"><path d="M8 13V3M3.5 7.5 8 3l4.5 4.5" fill="none" stroke="currentColor" stroke-width="1.8" stroke-linecap="round" stroke-linejoin="round"/></svg>',
  stop: '<svg viewBox="0 0 16 16" aria-hidden="true"><rect x="4" y="4" width="8" height="8" rx="1.5" fill="currentColor"/></svg>',
  plus: '<svg viewBox="0 0 16 16" aria-hidden="true"><path d="M8 3v10M3 8h10" fill="none" stroke="currentColor" stroke-width="1.6" stroke-linecap="round"/></svg>',
  close: '<svg viewBox="0 0 16 16" aria-hidden="true"><path d="M4.5 4.5l7 7M11.5 4.5l-7 7" fill="none" stroke="currentColor" stroke-width="1.6" stroke-linecap="round"/></svg>',
  library: '<svg viewBox="0 0 16 16" aria-hidden="true"><path d="M3 2.5v11M6 2.5v11M9 3l3.2 10.2" fill="none" stroke="currentColor" stroke-width="1.5" stroke-linecap="round"/></svg>',
  paper: '<svg viewBox="0 0 16 16" aria-hidden="true"><path d="M4 1.8h5.2L12.5 5v9.2H4z M9 2v3.2h3.3" fill="none" stroke="currentColor" stroke-width="1.3" stroke-linejoin="round"/></svg>',
  folder: '<svg viewBox="0 0 16 16" aria-hidden="true"><path d="M2 4.2h4.2l1.4 1.5H14v7.6H2z" fill="none" stroke="currentColor" stroke-width="1.3" stroke-linejoin="round"/></svg>',
};

export function icon(h, name, cls = "zc-icon") {
  const span = h("span", { class: cls, "aria-hidden": "true" });
  span.innerHTML = ICONS[name];
  return span;
}

export function formatSeconds(seconds) {
  if (!Number.isFinite(seconds) || seconds < 0) return "";
  if (seconds < 10) return `${seconds.toFixed(1)} s`;
  if (seconds < 60) return `${Math.round(seconds)} s`;
  const m = Math.floor(seconds / 60);
  const s = Math.round(seconds - m * 60);
  return `${m} m ${String(s).padStart(2, "0")} s`;
}

export function formatAuthors(authors) {
  const list = (authors ?? []).filter(Boolean);
  if (list.length === 0) return "";
  if (list.length <= 3) return list.join(", ");
  return `${list[0]} et al.`;
}
