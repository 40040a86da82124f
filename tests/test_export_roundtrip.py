"""RIS and BibTeX exports read back by Zotero's own import translators, field for field.

`zotero_translate.cjs` runs zotero/translators' RIS.js and BibTeX.js under node with Zotero's
translation engine (zotero/translate), utilities and schema, as translation-server does. None
of that code is in this repository: the test finds checkouts in $ZOTERO_TRANSLATION_SOURCES
(translators/, translate/, utilities/, zotero-schema/) or git snapshots of those repositories
under $ZOTERO_SNAPSHOTS (`zotero+translators/repo`, …), and skips, saying so, without them or
without node and the widgets' jsdom (`cd widgets && npm ci`). What Zotero does when it saves an
imported item is applied as Zotero does it (item.js `fromJSON`): `Type:` and field lines in
Extra become the item's type and fields."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import tarfile
from pathlib import Path
from typing import Any

import pytest
from pylatexenc.latex2text import LatexNodes2Text

from zocrates_nb.online import Candidate
from zocrates_nb.writeback import to_bibtex, to_ris

HERE = Path(__file__).parent
REPOS = ("translators", "translate", "utilities", "zotero-schema")
NODE_MODULES = HERE.parent / "widgets" / "node_modules"

ARTICLE = Candidate(
    title="Augmenting large language models with chemistry tools", year=2024,
    authors=["Andrés M Bran", "Sam Cox", "Schwaller, Philippe", "Aurora Ramírez"],
    venue="Nature Machine Intelligence", doi="10.1038/s42256-024-00832-8",
    arxiv_id="2304.05376", url="https://www.nature.com/articles/s42256-024-00832-8",
    pdf_url="https://www.nature.com/articles/s42256-024-00832-8.pdf",
    abstract="Large language models (LLMs) have shown strong performance & more; p < 0.05.",
    item_type="journalArticle",
)  # fmt: skip
PREPRINT = Candidate(
    title=r"Heavy-tailed $\alpha$-stable noise in SGD: bounds $x \le y$ for Lévy flights",
    authors=["Umut Şimşekli", "Mert Gürbüzbalaban"], year=2019, arxiv_id="1901.06053",
    url="https://arxiv.org/abs/1901.06053v2", pdf_url="https://arxiv.org/pdf/1901.06053v2",
    abstract=r"We study $\alpha$-stable noise.", sources=["arXiv"],
)  # fmt: skip
CONFERENCE = Candidate(
    title="In Search of an Understandable Consensus Algorithm", year=2014,
    authors=["Diego Ongaro", "John Ousterhout"], venue="2014 USENIX Annual Technical Conference",
    doi="10.5555/2643634.2643666", url="https://www.usenix.org/conference/atc14/ongaro",
    pdf_url="https://www.usenix.org/system/files/conference/atc14/atc14-paper-ongaro.pdf",
    item_type="conferencePaper", publisher="USENIX Association",
)  # fmt: skip
CHAPTER = Candidate(
    title="Consensus in the Presence of Partial Synchrony", year=2010, authors=["Cynthia Dwork"],
    venue="Replication: Theory and Practice", doi="10.1007/978-3-642-11294-2_1",
    isbn="978-3-642-11293-5", publisher="Springer", item_type="bookSection",
    url="https://link.springer.com/chapter/10.1007/978-3-642-11294-2_1",
)  # fmt: skip
THESIS = Candidate(title="Consensus: Bridging Theory and Practice", year=2014,
                   authors=["Diego Ongaro"], venue="Stanford University", item_type="thesis",
                   url="https://purl.stanford.edu/qr033xr6097")  # fmt: skip
REPORT = Candidate(title="Paxos Made Simple", year=2001, authors=["Leslie Lamport"],
                   venue="Microsoft Research", item_type="report",
                   url="https://lamport.azurewebsites.net/pubs/paxos-simple.pdf")  # fmt: skip
NAMES = Candidate(
    title="Prices from $5: 50% of #1 & the_rest {in braces} ^", year=2021,
    authors=["Johannes van der Berg", "World Health Organization", "Zhang Wei",
             "Martin Luther King Jr.", "Ольга Петрова", "Smith JA", "张伟"],
    venue="Journal of Money & Co", item_type="journalArticle",
)  # fmt: skip
# Creators as Zotero's own import keeps them: (family, given, one field).
CREATORS = {NAMES.id: [("van der Berg", "Johannes", False), ("World Health Organization", "", True),
                       ("Zhang", "Wei", False), ("King", "Martin Luther, Jr.", False),
                       ("Петрова", "Ольга", False), ("Smith", "JA", False), ("张伟", "", True)]}
PAPERS = [ARTICLE, PREPRINT, CONFERENCE, CHAPTER, THESIS, REPORT, NAMES]
VENUE = {"journalArticle": "publicationTitle", "conferencePaper": "proceedingsTitle",
         "bookSection": "bookTitle", "thesis": "university", "report": "institution"}
# BibTeX.js reads TeX maths by its own table (`\le` becomes "łe"), so maths go as characters.
BIBTEX_TITLE = {PREPRINT.id: "Heavy-tailed α-stable noise in SGD: bounds x ≤ y for Lévy flights"}


def _snapshot(repo: str, git_dir: Path, into: Path) -> None:
    archive = subprocess.run(["git", f"--git-dir={git_dir}", "archive", "HEAD"], check=True,
                             capture_output=True).stdout  # fmt: skip
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into / repo, filter="data")


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("node") is None:
        pytest.skip("node is not installed: Zotero's translators cannot run")
    if not (NODE_MODULES / "jsdom").is_dir():
        pytest.skip("widgets/node_modules has no jsdom: run `cd widgets && npm ci`")
    given = os.environ.get("ZOTERO_TRANSLATION_SOURCES")
    if given and all((Path(given) / r).is_dir() for r in REPOS):
        return Path(given)
    snapshots = os.environ.get("ZOTERO_SNAPSHOTS")  # no default: nothing machine-specific
    gits = {r: Path(snapshots) / f"zotero+{r}" / "repo" for r in REPOS} if snapshots else {}
    if not gits or not all(g.is_dir() for g in gits.values()):
        pytest.skip("Zotero's translators are not here: set ZOTERO_TRANSLATION_SOURCES to "
                    "checkouts of zotero/translators, zotero/translate, zotero/utilities and "
                    "zotero/zotero-schema (or ZOTERO_SNAPSHOTS to git snapshots of them)")
    root = tmp_path_factory.mktemp("zotero-sources")
    for repo, git_dir in gits.items():
        _snapshot(repo, git_dir, root)
    return root


def zotero_import(sources: Path, translator: str, text: str) -> list[dict[str, Any]]:
    out = subprocess.run(["node", str(HERE / "zotero_translate.cjs"), str(sources), translator],
                         input=text, capture_output=True, text=True, timeout=120,
                         env={**os.environ, "NODE_PATH": str(NODE_MODULES)})  # fmt: skip
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def saved_by_zotero(item: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """What Zotero keeps when it saves a translated item (item.js `fromJSON`, non-strict):
    a `Type:` line of Extra sets the item type; `Field: value` lines of fields valid for the
    type become those fields; a base field becomes the type's own (publicationTitle →
    proceedingsTitle); a field the type lacks moves to Extra."""
    types = {t["itemType"]: t for t in schema["itemTypes"]}

    def norm(key: str) -> str:
        return re.sub(r"[\s_-]+", "-", re.sub(r"([a-z])([A-Z])", r"\1-\2", key.strip()).lower())

    out = dict(item)
    lines, rest = str(out.pop("extra", "")).splitlines(), []
    for line in lines:
        key, _, value = line.partition(":")
        if norm(key) == "type" and value.strip() in types:
            out["itemType"] = value.strip()
        else:
            rest.append(line)
    fields = {f["field"]: f for f in types[out["itemType"]]["fields"]}
    for f in fields.values():
        if f.get("baseField") in out:
            out[f["field"]] = out.pop(f["baseField"])
    kept = []
    for line in rest:
        key, _, value = line.partition(":")
        name = next((f for f in fields if norm(f) == norm(key)), None)
        if name and value.strip() and name not in out:
            out[name] = value.strip()
        else:
            kept.append(line)
    for name in [k for k in out if k in {f["field"] for t in types.values()
                                         for f in t["fields"]} and k not in fields]:
        kept.append(f"{name}: {out.pop(name)}")
    out["extra"] = "\n".join(kept)
    return out


def expected(c: Candidate, *, bibtex: bool) -> dict[str, Any]:
    """Every field of the candidate as Zotero should hold it after the import."""
    kind = c.item_type or "preprint"
    fields: dict[str, Any] = {
        "itemType": "document" if bibtex and kind == "preprint" else kind,
        "title": BIBTEX_TITLE.get(c.id, c.title) if bibtex else c.title,
        "creators": CREATORS.get(c.id) or [(*_name(a), False) for a in c.authors],
        "date": str(c.year),
        "url": c.url,
        "DOI": c.doi,
        "ISBN": c.isbn if kind != "report" else None,
    }
    if kind in VENUE:
        fields[VENUE[kind]] = c.venue
    if kind in ("bookSection", "conferencePaper"):
        fields["publisher"] = c.publisher
    if kind == "preprint" and not bibtex:
        fields |= {"repository": "arXiv", "archiveID": f"arXiv:{c.arxiv_id}"}
    elif c.arxiv_id:
        fields["extra"] = f"arXiv: {c.arxiv_id}"
    return {k: v for k, v in fields.items() if v}


def _name(author: str) -> tuple[str, str]:
    if "," in author:
        last, first = author.split(",", 1)
        return last.strip(), first.strip()
    first, _, last = author.rpartition(" ")
    return last, first


def got(item: dict[str, Any], want: dict[str, Any]) -> dict[str, Any]:
    out = {k: item.get(k) for k in want if k != "creators"}
    out["creators"] = [(c.get("lastName", c.get("name", "")), c.get("firstName", ""),
                        c.get("fieldMode") == 1 or "name" in c) for c in item["creators"]]
    return {k: v for k, v in out.items() if v}


@pytest.mark.parametrize("kind", ["ris", "bibtex"])
def test_exports_read_back_by_zotero_s_own_translators_field_for_field(
    sources: Path, kind: str
) -> None:
    schema = json.loads((sources / "zotero-schema" / "schema.json").read_text("utf-8"))
    text = to_ris(PAPERS) if kind == "ris" else to_bibtex(PAPERS)
    items = zotero_import(sources, "RIS.js" if kind == "ris" else "BibTeX.js", text)
    assert len(items) == len(PAPERS)
    for c, raw in zip(PAPERS, items, strict=True):
        item = saved_by_zotero(raw, schema)
        want = expected(c, bibtex=kind == "bibtex")
        assert got(item, want) == want, f"{kind}: {c.title}"
        # The PDF link: RIS's L1 (the PDF tag) or BibTeX's `file` with its PDF type, both an
        # attachment whose http(s) path Zotero links when it saves the item.
        links = [a.get("url") or a.get("path") for a in item.get("attachments", [])
                 if kind == "ris" or a.get("mimeType") == "application/pdf"]  # fmt: skip
        assert links == ([c.pdf_url] if c.pdf_url else [])
        assert [t if isinstance(t, str) else t["tag"] for t in item["tags"]] == [
            "zocrates:discovered"]
        assert item.get("abstractNote", "").replace("α", r"$\alpha$") == c.abstract


def test_the_exports_carry_what_zotero_reads_not_what_it_misreads() -> None:
    """Without node: the tags and fields the translators map, checked in the text."""
    ris = to_ris([ARTICLE, PREPRINT])
    first, second = (r for r in ris.split("ER  - ") if r.strip())
    assert "AU  - Bran, Andrés M\n" in first and "AU  - Ramírez, Aurora\n" in first
    assert "T2  - Nature Machine Intelligence\n" in first and "JO  -" not in ris
    assert "TY  - GEN\n" in second and "M2  - Type: preprint\n" in second
    assert "M2  - Archive ID: arXiv:1901.06053\n" in second
    bib = to_bibtex([PREPRINT, CONFERENCE])
    assert "@misc{simsekli2019heavy," in bib
    assert "title = {Heavy-tailed α-stable noise in {SGD:} bounds x ≤ y for {Lévy} flights}" in bib
    assert "eprinttype = {arxiv}" in bib and "eprint = {1901.06053}" in bib
    assert r"file = {Full Text PDF:https\://arxiv.org/pdf/1901.06053v2:application/pdf}" in bib
    assert "@inproceedings{" in bib and r"title = {In {Search} of an {Understandable}" in bib


def test_names_and_text_are_written_as_zotero_reads_them() -> None:
    """Without node: particles, suffixes, family-first names and organisations in both
    formats, and a dollar sign in prose is text, not maths."""
    ris, bib = to_ris([NAMES]), to_bibtex([NAMES])
    for line in ("AU  - van der Berg, Johannes", "AU  - World Health Organization",
                 "AU  - Zhang, Wei", "AU  - King, Martin Luther, Jr.", "AU  - 张伟"):
        assert line + "\n" in ris
    assert ("author = {van der Berg, Johannes and {World Health Organization} and Zhang, Wei "
            "and King, Jr., Martin Luther and") in bib
    assert r"Prices from \$5: 50\% of \#1 \& the\_rest \{in braces\}" in bib
    # Two dollar signs in prose stay prices; maths only where the source marks it ($x$).
    prices = to_bibtex([NAMES.model_copy(update={"title": "Prices from $5 to $10, not $x$"})])
    assert r"title = {Prices from \$5 to \$10, not x}" in prices
    # BibTeX.js strips any `$…$` pair, even escaped ones, so this is read as LaTeX reads it.
    title = re.search(r"title = \{(.*)\},?\n", prices).group(1)  # type: ignore[union-attr]
    assert LatexNodes2Text().latex_to_text(title) == "Prices from $5 to $10, not x"
