"""Which sentences of a paper are evidence: whole prose sentences, not a roadmap of the
paper, a reference list's entry, a caption stub, a figure's labels or a formula."""

from __future__ import annotations

import re

# Sentences about the paper rather than its subject: a roadmap ("In Section 3 we explain …",
# "The rest of the paper …"), a pointer to where something is said. Not evidence.
_ROADMAP_RE = re.compile(
    r"\b(?:in|see) (?:section|sec\.|§|chapter|appendix)\s*[A-Z]?\d|"
    r"\b(?:this|next|following|previous|preceding|last) (?:section|subsection|chapter)\b|"
    r"(?:^|[,;:] |\b(?:and|while|then) )(?:section|chapter|appendix)s? [A-Z]?\d[\d.]*(?: and \d+)?"
    r" (?:\w+ly )?(?:[a-z]{3,}s|describe|present|give|discuss|show|cover|explain|review)\b|"
    r"\b(?:rest|remainder) of (?:this|the) (?:paper|article|section)\b|"
    r"\bas (?:previously |already |briefly )?(?:mentioned|noted|described|discussed|explained)"
    r" (?:above|earlier|before|in|\()|\((?:see )?(?:§|sections?|sec\.)\s*\d|"
    r"^(?:see also|cf\.)\s|"  # a pointer to elsewhere ("See also arXiv:1706.03762.")
    r"^(?:we|this paper|here we|in this paper,? we) (?:first |then |next |now |briefly )?"
    r"(?:describe|present|discuss|review|introduce|outline|explain|summari[sz]e|turn to)\b",
    re.I,
)
_CLOSED_RE = re.compile(r"[.!?][\"'”’)\]]*$")
# The labels of a figure's panels run together as one "sentence": "(a) The 2nd and 3rd principal
# (b) Deviation of the network function (c) …" (a list in prose puts a comma or a semicolon
# between its items).
_PANELS_RE = re.compile(r"^\(a\)\s[^,;.:]+\s\(b\)\s")
_REPEAT_RE = re.compile(r"\b(\w+)\s+\1\b", re.I)
_FILLER_RE = re.compile(
    r"(as follows[.:]?$|^(in|the) (this|next|following|remainder of this) (section|paper)|"
    r"^(table|figure|fig\.)\s*\d+\s*[:.]|\*\*|^this paper is organi[sz]ed)",
    re.I,
)
# Words no English sentence ends on. A preposition, a pronoun or a verb may ("… the client is
# connected to.", "… they just are.", "… explore this."): over the corpus's bundles those end 64
# whole sentences and one cut one, so they are no sign of a cut.
_DANGLING_TEXT = "a an the and or but as its their our which whose"
_DANGLING = frozenset(_DANGLING_TEXT.split())


# An entry of a reference list under another heading (a primer's numbered references at the
# end of its last section): "1. Rabiner, L.R. A tutorial …", "Durbin, R., Eddy, S.R. & …".
_AUTHOR_RE = re.compile(r"\b[A-Z][A-Za-z'’-]+,\s(?:[A-Z]\.\s?-?){1,3}")
_ENTRY_RE = re.compile(r"^(?:\[\d{1,3}\]|\d{1,3}\.)\s+[A-Z][A-Za-z'’-]+,\s(?:[A-Z]\.\s?){1,3}")


def is_reference(sentence: str) -> bool:
    """A sentence that is an entry of a reference list, not what the paper says."""
    return bool(_ENTRY_RE.match(sentence)) or len(_AUTHOR_RE.findall(sentence)) >= 2


def is_roadmap(sentence: str) -> bool:
    """A sentence about where the paper says things ("In Section 3 we explain …")."""
    return bool(_ROADMAP_RE.search(sentence))


def is_prose(sentence: str) -> bool:
    """A whole sentence worth quoting: it ends as a sentence ends (not cut at a page break or
    a passage's edge), has enough words, mostly letters; not a caption stub, the text of a
    figure's labels ("encoder encoder encoder"), a formula, a rhetorical question or a
    signpost ("The paper is organized as follows.")."""
    s = sentence.strip()
    if s.endswith(("?", ":")) or _FILLER_RE.search(s) or not _CLOSED_RE.search(s):
        return False
    if is_reference(s) or _PANELS_RE.search(s):
        return False
    if _REPEAT_RE.search(re.sub(r"\d[\d.,]*", " ", s)):
        return False
    ws = sentence.split()
    if len(ws) < 6 or len(ws) > 90:
        return False
    # Digits count with letters: "We set K = 65536 and m = 0.999." states a setting; a formula
    # or a figure's axis is mostly symbols, and a table row fails the word test below.
    if sum(c.isalnum() for c in sentence) < 0.6 * len(sentence.replace(" ", "")):
        return False
    # Words among the tokens that are not numbers or operators ("K = 65536" is a word and a
    # value); a table row or a formula has too few of them at all.
    alpha_words = [w for w in ws if re.fullmatch(r"[A-Za-z][A-Za-z'’-]*[,.;:]?", w)]
    valued = [w for w in ws if not re.fullmatch(r"[=<>≈×~+−-]|[(\[]?[\d.,%]+[)\]]?[,.;:]?", w)]
    if len(alpha_words) < max(0.6 * len(valued), 0.4 * len(ws), 4):
        return False
    # A sentence cut at a page or column break ends on a word no sentence ends on ("… and
    # the."); a capital is a label or a symbol ("… in Appendix A).", "… of AT."), not an article.
    last = ws[-1].rstrip(".!?:;,\"')”’")
    # A sentence begins with a word, a number or an opening quote or bracket; one that begins
    # with a clause's punctuation ("; and the commit timestamp …") is the tail of a formula's.
    opens = s[:1].isalnum() or s[:1] in "\"'“‘([¶§"
    return last not in _DANGLING and not sentence[:1].islower() and opens


__all__ = ["is_prose", "is_reference", "is_roadmap"]
