// The panel's header: the session picker (open another session), ＋ (a new session) and the
// label of the model that answers.
import { icon } from "./dom.js";

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
    this.modelLabel = h("span", { class: "zc-model-label", "data-testid": "model-label" });
    this.el = h(
      "header",
      { class: "zc-header" },
      h("span", { class: "zc-brand", text: "Zocrates" }),
      h("div", { class: "zc-session" }, this.picker, this.newButton),
      this.modelLabel,
    );
  }

  /** Show the `sessions`, `session_id` and `model_label` traits. */
  render() {
    const h = this.h;
    const model = this.chat.model;
    const current = model.get("session_id") || "";
    const sessions = model.get("sessions") || [];
    const options = sessions.map((s) =>
      h("option", { value: s.id, text: [s.title || "Untitled session", formatUpdated(s.updated)].filter(Boolean).join(" — ") }),
    );
    if (!sessions.some((s) => s.id === current)) {
      options.unshift(h("option", { value: current, text: "New session" }));
    }
    this.picker.replaceChildren(...options);
    this.picker.value = current;
    const label = model.get("model_label") || "";
    this.modelLabel.replaceChildren(h("span", { class: "zc-model-dot", "aria-hidden": "true" }), label);
    this.modelLabel.title = label;
    this.modelLabel.hidden = !label;
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
