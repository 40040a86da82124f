"""The OpenAPI 3.1 description of the HTTP API, generated from the models that validate it.

`python -m zocrates_nb.server.openapi` prints it; the checked-in `openapi.json` (served at
`/zocrates/openapi.json`) must equal that output, which a test asserts.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic.json_schema import models_json_schema

from zocrates_nb import __version__
from zocrates_nb.events import EVENT_ADAPTER
from zocrates_nb.server.schema import (
    CancelReply,
    ChatRequest,
    DiscoverRequest,
    Discovery,
    ErrorReply,
    NoteRequest,
    ResumeRequest,
    SaveReply,
    SaveRequest,
    SessionDetail,
    SessionList,
    StageRequest,
    StagingList,
    TurnResult,
)
from zocrates_nb.writeback import SaveResult

PATH = Path(__file__).with_name("openapi.json")
_REF = "#/components/schemas/{model}"

_STREAM_DOC = """\
A Server-Sent Events stream of the turn's typed events, in order: `event: <type>` then
`data: <JSON object>` per message (`text_delta`, `thinking`, `step`, then exactly one of
`final`, `request_input` or `error`). A checkpoint is sent under the event name
`request_input`; its data is the `CheckpointEvent` (with `interrupt_id`) that
`POST /zocrates/chat/resume` answers. Every data object is one of `Event`. The
`X-Zocrates-Session` header (and every event's `session_id`) names the session. Lines starting
with `:` are keep-alive comments. A client that disconnects does not stop the turn: it
completes and is saved in the session."""


def _error(description: str) -> dict[str, Any]:
    return {
        "description": description,
        "content": {"application/json": {"schema": {"$ref": _REF.format(model="ErrorReply")}}},
    }


def _json(model: str, description: str) -> dict[str, Any]:
    return {
        "description": description,
        "content": {"application/json": {"schema": {"$ref": _REF.format(model=model)}}},
    }


def _stream_responses(conflict: str, bad: str) -> dict[str, Any]:
    return {
        "200": {
            "description": _STREAM_DOC,
            "headers": {
                "X-Zocrates-Session": {
                    "description": "The session id (new when none was given).",
                    "schema": {"type": "string"},
                }
            },
            "content": {"text/event-stream": {"schema": {"type": "string"}}},
        },
        "400": _error(bad),
        "403": _error("Missing or invalid Jupyter token."),
        "404": _error("Unknown session."),
        "409": _error(conflict),
        "429": {
            **_error("The server runs as many turns as it may (limits.concurrent_turns)."),
            "headers": {"Retry-After": {"description": "Seconds to wait before retrying.",
                                        "schema": {"type": "integer"}}},
        },
    }


def _post_op(op: str, summary: str, request: str, reply: str, ok: str,
             bad: str) -> dict[str, Any]:  # fmt: skip
    return {
        "post": {
            "operationId": op,
            "summary": summary,
            "requestBody": {
                "required": True,
                "content": {"application/json": {"schema": {"$ref": _REF.format(model=request)}}},
            },
            "responses": {
                "200": _json(reply, ok),
                "400": _error(bad),
                "403": _error("Missing or invalid Jupyter token."),
                "404": _error("Unknown session."),
            },
        }
    }


def build() -> dict[str, Any]:
    _, defs = models_json_schema(
        [
            (ChatRequest, "validation"),
            (ResumeRequest, "validation"),
            (SessionList, "serialization"),
            (SessionDetail, "serialization"),
            (TurnResult, "serialization"),
            (ErrorReply, "serialization"),
            (DiscoverRequest, "validation"),
            (StageRequest, "validation"),
            (SaveRequest, "validation"),
            (NoteRequest, "validation"),
            (SaveResult, "serialization"),
            (Discovery, "serialization"),
            (StagingList, "serialization"),
            (SaveReply, "serialization"),
            (CancelReply, "serialization"),
        ],
        ref_template=_REF,
    )
    schemas: dict[str, Any] = dict(defs["$defs"])
    events = EVENT_ADAPTER.json_schema(ref_template=_REF)
    schemas.update(events.pop("$defs", {}))
    schemas["Event"] = events
    secured: list[dict[str, list[str]]] = [{"JupyterToken": []}]
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "zocrates-nb",
            "version": __version__,
            "description": (
                "Questions over a Zotero library with verified citations, served by a Jupyter "
                "server extension. Paths are relative to the Jupyter server's base URL. "
                "Authenticate as for any Jupyter API: `Authorization: token <token>` (or a "
                "Jupyter login cookie plus the `X-XSRFToken` header)."
            ),
        },
        "servers": [{"url": "/"}],
        "security": secured,
        "paths": {
            "/zocrates/chat": {
                "post": {
                    "operationId": "chat",
                    "summary": "Ask a question; stream the turn",
                    "requestBody": {
                        "required": True,
                        "content": {"application/json": {"schema": {"$ref": _REF.format(
                            model="ChatRequest")}}},
                    },
                    "responses": _stream_responses(
                        "The session has a pending checkpoint: resume it first.",
                        "Malformed body (bad JSON, missing prompt, wrong types, unknown keys).",
                    ),
                }
            },
            "/zocrates/chat/resume": {
                "post": {
                    "operationId": "resume",
                    "summary": "Answer a checkpoint; stream the continued turn",
                    "requestBody": {
                        "required": True,
                        "content": {"application/json": {"schema": {"$ref": _REF.format(
                            model="ResumeRequest")}}},
                    },
                    "responses": _stream_responses(
                        "The session has no pending checkpoint.",
                        "Malformed body, unknown action, or an interrupt id that is not the "
                        "pending checkpoint's.",
                    ),
                }
            },
            "/zocrates/sessions": {
                "get": {
                    "operationId": "listSessions",
                    "summary": "Sessions, most recently updated first",
                    "responses": {
                        "200": _json("SessionList", "The sessions."),
                        "403": _error("Missing or invalid Jupyter token."),
                    },
                }
            },
            "/zocrates/sessions/{session_id}": {
                "get": {
                    "operationId": "getSession",
                    "summary": "A session's history, with its pending checkpoint if any",
                    "parameters": [
                        {
                            "name": "session_id",
                            "in": "path",
                            "required": True,
                            "schema": {"type": "string"},
                        }
                    ],
                    "responses": {
                        "200": _json("SessionDetail", "The session."),
                        "403": _error("Missing or invalid Jupyter token."),
                        "404": _error("Unknown session."),
                    },
                }
            },
            "/zocrates/sessions/{session_id}/turns/{turn_id}": {
                "get": {
                    "operationId": "getTurn",
                    "summary": "One turn as stored, with its evidence (text, cited, support)",
                    "parameters": [
                        {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
                        for name in ("session_id", "turn_id")
                    ],
                    "responses": {
                        "200": _json("TurnResult", "The turn."),
                        "403": _error("Missing or invalid Jupyter token."),
                        "404": _error("Unknown session or turn."),
                    },
                }
            },
            "/zocrates/sessions/{session_id}/cancel": {
                "post": {
                    "operationId": "cancelTurn",
                    "summary": "Stop the question running in a session on this server",
                    "description": "The turn ends as cancelled and is saved (a resumed search "
                    "keeps its checkpoint); its stream ends with that error event.",
                    "parameters": [{"name": "session_id", "in": "path", "required": True,
                                    "schema": {"type": "string"}}],
                    "responses": {
                        "200": _json("CancelReply", "The stop was accepted."),
                        "403": _error("Missing or invalid Jupyter token."),
                        "404": _error("Unknown session."),
                        "409": _error("No question is running in the session on this server."),
                    },
                }
            },
            "/zocrates/discover": _post_op(
                "discover", "Find papers beyond the library (online.enabled)", "DiscoverRequest",
                "Discovery", "Candidates (deduplicated, ranked, in-library marked) and per-source "
                "errors.", "Discovery is off (the message says how to turn it on; nothing was "
                "sent), or a malformed body."),
            "/zocrates/staging": {
                "get": {
                    "operationId": "listStaged",
                    "summary": "The staging list (the data home's, or a session's)",
                    "parameters": [{"name": "session_id", "in": "query", "required": False,
                                    "schema": {"type": "string"}}],
                    "responses": {
                        "200": _json("StagingList", "The staged candidates, in order."),
                        "403": _error("Missing or invalid Jupyter token."),
                        "404": _error("Unknown session."),
                    },
                },
                **_post_op("stage", "Stage discovered candidates (all or none)", "StageRequest",
                           "StagingList", "The staging list.",
                           "An id no discover run of this list produced, or a malformed body."),
            },
            "/zocrates/staging/remove": _post_op(
                "unstage", "Take candidates off the staging list", "StageRequest",
                "StagingList", "The staging list.", "A malformed body."),
            "/zocrates/staging/save": _post_op(
                "saveStaged", "Save the staging list to Zotero, or export it as RIS/BibTeX",
                "SaveRequest", "SaveReply", "What was saved, where, and what failed.",
                "Not confirmed, nothing staged, Zotero not running or refusing, a malformed "
                "body."),
            "/zocrates/notes": _post_op(
                "saveNote", "Save an answer and its cited sources as a Zotero note",
                "NoteRequest", "SaveResult", "Where the note went; items tagged; failures.",
                "Not confirmed, no answer in the session, Zotero not running or refusing, a "
                "malformed body."),
            "/zocrates/openapi.json": {
                "get": {
                    "operationId": "openapi",
                    "summary": "This document",
                    "responses": {
                        "200": {
                            "description": "The OpenAPI document.",
                            "content": {"application/json": {"schema": {"type": "object"}}},
                        },
                        "403": _error("Missing or invalid Jupyter token."),
                    },
                }
            },
        },
        "components": {
            "schemas": dict(sorted(schemas.items())),
            "securitySchemes": {
                "JupyterToken": {
                    "type": "apiKey",
                    "in": "header",
                    "name": "Authorization",
                    "description": "`token <the Jupyter server's token>`",
                }
            },
        },
    }


def render() -> str:
    return json.dumps(build(), indent=1, ensure_ascii=False) + "\n"


if __name__ == "__main__":
    print(render(), end="")
