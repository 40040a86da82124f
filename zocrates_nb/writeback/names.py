"""Creators as Zotero keeps them: a person as family and given names (particles such as "van
der" with the family name, a suffix after the given names as Zotero's importers keep it:
"Martin Luther, Jr."), a name written family-first kept that way, an organisation as one
field. `nameparser` splits Western names; what it cannot know (an organisation, a name in
a family-first order) is decided here, from the name's script and its words."""

from __future__ import annotations

import re
from typing import Any

from nameparser import HumanName

# Words that make a name an organisation's (matched whole, any case).
ORGANISATION_WORDS = frozenset(
    """
academy administration agency alliance association authority board bureau center centre
collaboration college commission committee company consortium cooperation corporation council
department division federation forum foundation group gmbh hospital inc initiative institut
institute institution international laboratories laboratory league llc ltd ministry network
office organisation organization partnership program programme project school secretariat
service services society survey team trust union university working
""".split()  # noqa: SIM905 (a word list reads best as words)
)
# Scripts whose names are written family name first (Han, kana, Hangul).
_FAMILY_FIRST_SCRIPT = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")
# The most common Chinese family names in pinyin: "Zhang Wei" is family-first when its first
# word is one of them and its second is not (a given name such as "Wei" then).
CHINESE_FAMILY_NAMES = frozenset(
    """
wang li zhang liu chen yang huang zhao wu zhou xu sun ma zhu hu guo he gao lin luo zheng liang
""".split()  # noqa: SIM905 (a word list reads best as words)
)
KOREAN_FAMILY_NAMES = frozenset(("kim", "lee", "park", "choi", "jung", "kang", "cho", "yoon",
                                 "jang", "lim", "han", "oh", "seo", "shin", "kwon", "hwang"))
_PINYIN = re.compile(
    r"^(?:(?:zh|ch|sh|[bpmfdtnlgkhjqxrzcsyw])?"
    r"(?:iang|iong|uang|ueng|ang|eng|ing|ong|ian|iao|uai|uan|ai|ei|ao|ou|an|en|er|ia|ie|in|iu"
    r"|ua|uo|ui|un|ue|a|o|e|i|u|v)'?)+$"
)
_CAPS_FAMILY = re.compile(r"^[A-Z][A-Z'-]+$")  # "ZHANG Wei", "KIM Min-jun": family in capitals


def is_organisation(name: str) -> bool:
    words = re.findall(r"[^\W\d_]+", name.casefold())
    return len(words) > 1 and any(w in ORGANISATION_WORDS for w in words)


def creator(name: str, creator_type: str = "author") -> dict[str, Any]:
    """Zotero's creator for a name as a source wrote it ("Given Family", "Family, Given", a
    family-first name, an organisation)."""
    name = " ".join(name.split())
    single = {"creatorType": creator_type, "name": name}
    if not name:
        return single
    if is_organisation(name):
        return single
    words = name.split(" ")
    if _FAMILY_FIRST_SCRIPT.search(name):
        if len(words) == 1:  # "张伟": Zotero's importers keep an unspaced name whole
            return single
        return _person(words[0], " ".join(words[1:]), creator_type)
    if "," not in name and len(words) == 2 and _family_first(*words):
        return _person(words[0].title() if words[0].isupper() else words[0], words[1],
                       creator_type)  # fmt: skip
    parsed = HumanName(name)
    last = parsed.last or ""
    first = " ".join(p for p in (parsed.first, parsed.middle) if p)
    if not last or (not first and len(words) == 1):
        return single
    if parsed.suffix:
        first = f"{first}, {parsed.suffix}" if first else parsed.suffix
    if parsed.title and not first:
        first = parsed.title
    return _person(last, first, creator_type)


def _family_first(first: str, second: str) -> bool:
    # "ZHANG Wei", "KIM Min-jun": a family name in capitals first (not initials: "JA Smith").
    if _CAPS_FAMILY.match(first) and not second.isupper() and (
            len(first) > 3 or first.lower() in CHINESE_FAMILY_NAMES | KOREAN_FAMILY_NAMES):
        return True
    if re.fullmatch(r"[A-Z]{1,3}", second) and not first.isupper():  # "Smith JA": initials
        return True
    a, b = first.lower(), second.lower().replace("-", "")
    return a in CHINESE_FAMILY_NAMES and b not in CHINESE_FAMILY_NAMES and bool(_PINYIN.match(b))


def _person(last: str, first: str, creator_type: str) -> dict[str, Any]:
    out: dict[str, Any] = {"creatorType": creator_type, "lastName": last}
    if first:
        out["firstName"] = first
    else:
        return {"creatorType": creator_type, "name": last}
    return out


def family_given(c: dict[str, Any]) -> tuple[str, str, str]:
    """(family, given, suffix) of a creator; a one-field creator as (name, "", "")."""
    if "lastName" not in c:
        return str(c.get("name", "")), "", ""
    first = str(c.get("firstName", ""))
    given, _, suffix = first.partition(", ")
    return str(c["lastName"]), given, suffix
