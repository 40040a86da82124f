"""Document-wide typography: the body style, line spacing and font families.

Headings are recognised by how they differ from body text, so the body style is measured
first: the size most characters are set in, its font family and whether it is bold.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from statistics import median

from zocrates_nb.ingest.pdf_chars import Line, Span
from zocrates_nb.ingest.pdf_layout import PageLines


def family(font: str) -> str:
    """Font family without style suffixes: "Times-Bold~24" → "times", "CMBX12" → "cm"."""
    name = font.split("~")[0].split(",")[0]
    if re.match(r"^(?:CM|LM|SF)[A-Z]", name):
        return name[:2].lower()
    name = re.split(r"[-_]", name)[0]
    name = re.sub(r"(?i)(bold|italic|oblique|regular|roman|medium|semibold|light|mt|ps)+$", "",
                  name)
    return name.lower()


@dataclass
class BodyStyle:
    size: float
    family: str
    bold: bool
    italic: bool
    weight: int
    leading: float  # baseline-to-baseline distance of body lines
    line_width: float = 0.0  # typical width of a full body line (one column)
    ocr: bool = False  # an invisible OCR text layer: its type sizes are only estimates

    def heavy(self, span: Span) -> bool:
        """Bold by name, or clearly heavier than the body font by PDFium's weight."""
        if span.bold:
            return True
        return span.weight >= 650 and self.weight > 0 and span.weight - self.weight >= 250


def measure_body(pages: list[PageLines]) -> BodyStyle:
    sizes: Counter[float] = Counter()
    fams: Counter[str] = Counter()
    bold = 0
    italic = 0
    weights: Counter[int] = Counter()
    total = 0
    invisible = 0
    for p in pages:
        for ln in p.lines:
            for s in ln.spans:
                n = len(s.text)
                sizes[round(s.size * 2) / 2] += n
                invisible += n if ln.invisible else 0
    size = sizes.most_common(1)[0][0] if sizes else 10.0
    leads: list[float] = []
    widths: list[float] = []
    for p in pages:
        prev: Line | None = None
        for ln in p.lines:
            for s in ln.spans:
                if abs(s.size - size) <= 0.5:
                    n = len(s.text)
                    fams[family(s.font)] += n
                    weights[s.weight] += n
                    bold += n if s.bold else 0
                    italic += n if s.italic else 0
                    total += n
            if abs(ln.size - size) <= 0.5 and len(ln.text) > 20:
                widths.append(ln.width)
            if (
                prev is not None
                and abs(ln.size - size) <= 0.5
                and abs(prev.size - size) <= 0.5
                and abs(ln.x0 - prev.x0) < 3 * size
            ):
                d = ln.bottom - prev.bottom
                if 0.9 * size < d < 2.2 * size:
                    leads.append(d)
            prev = ln
    return BodyStyle(
        size=size,
        family=fams.most_common(1)[0][0] if fams else "",
        bold=total > 0 and bold > 0.6 * total,
        italic=total > 0 and italic > 0.6 * total,
        weight=weights.most_common(1)[0][0] if weights else -1,
        leading=median(leads) if leads else 1.2 * size,
        line_width=sorted(widths)[int(0.75 * len(widths))] if widths else 40 * size,
        ocr=invisible > 0.5 * sum(sizes.values()),
    )
