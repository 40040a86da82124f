"""Chroma imported without the one dependency a search never uses: jsonschema's optional IRI
grammar (`rfc3987_syntax`), which compiles a Lark parser at import (≈ 1.4 s of a fresh `ask`
process's 2 s of chromadb). Chroma validates embedding-function configs with jsonschema but
no schema of ours has an "iri" format, so nothing checks one.

Called when the index package is first imported. Only a process that has not imported
jsonschema yet is spared the grammar; a process that has (a Jupyter server validates its event
schemas with it) keeps jsonschema as it was.
"""

from __future__ import annotations

import sys


def spare_iri_grammar() -> None:
    """Keep jsonschema (imported next, by chromadb) from loading the IRI grammar: it then
    skips the "iri" format checks, as it does wherever that optional package is missing."""
    if "jsonschema" not in sys.modules and "rfc3987_syntax" not in sys.modules:
        sys.modules["rfc3987_syntax"] = None  # type: ignore[assignment]


__all__ = ["spare_iri_grammar"]
