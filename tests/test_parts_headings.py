"""A compound question's part headings: each part's name, with its aspect only where that
is a clean span of the question."""

from __future__ import annotations

from zocrates_nb.agents.parts import decompose
from zocrates_nb.index.names import Catalogue, CatalogueItem


def test_a_comparison_heading_leaves_out_what_names_the_last_system() -> None:
    """ "… versus Kleinberg's hubs/authorities method: where does …": the possessive phrase
    belongs to the last name, and "for each of them" asks nothing of either."""
    cat = Catalogue(
        [
            CatalogueItem("PR", "The PageRank Citation Ranking: Bringing Order to the Web",
                          ("L. Page", "S. Brin")),
            CatalogueItem("HITS", "Authoritative Sources in a Hyperlinked Environment",
                          ("J. Kleinberg",)),
        ]
    )  # fmt: skip
    q = (
        "Page and Brin's PageRank versus Kleinberg's hubs/authorities method: where does the "
        "user's query come in for each of them?"
    )
    parts = decompose(q, cat)
    assert [p.items for p in parts] == [["PR"], ["HITS"]]
    for p in parts:
        assert "hubs/authorities" not in p.heading and "each of them" not in p.heading
        assert "where does the user's query" in p.heading
