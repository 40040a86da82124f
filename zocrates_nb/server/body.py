"""A request body, from bytes to a validated model, bounded at every step.

Size first (`limits.request_bytes`, before anything is parsed: 18 million keys once kept a
server busy for ten minutes), then JSON that must parse and nest at most `limits.json_depth`
levels (Python's parser and every walk over the result recurse; 900 levels once gave a 500), then
every string made safe, then the pydantic model. Each refusal is a 400 with one sentence.
(Tornado reads a body whole, up to Jupyter's own `max_body_size`, before a handler runs: reading
it as a stream would refuse earlier, but a refusal before the body is read closes the
connection under the client, which then sees a reset instead of the sentence.)
"""

from __future__ import annotations

import json
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from tornado import web

from zocrates_nb.config import LimitsSettings
from zocrates_nb.errors import explain
from zocrates_nb.text import safe_text

B = TypeVar("B", bound=BaseModel)


def bad_request(message: str) -> web.HTTPError:
    return web.HTTPError(400, message, reason="Bad Request")


def too_large(size: int, limits: LimitsSettings) -> web.HTTPError:
    return bad_request(
        f"the request body is {size:,} bytes; at most {limits.request_bytes:,} are accepted "
        "(limits.request_bytes in zocrates_config.json)"
    )


def parse_body(raw: bytes, model: type[B], limits: LimitsSettings) -> B:
    """The JSON body as `model`. A browser's JSON.stringify writes a lone surrogate as a
    `\\ud800` escape: it reaches the App as U+FFFD, never fails the request."""
    if len(raw) > limits.request_bytes:
        raise too_large(len(raw), limits)
    try:
        data = json.loads(raw or b"")
    except RecursionError:
        raise _too_deep(limits) from None
    except ValueError as e:  # JSONDecodeError, UnicodeDecodeError
        where = ""
        if isinstance(e, json.JSONDecodeError):
            where = f" (line {e.lineno}, column {e.colno})"
        raise bad_request(f"the request body is not valid JSON{where}") from None
    if not isinstance(data, dict):
        raise bad_request("the request body must be a JSON object")
    if _depth(data) > limits.json_depth:
        raise _too_deep(limits)
    try:
        return model.model_validate(_safe_strings(data))
    except ValidationError as e:
        raise bad_request(explain(e)) from None


def _too_deep(limits: LimitsSettings) -> web.HTTPError:
    return bad_request(
        f"the request body's JSON is nested more than {limits.json_depth} levels deep "
        "(limits.json_depth); a request needs a few"
    )


def _depth(data: Any) -> int:
    """How deeply lists and objects nest (without recursion: the input is untrusted)."""
    deepest, stack = 0, [(data, 1)]
    while stack:
        value, level = stack.pop()
        if isinstance(value, dict):
            value = list(value.values())
        if isinstance(value, list):
            deepest = max(deepest, level)
            stack.extend((v, level + 1) for v in value if isinstance(v, dict | list))
    return deepest


def _safe_strings(data: Any) -> Any:
    """`safe_text` on every string of a parsed JSON body (keys too); nothing else changes."""
    if isinstance(data, str):
        return safe_text(data) if data.strip() else data
    if isinstance(data, list):
        return [_safe_strings(v) for v in data]
    if isinstance(data, dict):
        return {_safe_strings(k): _safe_strings(v) for k, v in data.items()}
    return data
