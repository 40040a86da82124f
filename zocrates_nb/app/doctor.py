"""`App.doctor()`: models per role, embedding and rerank models, library and index health, and
whether anything would leave the machine."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from zocrates_nb.redaction import redact

if TYPE_CHECKING:
    from zocrates_nb.app.facade import App


def doctor(app: App) -> dict[str, Any]:
    from zocrates_nb.retrieval.rerank import describe

    info: dict[str, Any] = {"home": str(app.home)}
    models = app.registry.doctor_info()
    info["models"] = models
    info["any_cloud_endpoint"] = models.get("any_cloud")
    info["telemetry"] = app.registry.telemetry_status or models.get("telemetry")
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
            "last_indexed": status.last_indexed,
        }
        info["index_health"] = {
            "ok": bool(status.chunks) and not status.documents.get("indexing"),
            "problems": errors[:50],
            "note": "" if status.chunks else "the index is empty: run `zocrates-nb index` first",
        }
    except Exception as e:  # a broken index is a doctor finding, not a crash
        info["index_health"] = {"ok": False, "error": redact(str(e))}
    info["sessions"] = len(app.store.list_sessions(10_000))
    return info
