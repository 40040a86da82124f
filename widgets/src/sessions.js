// The panel's header: the session picker (open another session; paused ones marked), a filter
// for it, rename and delete, ＋ (a new session) and the label of the model that answers.
import { icon } from "./dom.js";

const DELETE_ARM_MS = 4000; // a second click within this confirms a delete

/** A session's line in the picker: "Paused · " for one waiting at a checkpoint, its title, when. */
export function sessionLabel(s) {
  const title = s.title || "Untitled session";
  // Plain words, not a ⏸ glyph: a <select> shows text only, and not every font has the glyph.
  return [`${s.paused ? "Paused · " : ""}${title}`, formatUpdated(s.updated)].filter(Boolean).join(" — ");
}

function formatUpdated(value) {
  if (!value) return "";
  const date = typeof value === "number" ? new Date(value * 1000) : new Date(value);
  if (Number.isNaN(date.getTime())) return String(value);
  return date.toLocaleString(undefined, { month: "short", day: "numeric", hour: "2-digit", minute: "2-digit" });
}

export class SessionHeader {
  /** `chat` is the panel (ChatView): its model, `send`, popover and conversation. */
  constructor(chat) {
    this.chat = chat;
    const h = chat.h;
    this.h = h;
    this.picker = h("select", {
      class: "zc-session-picker",
      "data-testid": "session-picker",
      "aria-label": "Session",
      onchange: () => this.open(this.picker.value),
    });
    this.newButton = h(
      "button",
      {
        type: "button",
        class: "zc-icon-btn",
        "data-testid": "new-session",
        title: "New session",
        "aria-label": "New session",
        onclick: () => this.create(),
      },
      icon(h, "plus"),
    );
    this.filter = h("input", {
      type: "search",
      class: "zc-session-filter",
      "data-testid": "session-search",
      placeholder: "Find a session…",
      "aria-label": "Find a session by title",
      oninput: () => this.render(),
      onkeydown: (event) => event.stopPropagation(),
    });
    this.titleInput = h("input", {
      type: "text",
      class: "zc-session-title",
      "data-testid": "session-title-input",
      "aria-label": "Session title",
      hidden: true,
      maxlength: "200",
      onkeydown: (event) => this.onTitleKeydown(event),
      onblur: () => this.finishRename(true),
    });
    const small = (testid, iconName, title, onclick) =>
      h("button", { type: "button", class: "zc-icon-btn", "data-testid": testid, title, "aria-label": title, onclick }, icon(h, iconName));
    this.renameButton = small("rename-session", "edit", "Rename this session", () => this.startRename());
    this.deleteButton = small("delete-session", "trash", "Delete this session", () => this.deleteCurrent());
    this.noMatch = h("div", { class: "zc-session-nomatch", "data-testid": "session-search-empty", role: "status", hidden: true });
    this.modelLabel = h("span", { class: "zc-model-label", "data-testid": "model-label" });
    this.retracted = h("span", { class: "zc-badge zc-retracted", "data-testid": "retracted-badge", role: "note", hidden: true });
    this.el = h(
      "header",
      { class: "zc-header" },
      h("span", { class: "zc-brand", text: "Zocrates" }),
      (this.sessionEl = h("div", { class: "zc-session" }, this.picker, this.titleInput, this.renameButton, this.deleteButton, this.newButton)),
      this.filter,
      this.retracted,
      this.modelLabel,
      this.noMatch,
    );
  }

  currentSession() {
    const current = this.chat.model.get("session_id") || "";
    return (this.chat.model.get("sessions") || []).find((s) => s.id === current) ?? null;
  }

  startRename() {
    const session = this.currentSession();
    if (!session) return;
    this.titleInput.value = session.title || "";
    this.titleInput.hidden = false;
    this.picker.hidden = true;
    this.titleInput.focus();
    this.titleInput.select();
  }

  onTitleKeydown(event) {
    event.stopPropagation();
    if (event.key === "Enter") {
      event.preventDefault();
      this.finishRename(true);
    } else if (event.key === "Escape") {
      event.preventDefault();
      this.finishRename(false);
    }
  }

  finishRename(save) {
    if (this.titleInput.hidden) return;
    const session = this.currentSession();
    const title = this.titleInput.value.replace(/\s+/g, " ").trim();
    this.titleInput.hidden = true;
    this.picker.hidden = false;
    if (save && session && title && title !== session.title) {
      this.chat.send({ kind: "rename_session", session_id: session.id, title });
    }
  }

  /** Delete the open session: the first click asks, a second one within 4 s deletes. */
  deleteCurrent() {
    const session = this.currentSession();
    if (!session) return;
    if (!this.deleteArmed) {
      this.deleteArmed = true;
      this.deleteButton.classList.add("zc-armed");
      this.deleteButton.title = "Click again to delete this session for good";
      this.chat.toast(`Click the bin again to delete “${session.title || "Untitled session"}”.`);
      this.chat.win.clearTimeout(this.armTimer);
      this.armTimer = this.chat.win.setTimeout(() => this.disarm(), DELETE_ARM_MS);
      return;
    }
    this.disarm();
    this.chat.send({ kind: "delete_session", session_id: session.id });
  }

  disarm() {
    this.deleteArmed = false;
    this.deleteButton.classList.remove("zc-armed");
    this.deleteButton.title = "Delete this session";
  }

  /** Show the `sessions`, `session_id`, `model_label` traits and the library's retracted papers. */
  render() {
    const h = this.h;
    const model = this.chat.model;
    const current = model.get("session_id") || "";
    const sessions = model.get("sessions") || [];
    const query = this.filter.value.trim().toLowerCase();
    const matches = (s) => !query || (s.title || "").toLowerCase().includes(query);
    const shown = sessions.filter((s) => s.id === current || matches(s));
    const options = shown.map((s) =>
      h("option", { value: s.id, "data-paused": s.paused ? "true" : null, text: sessionLabel(s) }),
    );
    if (!sessions.some((s) => s.id === current)) {
      options.unshift(h("option", { value: current, text: "New session" }));
    }
    this.picker.replaceChildren(...options);
    this.picker.value = current;
    const known = sessions.some((s) => s.id === current);
    this.renameButton.disabled = !known;
    this.deleteButton.disabled = !known;
    this.filter.hidden = sessions.length < 2;
    // The open session stays in the picker whatever the filter: say when nothing matched.
    const none = Boolean(query) && !this.filter.hidden && !sessions.some(matches);
    this.noMatch.hidden = !none;
    this.noMatch.textContent = none ? `No session title contains “${this.filter.value.trim()}”.` : "";
    const label = model.get("model_label") || "";
    this.modelLabel.replaceChildren(h("span", { class: "zc-model-dot", "aria-hidden": "true" }), label);
    this.modelLabel.title = label;
    this.modelLabel.hidden = !label;
    // The library's retracted papers (the `library` trait's `retracted`, from the last check).
    const library = model.get("library") || {};
    const flagged = Array.isArray(library.retracted) ? library.retracted : [];
    this.retracted.hidden = !flagged.length;
    this.retracted.textContent = flagged.length ? `⚠ ${flagged.length} retracted` : "";
    this.retracted.title = [...flagged.map((p) => `${p.title}: ${p.notice}`), library.retractions || ""].filter(Boolean).join("\n");
  }

  /** Ask Python for another session; its `history` message fills the conversation. */
  open(sessionId) {
    const chat = this.chat;
    if (!sessionId || sessionId === chat.model.get("session_id")) return;
    chat.popover.close();
    chat.send({ kind: "open_session", session_id: sessionId });
    chat.clearConversation();
    chat.conversation.append(this.h("div", { class: "zc-empty", text: "Opening session…" }));
  }

  create() {
    const chat = this.chat;
    chat.popover.close();
    chat.send({ kind: "new_session" });
    chat.clearConversation();
    chat.renderEmpty();
  }
}
