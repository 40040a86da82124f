"""The panel's messages are typed (zocrates_nb/widget/protocol.py) and widgets/PROTOCOL.md is
generated from them: a malformed message is one plain sentence, a write needs exactly `true`,
and the checked-in document cannot drift from the models."""

from __future__ import annotations

from pathlib import Path

import pytest

from zocrates_nb.turn import TURN_STATUSES, TurnResult, TurnView
from zocrates_nb.widget import protocol as p

ROOT = Path(__file__).resolve().parents[1]


def test_the_checked_in_protocol_document_is_generated_from_the_models() -> None:
    assert (ROOT / "widgets" / "PROTOCOL.md").read_text("utf-8") == p.document(), (
        "widgets/PROTOCOL.md is stale: run "
        "`python -m zocrates_nb.widget.protocol > widgets/PROTOCOL.md`"
    )
    text = p.document()
    for model in (*p.INBOUND, *p.OUTBOUND):
        assert f"`{p._kind(model)}`" in text or f'"{p._kind(model)}"' in text
    assert all(f'"{s}"' in text for s in TURN_STATUSES)


def test_inbound_messages_are_validated_into_their_models() -> None:
    assert p.inbound({"kind": "no-such-kind"}) is None  # ignored, as before
    assert p.inbound("not a dict") is None
    ask = p.inbound({"kind": "ask", "prompt": "Why?", "whole_library": True})
    assert isinstance(ask, p.Ask) and ask.whole_library
    with pytest.raises(p.BadMessage) as bad:
        p.inbound({"kind": "resume", "interrupt_id": "t1-ext1", "action": "explode"})
    message = str(bad.value)
    assert "resume" in message and "action" in message and "\n" not in message
    assert "ValidationError" not in message and "pydantic" not in message
    with pytest.raises(p.BadMessage, match="scope"):
        p.inbound({"kind": "set_scope", "scope": {"mode": "everything"}})


def test_a_write_is_confirmed_only_by_exactly_true_and_ids_are_strings() -> None:
    for confirmed, expected in ((True, True), ("yes", False), (1, False), ("true", False)):
        msg = p.inbound({"kind": "save_staged", "to": "ris", "confirmed": confirmed})
        assert isinstance(msg, p.SaveStaged) and msg.confirmed is expected
    stage = p.inbound({"kind": "stage", "ids": "c123"})  # not a list: no ids
    assert isinstance(stage, p.Stage) and stage.ids == []
    stage = p.inbound({"kind": "stage", "ids": ["a", 3, "a", "", "b"]})
    assert isinstance(stage, p.Stage) and stage.ids == ["a", "b"]


def test_outbound_messages_carry_what_they_were_given() -> None:
    refused = p.payload(p.SaveResult(ok=False, to="ris", message="No."))
    assert refused == {"kind": "save_result", "ok": False, "to": "ris", "message": "No."}
    assert p.payload(p.TurnStarted(turn_id="t1", prompt="Q")) == {
        "kind": "turn_started", "turn_id": "t1", "prompt": "Q"}  # fmt: skip


def test_a_turn_view_is_its_record_plus_what_readers_need() -> None:
    record = TurnResult(turn_id="t1", session_id="s1", status="checkpoint")  # snapshot gone
    view = TurnView.of(record)
    assert view.status == "cancelled" and view.chips.mode == "library"
    dumped = view.model_dump()
    assert set(TurnResult.model_fields) <= set(
        dumped
    )  # a field of the record reaches every surface
