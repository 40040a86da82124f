"""The PDF converter on the real corpus, scored with the shared gold-TOC scorer.

Converts the 12 dev papers once (a few seconds) and checks the quality targets and the bundle
invariants the indexer relies on.
"""

from __future__ import annotations

import importlib.util
import json
import re
from types import ModuleType
from typing import Any

import pytest
from conftest import corpus_path

from zocrates_nb.ingest import Bundle, convert_file

pytestmark = pytest.mark.corpus


@pytest.fixture(scope="module")
def scorer() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "score_toc", corpus_path("gold-toc", "score_toc.py")
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def gold() -> list[dict[str, Any]]:
    dev = corpus_path("gold-toc", "dev.json")
    data: list[dict[str, Any]] = json.loads(dev.read_text("utf-8"))
    return data


@pytest.fixture(scope="module")
def bundles(gold: list[dict[str, Any]]) -> dict[str, Bundle]:
    return {g["slug"]: convert_file(corpus_path("papers", f"{g['slug']}.pdf")) for g in gold}


def _prediction(bundle: Bundle) -> dict[str, Any]:
    toc = bundle.toc
    return {
        "sections": [{"level": s.level, "number": s.number, "title": s.title}
                     for s in toc.sections[1:]],
        "figures": [{"label": f.label} for f in toc.figures],
        "tables": [{"label": t.label} for t in toc.tables],
    }


def test_dev_set_meets_quality_targets(
    scorer: ModuleType, gold: list[dict[str, Any]], bundles: dict[str, Bundle]
) -> None:
    hits = n_gold = n_pred = 0
    fig_hit = fig_n = tab_hit = tab_n = 0
    for g in gold:
        pred = _prediction(bundles[g["slug"]])
        pairs = scorer.match_headings(g["sections"], pred["sections"])
        hits += len(pairs)
        n_gold += len(g["sections"])
        n_pred += len(pred["sections"])
        gf, pf = scorer.label_set(g["figures"]), scorer.label_set(pred["figures"])
        gt, pt = scorer.label_set(g["tables"]), scorer.label_set(pred["tables"])
        fig_hit, fig_n = fig_hit + len(gf & pf), fig_n + len(gf)
        tab_hit, tab_n = tab_hit + len(gt & pt), tab_n + len(gt)
    recall, precision = hits / n_gold, hits / n_pred
    f1 = 2 * precision * recall / (precision + recall)
    assert f1 >= 0.85, f"heading F1 {f1:.3f} (P {precision:.3f} R {recall:.3f})"
    assert fig_hit / fig_n >= 0.90, f"figure recall {fig_hit}/{fig_n}"
    assert tab_hit / tab_n >= 0.90, f"table recall {tab_hit}/{tab_n}"


def test_sections_tile_each_document(bundles: dict[str, Bundle]) -> None:
    for slug, b in bundles.items():
        secs = b.toc.sections
        assert secs[0].id == "s0" and secs[0].level == 0 and secs[0].line_start == 1, slug
        expected = 1
        for s in secs:
            assert s.line_start == expected, (slug, s.id)
            expected = s.line_end + 1
        assert expected - 1 == len(b.markdown.rstrip("\n").split("\n")), slug
        for s in secs[1:]:
            line = b.lines[s.line_start - 1]
            assert line.startswith("#") and s.title in line, (slug, s.id, line)
            assert 1 <= s.level <= 3 and s.page is not None


def test_pages_and_captions_point_into_the_document(bundles: dict[str, Bundle]) -> None:
    for slug, b in bundles.items():
        toc = b.toc
        assert toc.pages and len(toc.page_starts) == toc.pages, slug
        assert toc.page_starts == sorted(toc.page_starts) and toc.page_starts[0] == 1, slug
        for a in (*toc.figures, *toc.tables):
            text = b.text(a.line_start, a.line_end)
            assert a.label in text, (slug, a.id)
            assert a.caption[:30] in text, (slug, a.id)
            assert toc.page_of_line(a.line_start) == a.page, (slug, a.id)


def test_text_is_clean(bundles: dict[str, Bundle]) -> None:
    raft = bundles["raft"]
    assert raft.toc.title == "In Search of an Understandable Consensus Algorithm"
    assert raft.toc.year == 2013
    assert raft.toc.abstract.startswith("Raft is a consensus algorithm for managing a replicated")
    # De-hyphenated across line ends, ligatures expanded, no running page numbers.
    assert "understandability" in raft.markdown and "understandabil-" not in raft.markdown
    assert "ﬁ" not in raft.markdown
    assert not re.search(r"^\d{1,2}$", raft.markdown, re.MULTILINE)
    bigtable = bundles["bigtable"].toc
    rows = (bigtable.tables[1].csv or "").splitlines()
    assert "Personalized Search,4,47%,6,93,11,5%,Yes" in rows
    gfs = bundles["gfs"].toc
    assert gfs.authors[:3] == ["Sanjay Ghemawat", "Howard Gobioff", "Shun-Tak Leung"]
    assert [s.title for s in gfs.sections[1:5]] == [
        "ABSTRACT", "Categories and Subject Descriptors", "General Terms", "Keywords"]


def _outline(slug: str) -> list[tuple[int, str | None, str]]:
    bundle = convert_file(corpus_path("papers", f"{slug}.pdf"))
    return [(s.level, s.number, s.title) for s in bundle.toc.sections[1:]]


def test_outlines_beyond_the_dev_set_read_like_the_printed_paper() -> None:
    """Layouts outside the gold set: headings a reader sees, at the level a reader sees them."""
    # A numbered one-word heading is a section, not a theorem-style "Example" label.
    mapreduce = _outline("mapreduce")
    assert (2, "2.1", "Example") in mapreduce
    # Back matter set like section headings stays top-level after the last subsection.
    assert (1, None, "References") in mapreduce and (1, None, "Acknowledgements") in mapreduce
    assert (1, None, "References") in _outline("zookeeper")
    # A bold caption wrapping onto "24 hours. ..." is no section 24; 6.1-6.6 follow section 6.
    dynamo = _outline("dynamo")
    assert not any(n == "24" for _, n, _ in dynamo)
    assert {"6.1", "6.2", "6.3", "6.5", "6.6"} <= {n for _, n, _ in dynamo if n}
    # A publisher's download cover at the end adds no headings and no extra level above them.
    blat = _outline("blat")
    assert (1, None, "RESULTS") in blat and (1, None, "REFERENCES") in blat
    assert not any(t in ("License", "James Kent") for _, _, t in blat)
    # The title printed again after a reprint cover is not a section.
    assert [t for _, _, t in _outline("smith-waterman")] == ["REFERENCES"]
    # Headings in the family the paper sets "Methods" in, and a sub-heading right under one.
    illumina = [t for _, _, t in _outline("illumina-error-correction")]
    assert "Results and discussion" in illumina
    assert "Ability of EC tools to correct sequencing errors" in illumina


def _bundle(slug: str) -> Bundle:
    return convert_file(corpus_path("papers", f"{slug}.pdf"))


def _captions(slug: str) -> dict[str, str]:
    toc = _bundle(slug).toc
    return {a.label: a.caption for a in [*toc.figures, *toc.tables]}


def test_lines_and_captions_beyond_the_dev_set_read_whole() -> None:
    """Justified lines, side-by-side captions, centred caption titles and unlabelled
    abstracts, checked against what the printed page shows."""
    # A loose justified heading keeps its number and every word.
    assert (2, "6.4", "Client-driven or Server-driven Coordination") in _outline("dynamo")
    # Captions set side by side are each read whole, not interleaved row by row.
    wn = _captions("weight-normalization")
    assert wn["Figure 2"] == "Classification results on CIFAR-10 without data augmentation."
    assert "For weight normalization, batch normalization, and mean-only batch" in wn["Figure 1"]
    assert wn["Figure 5"].startswith("Evaluation scores for Space Invaders obtained by DQN")
    assert wn["Figure 6"].startswith("Maximum evaluation scores obtained by DQN")
    sasa = _captions("stand-alone-self-attention")
    assert sasa["Table 5"] == ("The effect of changing the positional encoding type for "
                               "attention. Accuracies computed on the validation set. Relative "
                               "encodings significantly outperform other strategies.")
    assert sasa["Table 6"] == ("The effect of removing the q>k interactions in attention. "
                               "Using just q>r interactions only drops accuracy by 0.5%.")
    assert sasa["Figure 1"].endswith("with spatial extent k = 3.")
    simclr = _captions("simclr-v2")
    assert simclr["Figure 1"] == ("Bigger models yield larger gains when fine-tuning with fewer "
                                  "labeled examples.")
    assert simclr["Figure 2"].startswith("Top-1 accuracy of previous state-of-the-art (SOTA) "
                                         "methods [1, 2] and our method (SimCLRv2)")
    # A bare label's title is centred under it, in another size.
    assert _captions("zab")["TABLE I"] == "SUMMARY OF PERSISTENT VARIABLES"
    assert _captions("blast")["Table 4"].startswith("The time and sensitivity of BLAST on DNA")
    # An abstract printed without a label: the distinct paragraph after the authors.
    euler = _bundle("eulerian-assembly").toc.abstract
    assert euler.startswith("For the last 20 years, fragment assembly in DNA sequencing")
    assert euler.endswith("uses them instead as a powerful fragment assembly tool.")
    assert _bundle("velvet").toc.abstract.startswith("We have developed a new set of algorithms")
    # Papers that open straight into body text (or with a short lede) get none invented.
    for slug in ("okapi-trec3", "smith-waterman", "hmm-primer", "de-bruijn-primer"):
        assert _bundle(slug).toc.abstract == "", slug
