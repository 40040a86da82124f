"""The OpenAPI 3.1 description of the HTTP API, generated from the route table the server
registers (`handlers.API`) and the models that validate it.

`python -m zocrates_nb.server.openapi` prints it; the checked-in `openapi.json` (served at
`/zocrates/openapi.json`) must equal that output, which a test asserts.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from zocrates_nb import __version__
from zocrates_nb.events import EVENT_ADAPTER
from zocrates_nb.server.handlers import API, Op, Route
from zocrates_nb.server.schema import ErrorReply

PATH = Path(__file__).with_name("openapi.json")
_REF = "#/components/schemas/{model}"
Mode = Literal["validation", "serialization"]

_STREAM_DOC = """\
A Server-Sent Events stream of the turn's typed events, in order: `event: <type>` then
`data: <JSON object>` per message (`text_delta`, `thinking`, `step`, then exactly one of
`final`, `request_input` or `error`). A checkpoint is sent under the event name
`request_input`; its data is the `CheckpointEvent` (with `interrupt_id`) that
`POST /zocrates/chat/resume` answers. Every data object is one of `Event`. The
`X-Zocrates-Session` header (and every event's `session_id`) names the session. Lines starting
with `:` are keep-alive comments. A client that disconnects does not stop the turn: it
completes and is saved in the session."""


def _json(schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _model(model: type[BaseModel]) -> dict[str, Any]:
    return {"$ref": _REF.format(model=model.__name__)}


def _operation(route: Route, op: Op) -> dict[str, Any]:
    out: dict[str, Any] = {"operationId": op.id, "summary": op.summary}
    if op.description:
        out["description"] = op.description
    params = [(name, "path", True) for name in re.findall(r"\{(\w+)\}", route.path)]
    params += [(name, "query", False) for name in op.query]
    if params:
        out["parameters"] = [
            {"name": n, "in": where, "required": required, "schema": {"type": "string"}}
            for n, where, required in params
        ]
    if op.request is not None:
        out["requestBody"] = {
            "required": True,
            "content": {"application/json": {"schema": _model(op.request)}},
        }
    errors = {**op.errors, 403: "Missing or invalid Jupyter token."}
    if op.stream:
        ok: dict[str, Any] = {
            "description": _STREAM_DOC,
            "headers": {
                "X-Zocrates-Session": {
                    "description": "The session id (new when none was given).",
                    "schema": {"type": "string"},
                }
            },
            "content": {"text/event-stream": {"schema": {"type": "string"}}},
        }
        errors[429] = "The server runs as many turns as it may (limits.concurrent_turns)."
    else:
        ok = _json(_model(op.reply) if op.reply else {"type": "object"}, op.ok)
    responses = {"200": ok} | {
        str(code): _json(_model(ErrorReply), text) for code, text in sorted(errors.items())
    }
    if op.stream:
        responses["429"]["headers"] = {
            "Retry-After": {
                "description": "Seconds to wait before retrying.",
                "schema": {"type": "integer"},
            }
        }
    out["responses"] = responses
    return out


def build() -> dict[str, Any]:
    ops = [op for route in API for op in route.ops]
    replies: list[type[BaseModel]] = [*(op.reply for op in ops if op.reply), ErrorReply]
    models: dict[type[BaseModel], Mode] = {op.request: "validation" for op in ops if op.request}
    models |= dict.fromkeys(replies, "serialization")
    _, defs = models_json_schema(list(models.items()), ref_template=_REF)
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
        "paths": {r.path: {op.method: _operation(r, op) for op in r.ops} for r in API},
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
