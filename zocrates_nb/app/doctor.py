"""`App.doctor()`: models per role, embedding and rerank models, library and index health (the
vectors checked chunk by chunk), and every place data can go — "nothing leaves this machine"
only when nothing can."""

from __future__ import annotations

import ipaddress
import os
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from zocrates_nb.config import Settings
from zocrates_nb.redaction import redact, safe_url

if TYPE_CHECKING:
    from zocrates_nb.app.core import AppCore

NOTHING_LEAVES = "nothing leaves this machine"


def doctor(app: AppCore) -> dict[str, Any]:
    from zocrates_nb.retrieval.rerank import describe

    info: dict[str, Any] = {"home": str(app.home)}
    models = app.registry.doctor_info()
    info["models"] = models
    info["any_cloud_endpoint"] = models.get("any_cloud")
    info["telemetry"] = app.registry.telemetry_status or models.get("telemetry")
    try:
        info["privacy"] = privacy(app.settings, models)
    except Exception as e:  # a bad config: the models' entry already says so
        info["privacy"] = {"destinations": [], "summary": redact(str(e)), "leaves": None}
    if info["privacy"]["leaves"] and NOTHING_LEAVES in str(models.get("summary", "")):
        models["summary"] = "no cloud model endpoint configured (other data leaves: see privacy)"
    try:
        index = app.library_index
        status = app.status()
        errors = [
            {"doc_key": d.doc_key, "item_key": d.item_key, "status": d.status, "error": d.error}
            for d in index.documents()
            if d.status in ("error", "skipped")
        ]
        info["embedding_model"] = status.embedding_model
        info["rerank"] = describe(app.reranker)
        info["library"] = {
            "items": status.items,
            "documents": status.documents,
            "chunks": status.chunks,
            "vectors": status.vectors,
            "last_indexed": status.last_indexed,
        }
        vectors = _vector_health(index) if status.chunks else list(status.problems)
        info["index_health"] = {
            "ok": bool(status.chunks) and not status.documents.get("indexing") and not vectors,
            "problems": errors[:50],
            "vectors": vectors,
            "note": "" if status.chunks else "the index is empty: run `zocrates-nb index` first",
        }
    except Exception as e:  # a broken index is a doctor finding, not a crash
        from zocrates_nb.app.describe import describe_error

        info["index_health"] = {"ok": False, "error": describe_error(e, doing="Reading the index")}
    info["sessions"] = len(app.store.list_sessions(10_000))
    info["notices"] = list(getattr(app, "notices", []))
    return info


def _vector_health(index: Any) -> list[str]:
    """Chunk by chunk: every chunk has its vectors, and no vector lacks its chunk."""
    from zocrates_nb.errors import ZocratesError
    from zocrates_nb.index.healing import missing_vectors

    try:
        missing, orphans = missing_vectors(index)
    except ZocratesError as e:
        return [str(e)]
    out = []
    if missing:
        out.append(f"{len(missing):,} chunks have no vector (dense search misses them): run "
                   "`zocrates-nb index` to embed them again from the cached conversions")
    if orphans:
        out.append(f"{len(orphans):,} vectors belong to no chunk: `zocrates-nb index` "
                   "removes them")
    return out


def privacy(settings: Settings, models: dict[str, Any]) -> dict[str, Any]:
    """Every place this configuration can send data, and whether it is off this machine
    (only loopback stays: a server on the local network is another machine)."""
    out: list[dict[str, Any]] = []

    def add(what: str, where: str, sends: str, *, when: str = "",
            leaves: bool | None = None) -> None:  # fmt: skip
        out.append({"what": what, "where": where, "sends": sends, "when": when,
                    "leaves": not _loopback(where) if leaves is None else leaves})  # fmt: skip

    seen: set[str] = set()
    for role, r in (models.get("roles") or {}).items():
        if r.get("provider") == "offline":
            continue
        endpoint = r.get("endpoint") or ""
        where = endpoint or f"{r.get('provider')}'s default endpoint"
        key = f"{r.get('model')}@{where}"
        if key not in seen:
            seen.add(key)
            add(f"model {r.get('model')} ({role})", where,
                "questions, passages of your papers and the answers written from them",
                leaves=None if endpoint else bool(r.get("cloud")))
    embedding = settings.index.embedding
    if embedding.provider == "openai-compatible" and embedding.base_url:
        add("embedding server", safe_url(embedding.base_url),
            "the text of every passage indexed, and every search query")
    chroma = settings.index.chroma
    if chroma.mode == "server":
        add("Chroma server", f"http://{chroma.host}:{chroma.port}",
            "the vectors of every passage and the filters of every search")
    online = settings.online
    if online.enabled:
        for name in ("arxiv", "crossref", "semantic_scholar", "openalex"):
            source = getattr(online, name)
            if source.enabled:
                add(f"online source {name}", safe_url(source.base_url),
                    "discovery queries (words of your questions)")
    web = settings.zotero.web
    add("Zotero Web API", safe_url(web.base_url),
        "the items and notes you save (and reads of your library)",
        when="" if web.library_id else "only when you ask: index --zotero-web, save --to web")
    if settings.telemetry.otel:
        endpoint = os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "")
        add("OpenTelemetry exporter", safe_url(endpoint) or "(OTEL_EXPORTER_OTLP_ENDPOINT)",
            "timings and token counts of model calls (no content)")
    always = [d for d in out if d["leaves"] and not d["when"]]
    if always:
        summary = "data leaves this machine: to " + "; ".join(
            f"{d['what']} at {d['where']}" for d in always)
    else:
        summary = NOTHING_LEAVES + (" (unless you ask: see the list)" if out else "")
    return {"destinations": out, "leaves": bool(always), "summary": summary}


def _loopback(where: str) -> bool:
    """Whether an address is this machine (loopback); anything else is another machine."""
    host = (urlsplit(where if "//" in where else f"//{where}").hostname or "").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
