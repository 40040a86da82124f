"""Secrets and URLs made fit for anything we show: error messages, `doctor`, logs, the panel.

API keys live only in the environment; `redact` masks every secret-looking environment value
(and `sk-…` keys) in text we produce, `safe_url` drops credentials and query strings, and
`is_local_url` tells whether an endpoint stays on this machine or network. A base module:
models, the app and every surface use it.
"""

from __future__ import annotations

import ipaddress
import os
import re
from urllib.parse import urlsplit, urlunsplit

_SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL)", re.I)


def _secret_values(extra_names: tuple[str, ...] = ()) -> list[str]:
    names = {n for n in os.environ if _SECRET_NAME.search(n)} | set(extra_names)
    values = {os.environ.get(n, "") for n in names}
    return sorted((v for v in values if len(v) >= 8), key=len, reverse=True)


def redact(text: str, *, extra_env: tuple[str, ...] = ()) -> str:
    """`text` with every secret-looking environment value (…KEY, …TOKEN, …SECRET) masked."""
    for value in _secret_values(extra_env):
        text = text.replace(value, "***")
    return re.sub(r"\b(sk-[A-Za-z0-9_\-]{4})[A-Za-z0-9_\-]{12,}", r"\1***", text)


# Query parameters whose value is a credential, masked in anything logged (Jupyter's own list).
_SECRET_PARAM = re.compile(r"(?i)([?&][^=&#]*(?:token|auth|key|code|state|xsrf)[^=&#]*=)[^&#]*")


def scrub_uri(uri: str) -> str:
    """A request URI fit for a log line: each credential-like query value (`token=…`) shown
    as `[secret]`, as Jupyter's own access log does."""
    return _SECRET_PARAM.sub(r"\1[secret]", uri)


def safe_url(url: str | None) -> str:
    """A URL fit for messages: no credentials, no query string."""
    if not url:
        return ""
    try:
        p = urlsplit(url)
    except ValueError:
        return ""
    host = p.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = f"{host}:{p.port}" if p.port else host
    return urlunsplit((p.scheme, netloc, p.path.rstrip("/"), "", ""))


def is_local_url(url: str | None) -> bool:
    """Loopback, private-network, link-local and `localhost`/`.local` hosts count as local."""
    if not url:
        return False
    host = (urlsplit(url).hostname or "").lower()
    if host in ("localhost", "0.0.0.0") or host.endswith((".localhost", ".local")):
        return True
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return False
    return ip.is_loopback or ip.is_private or ip.is_link_local
