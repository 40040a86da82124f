"""Characters → styled text lines of one PDF page, read with PDFium (pypdfium2, Apache/BSD).

PDFium is an order of magnitude faster than pdfminer for per-character boxes and fonts,
which is what heading detection needs (size, weight, italics). Font facts are read once per
text object, not per character, to keep the cost near one FFI call per attribute and char.
"""

from __future__ import annotations

import ctypes
import math
import re
from dataclasses import dataclass, field
from functools import cached_property

import pypdfium2 as pdfium
import pypdfium2.raw as raw

# FPDFText_GetTextObject returning a bare address: a cheap per-character dictionary key.
_text_object = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int)(
    ctypes.cast(raw.FPDFText_GetTextObject, ctypes.c_void_p).value or 0
)
_BOLD_NAME = re.compile(
    r"bold|black|heavy|semibold|demi|cmbx|cmb10|\.b$|-b$|bd\d*$|-bd|medi", re.I
)
_ITALIC_NAME = re.compile(r"italic|oblique|cmti|cmsl|cmmi|-it$|ital|\.i$|-ital", re.I)
_FLAG_ITALIC = 1 << 6
# TeX's OT1 text encoding, seen in Type-3 fonts that carry no Unicode map.
OT1_LIGATURES = {11: "ff", 12: "fi", 13: "fl", 14: "ffi", 15: "ffl"}
_OT1_PUNCT = {"{": "–", "|": "—", "\\": "“", '"': "”"}
_FLAG_FORCE_BOLD = 1 << 18


@dataclass
class Span:
    """A run of characters in one style."""

    text: str
    size: float
    bold: bool
    italic: bool
    font: str
    x0: float
    x1: float
    weight: int = -1  # PDFium's weight guess: unreliable alone, useful against the body font
    # x extent of each whitespace-separated word of `text`, in order: lets layout cut a line
    # where two blocks set side by side meet (captions of neighbouring figures).
    words: list[list[float]] = field(default_factory=list)


@dataclass
class Line:
    """One visual text line (or one cell-like segment of it), top-down coordinates in points."""

    page: int  # 1-based
    x0: float
    top: float
    x1: float
    bottom: float
    spans: list[Span] = field(default_factory=list)
    invisible: bool = False  # OCR text layer (render mode 3)
    base: float = 0.0  # baseline of the first character
    col: int = 0  # column index on the page, -1 when the line spans columns (set by layout)
    rotated: bool = False  # text set at an angle (margin stamps such as arXiv ids)

    @cached_property
    def text(self) -> str:
        return "".join(s.text for s in self.spans).strip()

    def touch(self) -> None:
        """Forget cached text and size after the spans changed."""
        self.__dict__.pop("text", None)
        self.__dict__.pop("size", None)

    @cached_property
    def size(self) -> float:
        """The size most of the line's letters are set in."""
        weights: dict[float, int] = {}
        for s in self.spans:
            n = sum(1 for c in s.text if not c.isspace())
            weights[s.size] = weights.get(s.size, 0) + n
        return max(weights, key=lambda k: weights[k]) if weights else 0.0

    @property
    def bold(self) -> bool:
        """Every letter bold (a run-in bold lead followed by plain text is not)."""
        letters = [s for s in self.spans if any(c.isalpha() for c in s.text)]
        return bool(letters) and all(s.bold for s in letters)

    @property
    def italic(self) -> bool:
        letters = [s for s in self.spans if any(c.isalpha() for c in s.text)]
        return bool(letters) and all(s.italic for s in letters)

    @property
    def height(self) -> float:
        return self.bottom - self.top

    @property
    def width(self) -> float:
        return self.x1 - self.x0


@dataclass
class _ObjInfo:
    font: str
    size: float
    bold: bool
    italic: bool
    upright: bool
    invisible: bool
    weight: int = -1


def _obj_info(obj: raw.FPDF_PAGEOBJECT, tp: raw.FPDF_TEXTPAGE, k: int,
              fonts: dict[int, tuple[str, bool, bool, int]]) -> _ObjInfo:
    font = raw.FPDFTextObj_GetFont(obj)
    fkey = ctypes.cast(font, ctypes.c_void_p).value or 0
    if fkey not in fonts:
        name = ""
        if font:
            buf = ctypes.create_string_buffer(256)
            n = raw.FPDFFont_GetBaseFontName(font, buf, 256)
            name = buf.raw[: max(n - 1, 0)].decode("latin-1", "replace")
            flags = raw.FPDFFont_GetFlags(font)
            weight = raw.FPDFFont_GetWeight(font)
        else:
            flags, weight = 0, -1
        base = name.split("+", 1)[-1]
        bold = bool(flags & _FLAG_FORCE_BOLD) or bool(_BOLD_NAME.search(base))
        italic = bool(flags & _FLAG_ITALIC) or bool(_ITALIC_NAME.search(base))
        fonts[fkey] = (base, bold, italic, weight)
    base, bold, italic, weight = fonts[fkey]
    matrix = raw.FS_MATRIX()
    raw.FPDFText_GetMatrix(tp, k, ctypes.byref(matrix))
    scale = math.sqrt(abs(matrix.a * matrix.d - matrix.b * matrix.c)) or 1.0
    size = raw.FPDFText_GetFontSize(tp, k) * scale
    if size < 3:
        size = 0.0  # Type-3 font: the em hides in the font matrix; measured per line later
    angle = raw.FPDFText_GetCharAngle(tp, k)
    upright = angle < 0.05 or abs(angle - 2 * math.pi) < 0.05
    invisible = raw.FPDFTextObj_GetTextRenderMode(obj) == 3
    return _ObjInfo(base, round(size, 1), bold, italic, upright, invisible, weight)


def page_lines(page: pdfium.PdfPage, page_no: int, max_chars: int = 60_000) -> list[Line]:
    """Styled lines of a page in content-stream order (reading order is decided later).

    Pages with more than `max_chars` characters are cut there: such pages are vector art
    or broken streams, and reading them whole could stall a batch.
    """
    height = page.get_height()
    textpage = page.get_textpage()
    tp = textpage.raw
    try:
        return _lines(tp, page_no, height, max_chars)
    finally:
        textpage.close()


def _lines(tp: raw.FPDF_TEXTPAGE, page_no: int, height: float, max_chars: int) -> list[Line]:
    n = min(raw.FPDFText_CountChars(tp), max_chars)
    rect = raw.FS_RECTF()
    prect = ctypes.byref(rect)
    get_unicode, get_box = raw.FPDFText_GetUnicode, raw.FPDFText_GetLooseCharBox
    is_generated = raw.FPDFText_IsGenerated
    fonts: dict[int, tuple[str, bool, bool, int]] = {}
    infos: dict[int, _ObjInfo] = {}
    lines: list[Line] = []
    cur: Line | None = None
    span: Span | None = None
    chars: list[str] = []  # text of the open span (joined once, when it closes)
    span_info: _ObjInfo | None = None
    last_x1 = 0.0
    last_base = 0.0
    line_size = 0.0
    type3: dict[int, float] = {}
    rotated: list[str] = []
    ox, oy = ctypes.c_double(), ctypes.c_double()
    pox, poy = ctypes.byref(ox), ctypes.byref(oy)
    space = 0  # 0 none, 1 generated by PDFium (trusted only with a visible gap), 2 in the PDF

    def close_span() -> None:
        if span is not None:
            span.text = "".join(chars)
        chars.clear()

    for k in range(n):
        u = get_unicode(tp, k)
        if u in (10, 13) and (u == 10 or is_generated(tp, k) != 0):
            close_span()
            cur, span, space = None, None, 0
            continue
        if u < 32 and u in OT1_LIGATURES:
            ch = OT1_LIGATURES[u]  # TeX fonts without a ToUnicode map keep OT1 codes
        else:
            ch = "-" if u in (2, 0xFFFE, 0xAD) else chr(u) if 0 < u < 0x110000 else ""
        if not ch or ch.isspace():
            space = max(space, 1 if is_generated(tp, k) == 1 else 2)
            continue
        okey = _text_object(tp, k) or 0
        info = infos.get(okey)
        if info is None:
            obj = ctypes.cast(okey, raw.FPDF_PAGEOBJECT) if okey else None
            info = (_obj_info(obj, tp, k, fonts) if obj
                    else _ObjInfo("", 0.0, False, False, True, False))
            infos[okey] = info
        if not info.upright:
            rotated.append(ch)
            continue
        get_box(tp, k, prect)
        x0, x1 = rect.left, rect.right
        top, bottom = height - rect.top, height - rect.bottom
        if info.size:
            size = info.size
            base = bottom  # the loose box sits on the font's descender line
        else:
            if ch in _OT1_PUNCT:
                ch = _OT1_PUNCT[ch]
            raw.FPDFText_GetCharOrigin(tp, k, pox, poy)
            base = height - oy.value
            # Type-3 glyph boxes are tight: letters reach ~0.7 em above the baseline.
            size = (base - top) / 0.7
        em = size if size > 4.0 else 4.0
        if cur is not None:
            gap = x0 - last_x1
            if gap < -em or gap > 1.8 * em or abs(base - last_base) > 0.9 * em:
                close_span()
                cur, span = None, None
            elif gap > em and not info.invisible:  # OCR word gaps are unreliable
                space = 3  # a wide gap: two spaces keep names and cells apart
            elif gap > 0.25 * em or space == 2 or (space == 1 and gap > 0.1 * em):
                space = 2
            else:
                space = 0
        if cur is None:
            cur = Line(page_no, x0, top, x1, bottom, invisible=info.invisible, base=base)
            lines.append(cur)
            line_size = size
            span = None
            space = 0
        if span is None or (span_info is not info and (
            span_info is None
            or (span_info.font, span_info.size, span_info.bold, span_info.italic)
            != (info.font, info.size, info.bold, info.italic)
        )):
            close_span()
            span = Span("", info.size, info.bold, info.italic, info.font, x0, x1, info.weight)
            cur.spans.append(span)
            span_info = info
        if space or not chars:
            if space:
                chars.append("  " if space == 3 else " ")
            space = 0
            span.words.append([x0, x1])
        elif x1 > span.words[-1][1]:
            span.words[-1][1] = x1
        chars.append(ch)
        if x1 > span.x1:
            span.x1 = x1
        if x0 < cur.x0:
            cur.x0 = x0
        if x1 > cur.x1:
            cur.x1 = x1
        if not info.size and ch.isalnum():
            type3[id(cur)] = max(type3.get(id(cur), 0.0), size)
        if size >= 0.7 * line_size:
            if top < cur.top:
                cur.top = top
            if bottom > cur.bottom:
                cur.bottom = bottom
        last_x1 = x1
        last_base = base
    close_span()
    for ln in lines:
        if id(ln) in type3:
            for sp in ln.spans:
                if not sp.size:
                    sp.size = round(type3[id(ln)], 1)
    out = [ln for ln in lines if ln.text]
    if rotated:
        stamp = Span("".join(rotated), 0, False, False, "", 0, 0)
        out.append(Line(page_no, 0, 0, 0, 0, [stamp], rotated=True))
    return out


Box = tuple[float, float, float, float]  # x0, top, x1, bottom (top-down)


@dataclass
class Graphics:
    """Where a page draws pictures: text inside them is figure text, not headings or prose."""

    regions: list[Box] = field(default_factory=list)  # images and embedded forms
    frames: list[Box] = field(default_factory=list)  # small closed shapes (diagram boxes)
    strokes: list[Box] = field(default_factory=list)  # small paths (lines, arrows, ticks)

    def contains(self, ln: Line) -> bool:
        cx, cy = (ln.x0 + ln.x1) / 2, (ln.top + ln.bottom) / 2
        for x0, t, x1, b in self.regions:
            if x0 - 2 <= cx <= x1 + 2 and t - 2 <= cy <= b + 2:
                return True
        for x0, t, x1, b in self.frames:
            if x0 - 1 <= ln.x0 and ln.x1 <= x1 + 1 and t - 1 <= ln.top and ln.bottom <= b + 1:
                return True
        pad = 0.6 * max(ln.size, 4.0)
        lx0, lt, lx1, lb = ln.x0 - pad, ln.top - pad, ln.x1 + pad, ln.bottom + pad
        near = 0
        for x0, t, x1, b in self.strokes:
            if x0 < lx1 and x1 > lx0 and t < lb and b > lt:
                near += 1
                if near >= 4:
                    return True
        return False


def page_graphics(page: pdfium.PdfPage, limit: int = 20_000) -> Graphics:
    """Bounding boxes of the page's images, forms and small vector shapes."""
    width, height = page.get_width(), page.get_height()
    area = width * height
    g = Graphics()
    n = min(raw.FPDFPage_CountObjects(page.raw), limit)
    left, bottom, right, top = (ctypes.c_float() for _ in range(4))
    refs = [ctypes.byref(v) for v in (left, bottom, right, top)]
    for k in range(n):
        obj = raw.FPDFPage_GetObject(page.raw, k)
        kind = raw.FPDFPageObj_GetType(obj)
        if kind not in (raw.FPDF_PAGEOBJ_IMAGE, raw.FPDF_PAGEOBJ_FORM, raw.FPDF_PAGEOBJ_PATH):
            continue
        if not raw.FPDFPageObj_GetBounds(obj, *refs):
            continue
        box = (left.value, height - top.value, right.value, height - bottom.value)
        w, h = box[2] - box[0], box[3] - box[1]
        if kind == raw.FPDF_PAGEOBJ_PATH:
            if w * h < 0.02 * area:
                g.strokes.append(box)
            if 200 < w * h < 0.08 * area and 15 < w < 0.45 * width and h > 8:
                g.frames.append(box)
        elif w > 20 and h > 20 and w * h < 0.6 * area:
            g.regions.append(box)
    return g
