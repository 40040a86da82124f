"""`App.doctor()`: models per role, embedding and rerank models, library and index health (the
vectors checked chunk by chunk), and every place data can go — "nothing leaves this machine"
only when nothing can. Each part is a typed record; `DoctorReport` carries them all."""

from __future__ import annotations

import ipaddress
import os
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field

from zocrates_nb.config import Settings
from zocrates_nb.online.notices import RetractionStatus
from zocrates_nb.redaction import redact, safe_url

if TYPE_CHECKING:
    from zocrates_nb.app.core import AppCore

NOTHING_LEAVES = "nothing leaves this machine"


class RoleModel(BaseModel):
    """The model one role runs, and where its requests go (the key's status, never its value)."""

    # `from` is a Python keyword: the field is `config_key`, its key in JSON stays "from".
    model_config = ConfigDict(validate_by_name=True, serialize_by_alias=True)

    model: str
    config_key: str = Field(alias="from")  # e.g. "models.search" or "models.base"
    provider: str
    endpoint: str = ""  # "" for the offline engine
    cloud: bool = False
    thinking: str = "off"
    api_key: str = "not needed"  # set | missing | not needed


class ModelsInfo(BaseModel):
    """Which model each role runs (`App.models()`, doctor's `models`); reads no network."""

    ok: bool = True
    error: str = ""  # the configuration's problem, when `ok` is false
    roles: dict[str, RoleModel] = Field(default_factory=dict)
    any_cloud: bool | None = None  # None: the configuration could not be read
    offline: bool = False  # every role is the offline engine
    summary: str = ""
    telemetry: dict[str, bool] = Field(default_factory=dict)  # {"otel": …}
    config_file: str = ""


class Destination(BaseModel):
    """One place this configuration can send data, and what it sends there."""

    what: str
    where: str
    sends: str
    when: str = ""  # "" always; else when it happens (only when you ask …)
    leaves: bool  # another machine (only loopback stays on this one)


class Privacy(BaseModel):
    """Every place data can go: model endpoints, embedding server, Chroma server, online
    sources, the Zotero Web API, an OpenTelemetry exporter."""

    destinations: list[Destination] = Field(default_factory=list)
    leaves: bool | None  # None: the configuration could not be read
    summary: str


class Rerank(BaseModel):
    """Which method reranking uses on this machine."""

    rerank_method: str
    rerank_model: str | None = None  # None: the method's default


class LibraryCounts(BaseModel):
    """What the index holds, in short (`App.status()` has it all)."""

    items: int
    documents: dict[str, int]  # per status: done, error, skipped, indexing
    chunks: int
    vectors: int | None = None
    last_indexed: str | None = None


class DocumentProblem(BaseModel):
    """A document that failed or was skipped, and why."""

    doc_key: str
    item_key: str
    status: str  # error | skipped
    error: str


class IndexHealth(BaseModel):
    """Whether the index answers: documents done, every chunk with its vectors."""

    ok: bool
    problems: list[DocumentProblem] = Field(default_factory=list)  # the first 50
    vectors: list[str] = Field(default_factory=list)  # chunk by chunk (`index` repairs them)
    note: str = ""
    error: str = ""  # the index could not be read at all


class DoctorReport(BaseModel):
    """Everything `zocrates-nb doctor` shows (`--json` is its `model_dump(mode="json")`)."""

    home: str
    models: ModelsInfo
    any_cloud_endpoint: bool | None = None
    telemetry: str = ""
    privacy: Privacy
    embedding_model: str | None = None  # None: the index could not be read
    rerank: Rerank | None = None
    library: LibraryCounts | None = None
    index_health: IndexHealth
    sessions: int
    notices: list[str] = Field(default_factory=list)  # what opening the data home repaired
    retractions: RetractionStatus | None = None  # the library's retracted papers, last check


def models_info(app: AppCore) -> ModelsInfo:
    """The registry's account of the roles, as a record."""
    return ModelsInfo.model_validate(app.registry.doctor_info())


def doctor(app: AppCore) -> DoctorReport:
    from zocrates_nb.retrieval.rerank import describe

    models = models_info(app)
    try:
        found = privacy(app.settings, models)
    except Exception as e:  # a bad config: the models' entry already says so
        found = Privacy(summary=redact(str(e)), leaves=None)
    if found.leaves and NOTHING_LEAVES in models.summary:
        models.summary = "no cloud model endpoint configured (other data leaves: see privacy)"
    telemetry = app.registry.telemetry_status or _otel(models)
    embedding_model: str | None = None
    rerank: Rerank | None = None
    library: LibraryCounts | None = None
    retractions: RetractionStatus | None = None
    try:
        index = app.library_index
        status = app.status()
        errors = [
            DocumentProblem(doc_key=d.doc_key, item_key=d.item_key, status=d.status, error=d.error)
            for d in index.documents()
            if d.status in ("error", "skipped")
        ]
        embedding_model = status.embedding_model
        rerank = Rerank.model_validate(describe(app.reranker))
        library = LibraryCounts.model_validate(status.model_dump())
        retractions = status.retractions
        vectors = _vector_health(index) if status.chunks else list(status.problems)
        from zocrates_nb.library.source import index_hint

        run = index.run_state()
        note = "" if status.chunks else f"the index is empty: {index_hint(app.home)}"
        if run == "running":
            note = "an index run is in progress; what it has not reached yet is not searched"
        elif run == "interrupted":
            note = ("the last index run stopped before it finished: some papers may be missing; "
                    "run `zocrates-nb index` again to finish it")  # fmt: skip
        health = IndexHealth(
            ok=bool(status.chunks) and not status.documents.get("indexing") and not vectors
            and not run,
            problems=errors[:50],
            vectors=vectors,
            note=note,
        )
    except Exception as e:  # a broken index is a doctor finding, not a crash
        from zocrates_nb.app.describe import describe_error

        health = IndexHealth(ok=False, error=describe_error(e, doing="Reading the index"))
    return DoctorReport(
        home=str(app.read_only_home or app.home),  # the home the user named, not its copy
        models=models,
        any_cloud_endpoint=models.any_cloud,
        telemetry=telemetry,
        privacy=found,
        embedding_model=embedding_model,
        rerank=rerank,
        library=library,
        index_health=health,
        sessions=len(app.store.list_sessions(10_000)),
        notices=list(app.notices),
        retractions=retractions,
    )


def _otel(models: ModelsInfo) -> str:
    """Telemetry in words when the registry has not switched it yet."""
    if not models.telemetry:
        return ""
    return f"telemetry.otel is {'on' if models.telemetry.get('otel') else 'off'}"


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
        out.append(
            f"{len(missing):,} chunks have no vector (dense search misses them): run "
            "`zocrates-nb index` to embed them again from the cached conversions"
        )
    if orphans:
        out.append(f"{len(orphans):,} vectors belong to no chunk: `zocrates-nb index` removes them")
    return out


def privacy(settings: Settings, models: ModelsInfo) -> Privacy:
    """Every place this configuration can send data, and whether it is off this machine
    (only loopback stays: a server on the local network is another machine)."""
    out: list[Destination] = []

    def add(what: str, where: str, sends: str, *, when: str = "",
            leaves: bool | None = None) -> None:  # fmt: skip
        off = not _loopback(where) if leaves is None else leaves
        out.append(Destination(what=what, where=where, sends=sends, when=when, leaves=off))

    seen: set[str] = set()
    for role, r in models.roles.items():
        if r.provider == "offline":
            continue
        where = r.endpoint or f"{r.provider}'s default endpoint"
        key = f"{r.model}@{where}"
        if key not in seen:
            seen.add(key)
            add(
                f"model {r.model} ({role})",
                where,
                "questions, passages of your papers and the answers written from them",
                leaves=None if r.endpoint else r.cloud,
            )
    embedding = settings.index.embedding
    if embedding.provider == "openai-compatible" and embedding.base_url:
        add(
            "embedding server",
            safe_url(embedding.base_url),
            "the text of every passage indexed, and every search query",
        )
    chroma = settings.index.chroma
    if chroma.mode == "server":
        add(
            "Chroma server",
            f"http://{chroma.host}:{chroma.port}",
            "the vectors of every passage and the filters of every search",
        )
    online = settings.online
    if online.enabled:
        for name in ("arxiv", "crossref", "semantic_scholar", "openalex"):
            source = getattr(online, name)
            if source.enabled:
                add(
                    f"online source {name}",
                    safe_url(source.base_url),
                    "discovery queries (words of your questions)"
                    + (", your library's DOIs (the retraction check)"
                       if name in ("crossref", "openalex") else ""),
                )  # fmt: skip
    web = settings.zotero.web
    add(
        "Zotero Web API",
        safe_url(web.base_url),
        "the items, notes and highlights you save (and reads of your library)",
        when="" if web.library_id else "only when you ask: index --zotero-web, save --to web",
    )
    if settings.telemetry.otel:
        endpoint = os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "")
        add(
            "OpenTelemetry exporter",
            safe_url(endpoint) or "(OTEL_EXPORTER_OTLP_ENDPOINT)",
            "timings and token counts of model calls (no content)",
        )
    always = [d for d in out if d.leaves and not d.when]
    if always:
        summary = "data leaves this machine: to " + "; ".join(
            f"{d.what} at {d.where}" for d in always
        )
    else:
        summary = NOTHING_LEAVES + (" (unless you ask: see the list)" if out else "")
    return Privacy(destinations=out, leaves=bool(always), summary=summary)


def _loopback(where: str) -> bool:
    """Whether an address is this machine (loopback); anything else is another machine."""
    host = (urlsplit(where if "//" in where else f"//{where}").hostname or "").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
