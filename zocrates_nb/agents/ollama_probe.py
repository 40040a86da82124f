"""Whether a local ollama model can think: asked once per process (`/api/show`), so thinking is
requested only from models that support it."""

from __future__ import annotations

import re
import threading
import time

PROBE_TIMEOUT = 2.0  # seconds for the ollama capability probe
_PROBES: dict[tuple[str, str], tuple[float, bool | None]] = {}
_PROBE_LOCK = threading.Lock()


def ollama_can_think(base_url: str, model: str, *, timeout: float = PROBE_TIMEOUT) -> bool | None:
    """Ask ollama's `/api/show` whether `model` lists the "thinking" capability.

    True/False when the server answers, None when unsure (unreachable, old server). Answers are
    cached for the process; "unsure" is retried after a minute.
    """
    import httpx

    root = re.sub(r"/v1/?$", "", base_url.rstrip("/"))
    key = (root, model)
    with _PROBE_LOCK:
        hit = _PROBES.get(key)
    if hit is not None and (hit[1] is not None or time.monotonic() - hit[0] < 60):
        return hit[1]
    answer: bool | None = None
    try:
        r = httpx.post(f"{root}/api/show", json={"model": model}, timeout=timeout)
        if r.status_code == 200:
            caps = r.json().get("capabilities")
            if isinstance(caps, list):
                answer = "thinking" in caps
    except (httpx.HTTPError, ValueError):
        answer = None
    with _PROBE_LOCK:
        _PROBES[key] = (time.monotonic(), answer)
    return answer
