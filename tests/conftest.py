"""Shared fixtures: the read-only corpus, one corpus index per session, the indexed sample
library and an App over it, small test libraries."""

from __future__ import annotations

import hashlib
import os
import textwrap
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from zocrates_nb.config import Settings
from zocrates_nb.library.model import Attachment, Collection, Creator, Item, Library, Note

if TYPE_CHECKING:
    from zocrates_nb.app import App

# The one place that says where the real test corpus is (read-only; never copied into the
# repository). A clone without it runs every other test: `ZOCRATES_TEST_CORPUS=/nonexistent`
# proves that (`.ci/run` does).
CORPUS_ENV = "ZOCRATES_TEST_CORPUS"
CORPUS = Path(
    os.environ.get(CORPUS_ENV) or Path(__file__).resolve().parents[1].parent / "shared" / "corpus"
).resolve()
ZOTERO_DIR = CORPUS / "zotero-library"


def corpus_path(*parts: str) -> Path:
    """A file or folder of the test corpus, or skip the calling test saying where it looked."""
    path = CORPUS.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"test corpus not found: {path} (set {CORPUS_ENV}; default ../shared/corpus)")
    return path


_CORPUS_FIXTURES = frozenset({"shared_corpus", "corpus_index"})
_CORPUS_NAMES = ("corpus_path(", "CORPUS", "ZOTERO_DIR", "shared_corpus", "corpus_index",
                 "online_fixtures", "zotero_fakes")  # the last two replay recorded files


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark `corpus` every test that may touch the test corpus: it uses a corpus fixture, or
    its module names the corpus. The rest run the same with or without it, so the suite's
    corpus-less pass (`make test-without-corpus`) runs only the marked ones (`-m corpus`)."""
    sources: dict[Path, str] = {}
    for item in items:
        path = Path(str(item.fspath))
        if path not in sources:
            sources[path] = path.read_text("utf-8") if path.suffix == ".py" else ""
        fixtures = set(getattr(item, "fixturenames", ()))
        if fixtures & _CORPUS_FIXTURES or any(n in sources[path] for n in _CORPUS_NAMES):
            item.add_marker(pytest.mark.corpus)


@pytest.fixture(scope="session")
def shared_corpus() -> Path:
    """The test corpus with its papers and Zotero library (read-only), or skip the test."""
    corpus_path("papers")
    corpus_path("zotero-library", "zotero.sqlite")
    return CORPUS


@pytest.fixture(scope="session")
def sample_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data home with the built-in sample library indexed, shared by the tests that chat."""
    from zocrates_nb import sample
    from zocrates_nb.index import Index, index_library
    from zocrates_nb.library import open_library

    home = tmp_path_factory.mktemp("zocrates-sample-home")
    library = open_library(folder=sample.build(home / "sample-library"))
    with Index.open(home) as index:
        index_library(library, index, progress=False)
    return home


@pytest.fixture(scope="module")
def own_sample_home(sample_home: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the indexed sample for one test module (its questions add sessions to it)."""
    import shutil

    copy = tmp_path_factory.mktemp("own-sample") / "home"
    shutil.copytree(sample_home, copy)
    return copy


@pytest.fixture(scope="module")
def app(sample_home: Path) -> Iterator[App]:
    """The App over the sample library (one per test module: its sessions persist between)."""
    from zocrates_nb.app import App

    with App.open(sample_home) as opened:
        yield opened


@pytest.fixture(scope="module")
def scripted_server() -> Iterator[Any]:
    """The scripted OpenAI-compatible server on loopback, one per test module."""
    from zocrates_nb.devtools.scripted_openai import ScriptedOpenAI

    with ScriptedOpenAI() as llm:
        yield llm


@pytest.fixture
def scripted_llm(scripted_server: Any) -> Any:
    """The module's scripted server, its record of requests fresh for each test."""
    scripted_server.requests.clear()
    return scripted_server


@pytest.fixture(params=["openai", "litellm"])
def model_route(request: pytest.FixtureRequest) -> str:
    """Each test on both routes to an OpenAI-compatible endpoint."""
    return {"openai": "openai:scripted", "litellm": "litellm:openai/scripted"}[request.param]


@pytest.fixture(scope="module")
def small_index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A small indexed library (Raft, tomatoes, …) for the scripted-agent tests."""
    from agents_helpers import index_small_library

    root = tmp_path_factory.mktemp("small")
    index = index_small_library(LibraryBuilder(root / "library"), root / "home")
    yield index
    index.close()


def sha256_file(path: Path) -> str:
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


@dataclass
class CorpusIndex:
    """The 37-paper Zotero library indexed once per session into `home`."""

    home: Path
    index: object  # zocrates_nb.index.Index (kept loose so importing conftest stays cheap)
    report: object  # zocrates_nb.index.IndexReport
    library: Library
    seconds: float  # wall time of the cold run
    zotero_sha_before: str
    zotero_sha_after: str = ""
    extra: dict[str, object] = field(default_factory=dict)


@pytest.fixture(scope="session")
def corpus_index(
    shared_corpus: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[CorpusIndex]:
    """Index ../shared/corpus/zotero-library into a fresh data home, once per session."""
    from zocrates_nb.index import Index, index_library
    from zocrates_nb.library import read_zotero_dir

    zotero_db = ZOTERO_DIR / "zotero.sqlite"
    before = sha256_file(zotero_db)
    home = tmp_path_factory.mktemp("corpus-home")
    library = read_zotero_dir(ZOTERO_DIR)
    index = Index.open(home, Settings())
    t0 = time.perf_counter()
    report = index_library(library, index, progress=False)
    seconds = time.perf_counter() - t0
    ci = CorpusIndex(home, index, report, library, seconds, before, sha256_file(zotero_db))
    print(f"\n[corpus_index] cold index {seconds:.1f} s: {report.to_json()}")
    yield ci
    index.close()


# -- small libraries written by the tests ------------------------------------------------

TOPICS: dict[str, tuple[str, list[str]]] = {
    "raft": (
        "Understandable Consensus with Raft",
        [
            "Raft elects a leader with randomized election timeouts.",
            "A follower that hears no heartbeat becomes a candidate and requests votes.",
            "The candidate wins the election when a majority of servers grant their vote.",
            "The leader replicates log entries to the followers with AppendEntries calls.",
            "An entry is committed once it is stored on a majority of the servers.",
            "Terms act as a logical clock and stale leaders step down when they see a newer term.",
            "Safety requires that a leader holds every committed entry of earlier terms.",
            "Cluster membership changes use a joint consensus configuration.",
            "Snapshots compact the replicated log when it grows too long.",
            "Clients send their commands to the leader, which answers after commit.",
        ],
    ),
    "bm25": (
        "Probabilistic Term Weighting for Ranked Retrieval",
        [
            "BM25 weights a query term by its inverse document frequency.",
            "Term frequency saturates, so repeating a word helps less and less.",
            "Document length normalisation penalises long documents with the b parameter.",
            "The k1 parameter controls how quickly term frequency saturates.",
            "Relevance feedback re-weights terms using judged documents.",
            "Query expansion adds terms taken from the top ranked documents.",
            "The Okapi system was evaluated on the TREC ad hoc collections.",
            "Stop words carry little weight because they occur in most documents.",
            "Precision at ten measures the share of relevant documents among the first results.",
            "The inverted index maps each stemmed term to the documents containing it.",
        ],
    ),
    "genome": (
        "Assembling Short Reads with de Bruijn Graphs",
        [
            "The assembler splits sequencing reads into overlapping k-mers.",
            "Each k-mer becomes an edge of a de Bruijn graph between its prefix and suffix.",
            "An Eulerian path through the graph spells out the genome sequence.",
            "Sequencing errors create short dead-end tips that are clipped from the graph.",
            "Bubbles caused by point mutations are merged by a tour bus traversal.",
            "Repeats longer than k collapse into tangles that paired reads can resolve.",
            "Coverage depth estimates the copy number of every contig.",
            "Illumina reads are short but have a low substitution error rate.",
            "The contig N50 summarises the contiguity of an assembly.",
            "Scaffolding orders contigs with mate pair libraries.",
        ],
    ),
    "vision": (
        "Contrastive Learning of Visual Representations",
        [
            "Two augmented views of the same image form a positive pair.",
            "The contrastive loss pushes apart the embeddings of different images.",
            "A momentum encoder keeps the dictionary of negative keys consistent.",
            "Random cropping and colour distortion are the most useful augmentations.",
            "A projection head maps representations to the space where the loss is applied.",
            "Linear evaluation trains a classifier on frozen features.",
            "Larger batches provide more negative examples per step.",
            "The temperature parameter sharpens the softmax over similarities.",
            "Self-supervised pretraining reduces the labels needed for fine-tuning.",
            "The queue of keys decouples the dictionary size from the batch size.",
        ],
    ),
    "garden": (
        "Growing Tomatoes in Small Gardens",
        [
            "Tomato seedlings need plenty of sunlight and warm soil.",
            "Water the plants deeply at the base and avoid wetting the leaves.",
            "Stakes or cages keep the vines off the ground.",
            "Pinching side shoots directs energy into the fruit.",
            "Compost improves the structure and fertility of the soil.",
            "Blossom end rot comes from irregular watering and low calcium uptake.",
            "Harvest the fruit when it is fully coloured and slightly soft.",
            "Crop rotation limits soil-borne diseases such as verticillium wilt.",
            "Mulch keeps the soil moist and suppresses weeds.",
            "Basil planted nearby is said to repel some pests.",
        ],
    ),
}

SECTION_NAMES = ["Introduction", "Design", "Method", "Evaluation", "Discussion", "Conclusion"]


def topic_paragraphs(topic: str, n: int, seed: int = 0, sentences: int = 5) -> list[str]:
    """`n` paragraphs of `sentences` sentences from a topic's pool, deterministic per seed."""
    pool = TOPICS[topic][1]
    out = []
    for p in range(n):
        start = (seed * 7 + p * 3) % len(pool)
        out.append(" ".join(pool[(start + i) % len(pool)] for i in range(sentences)))
    return out


def topic_markdown(
    topic: str, *, sections: int = 3, paragraphs: int = 4, seed: int = 0, title: str = ""
) -> str:
    """A Markdown paper: title, abstract, numbered sections of topic paragraphs."""
    name = title or TOPICS[topic][0]
    abstract = " ".join(TOPICS[topic][1][:3])
    parts = [f"# {name}", "", "## Abstract", "", abstract, ""]
    for s in range(sections):
        parts += [f"## {s + 1} {SECTION_NAMES[s % len(SECTION_NAMES)]}", ""]
        for para in topic_paragraphs(topic, paragraphs, seed=seed + s):
            parts += [textwrap.fill(para, 100), ""]
    return "\n".join(parts)


class LibraryBuilder:
    """Builds a `Library` of items whose attachments are files written under `root`."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        self.library = Library(source=f"test:{root}")

    def collection(self, key: str, name: str, parent: str | None = None) -> Collection:
        c = Collection(key, name, parent)
        self.library.collections[key] = c
        return c

    def paper(
        self,
        key: str,
        topic: str,
        *,
        text: str | None = None,
        suffix: str = ".md",
        content_type: str = "text/markdown",
        collections: tuple[str, ...] = (),
        year: int = 2020,
        abstract: str = "",
    ) -> Item:
        """An item with one attachment `A{key}` holding a topic document (or `text`)."""
        path = self.root / f"{key}{suffix}"
        path.write_text(text if text is not None else topic_markdown(topic), "utf-8")
        item = Item(
            key=key,
            item_type="journalArticle",
            title=TOPICS[topic][0],
            creators=[Creator("Author", "Ada"), Creator(topic.title(), "Bo")],
            year=year,
            abstract=abstract,
            collections=list(collections),
            version="1",
            attachments=[
                Attachment(
                    key=f"A{key}",
                    parent_key=key,
                    title="Full Text",
                    content_type=content_type,
                    link_mode="imported_file",
                    path=path,
                    filename=path.name,
                    version="1",
                )
            ],
        )
        self.library.items[key] = item
        return item

    def note(self, key: str, parent: str | None, html: str, title: str) -> Note:
        note = Note(key=key, parent_key=parent, title=title, html=html, version="1")
        if parent is None:
            self.library.standalone_notes.append(note)
        else:
            self.library.items[parent].notes.append(note)
        return note


@pytest.fixture
def library_builder(tmp_path: Path) -> LibraryBuilder:
    return LibraryBuilder(tmp_path / "library")
