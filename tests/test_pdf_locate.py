"""Finding a quote again in its PDF's characters: the folded form both sides compare in."""

from __future__ import annotations

from zocrates_nb.ingest.pdf_locate import loose


def test_a_line_break_is_no_ligature_and_a_lone_ot1_code_is() -> None:
    """PDFium ends a line inside a highlight's rectangle (a subscript's) with "\\r\\n": its
    carriage return was folded as TeX's OT1 "fl" (code 13), and the highlight of "… Hist i
    objID for any predecessor …" no longer matched its own PDF text. A lone code 13 between
    letters, from a TeX font without a Unicode map, is still "fl"."""
    assert loose("appear in Hist i\r\nobjID for any") == "appearinhistiobjidforany"
    assert loose("re\x0dect the \x0cnal") == "reflectthefinal"
