// Python → front end (PROTOCOL.md): the trait listeners, and the routing of custom messages —
// `turn_started`, `event`, `history`, `title_results`, `save_result`, `note_result`, `annotate_result` — to the bubbles and parts
// they change.
import { TurnView } from "./turn.js";

/** Subscribe `chat` (ChatView) to the model; `onModel(name, handler)` records each for dispose. */
export function connect(chat, onModel) {
  onModel("msg:custom", (msg) => onMessage(chat, msg));
  onModel("change:busy", () => chat.onBusyChange());
  onModel("change:sessions", () => {
    chat.header.render();
    chat.refreshEmpty();
  });
  onModel("change:library", () => {
    chat.refreshEmpty();
    chat.header.render();
  });
  onModel("change:staged", () => chat.onStagedChange());
  // The widget manager marks a model's comm dead when the kernel restarts or stops; the view's
  // element then carries `jupyter-widgets-disconnected` (set before this listener runs).
  onModel("comm_live_update", () => chat.checkConnection());
  onModel("change:session_id", () => chat.header.render());
  onModel("change:model_label", () => chat.header.render());
  onModel("change:scope", () => chat.scopePicker.reset());
  onModel("change:error", () => {
    chat.dismissedError = null;
    chat.renderError();
    // A refused set_scope is reported through `error`: show the scope Python actually has.
    if (chat.model.get("error")) chat.scopePicker.reset();
    chat.onStagedChange(); // a refused stage/unstage leaves the list as it was
  });
}

function onMessage(chat, msg) {
  if (!msg || typeof msg !== "object") return;
  switch (msg.kind) {
    case "event":
      onEvent(chat, msg.event ?? {});
      break;
    case "history":
      onHistory(chat, msg.turns ?? []);
      break;
    case "title_results":
      chat.scopePicker.onTitleResults(msg);
      break;
    case "save_result":
      chat.staging.onSaveResult(msg);
      break;
    case "note_result":
      chat.turns.get(msg.turn_id)?.noteSaver.onResult(msg);
      break;
    case "annotate_result":
      chat.turns.get(msg.turn_id)?.highlighter.onResult(msg);
      break;
    case "turn_started": {
      const turn = turnFor(chat, msg.turn_id, msg.prompt ?? "");
      if (turn.status === "checkpoint") turn.setStatus("running");
      else if (turn.status === "pending") turn.setStatus("running");
      break;
    }
    default:
      break;
  }
}

/** Which bubble an event belongs to: its turn, the bubble waiting for an id, or a new one. */
function turnFor(chat, turnId, prompt = "") {
  if (turnId && chat.turns.has(turnId)) return chat.turns.get(turnId);
  // An event before the turn has its id ("Loading models…") goes to the waiting bubble, which
  // keeps waiting for its id.
  if (!turnId && chat.pendingTurn) return chat.pendingTurn;
  if (chat.pendingTurn) return bindPending(chat, turnId);
  if (!turnId && chat.turnOrder.length) return chat.turnOrder.at(-1);
  const turn = new TurnView(chat, { turnId, prompt });
  chat.addTurnElement(turn);
  return turn;
}

function bindPending(chat, turnId) {
  const turn = chat.pendingTurn;
  chat.pendingTurn = null;
  turn.setTurnId(turnId);
  if (turnId) chat.turns.set(turnId, turn);
  return turn;
}

function onEvent(chat, event) {
  const current = chat.model.get("session_id");
  if (event.session_id && current && event.session_id !== current) return; // another session's turn
  const turn = turnFor(chat, event.turn_id || "");
  chat.stickToBottom(() => {
    switch (event.type) {
      case "text_delta":
        if (turn.status === "pending") turn.setStatus("running");
        turn.appendText(event.text ?? "");
        break;
      case "thinking":
        if (turn.status === "pending") turn.setStatus("running");
        turn.appendThinking(event.role ?? "", event.text ?? "");
        break;
      case "step":
        if (turn.status === "pending") turn.setStatus("running");
        turn.addStep(event);
        break;
      case "checkpoint":
        turn.showCheckpoint(event, { pending: true });
        chat.awaiting = false;
        break;
      case "final":
        turn.showFinal(event);
        chat.awaiting = false;
        break;
      case "error":
        turn.showError(event.message, event.retry_id);
        chat.awaiting = false;
        if (!event.turn_id && chat.pendingTurn === turn) chat.pendingTurn = null; // refused
        break;
      default:
        break;
    }
  });
  chat.updateBusy();
}

/** Replace the conversation with a session's turns, each shown as its live events would leave it. */
function onHistory(chat, turns) {
  chat.popover.close();
  chat.clearConversation();
  for (const t of turns) {
    // `t` is a TurnView (PROTOCOL.md): the record a `final` event carries too.
    const turn = new TurnView(chat, { turnId: t.turn_id, prompt: t.prompt ?? "", scope: t.chips ?? null });
    turn.historical = (t.status ?? "answered") !== "running";
    chat.addTurnElement(turn);
    turn.setStatus("running");
    for (const step of t.steps ?? []) turn.addStep(step, { finished: true });
    if (t.thinking) turn.appendThinking("", t.thinking);
    const status = t.status ?? "answered";
    if (status === "answered") {
      turn.showFinal({ ...t, widen_chips: null }); // the widen offer is the live answer's only
    } else if (status === "checkpoint" && t.checkpoint) {
      if (t.answer) turn.appendText(t.answer);
      turn.showCheckpoint(t.checkpoint, { pending: true });
    } else if (status === "running") {
      if (Number.isFinite(t.seconds)) turn.startedAt = chat.now() - t.seconds * 1000; // keep the clock honest
      if (t.answer) turn.appendText(t.answer);
      // keeps streaming: later events with this turn_id continue this bubble
    } else if (status === "cancelled") {
      turn.text = t.answer ?? "";
      turn.showStopped();
    } else {
      turn.text = t.answer ?? "";
      turn.showError(t.error || "This turn failed.", t.retry_id);
    }
    if (status !== "checkpoint" && t.checkpoint) turn.showCheckpoint(t.checkpoint, { pending: false });
    if (status !== "running") turn.steps.closeCurrent();
  }
  chat.renderEmpty();
  chat.updateBusy();
  chat.scrollToLatest();
}
