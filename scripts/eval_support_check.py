"""How often the second citation check (the engine's own support score) would overrule a
verifier model that accepts, on the dev questions.

Each dev question's gold answer is split into sentences: the claims a model would write. Each
is checked, as `support_check.second_check` does, against the question's gold passages (found
in the index by their evidence phrase); a claim counts as kept when one of them supports it.
Gold claims stand for citations a verifier model rightly accepts: an overruled one is a
disagreement (a true claim flagged). Claims of another question's answer against this
question's passages stand for invented ones a verifier wrongly accepted: the share overruled
is what the second check catches.

    .venv/bin/python scripts/eval_support_check.py --home DIR [--corpus DIR] [-v]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from corpus_dir import add_corpus_argument


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--home", type=Path, required=True)
    add_corpus_argument(ap)
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()

    from zocrates_nb.agents.offline import SentenceEmbeddings
    from zocrates_nb.agents.support_check import FLOOR, NOVEL, supported
    from zocrates_nb.agents.verifier import best_windows
    from zocrates_nb.app import App
    from zocrates_nb.text import split_sentences

    app = App.open(args.home)
    emb = SentenceEmbeddings()
    questions = []
    for name in ("questions-dev.jsonl", "questions-compound-dev.jsonl"):
        for line in (Path(args.corpus) / name).read_text("utf-8").splitlines():
            q = json.loads(line)
            if q.get("answer") and q.get("gold"):
                questions.append(q)

    def loose(s: str) -> str:
        return re.sub(r"[^a-z0-9]+", "", s.lower())

    def passages(q: dict) -> list[str]:
        out = []
        for g in q["gold"]:
            hits = app.search(g["evidence"], limit=8)
            hit = next((h for h in hits if loose(g["evidence"]) in loose(h.text)), None)
            if hit is not None:
                out.append(hit.text)
        return out

    def kept(claim: str, texts: list[str]) -> bool:
        """As a sentence citing all the question's gold passages is checked: together."""
        return supported(emb, claim, [best_windows(claim, t) for t in texts]) >= FLOOR

    # Sentences a model would not cite: a yes, a part the library cannot answer.
    meta = re.compile(r"^(yes|no)\b|not answer|none of|does not|is not in", re.I)

    found = [(q, passages(q)) for q in questions]
    found = [(q, ps) for q, ps in found if ps]
    true_n = true_flagged = false_n = false_caught = meta_n = meta_flagged = 0
    for i, (q, ps) in enumerate(found):
        for claim in split_sentences(q["answer"]):
            if meta.search(claim):
                meta_n += 1
                meta_flagged += not kept(claim, ps)
                continue
            true_n += 1
            if not kept(claim, ps):
                true_flagged += 1
                if args.verbose:
                    print(f"flagged true  {q['id']}: {claim[:100]}", file=sys.stderr)
        other = found[(i + 7) % len(found)][0]
        for claim in split_sentences(other["answer"]):
            false_n += 1
            if not kept(claim, ps):
                false_caught += 1
            elif args.verbose:
                print(f"kept invented {q['id']}: {claim[:100]}", file=sys.stderr)
    print(
        json.dumps(
            {
                "questions": len(found),
                "true_claims": true_n,
                "true_flagged": true_flagged,
                "disagreement_on_true": round(true_flagged / max(1, true_n), 3),
                "uncited_sentences": meta_n,
                "uncited_flagged": meta_flagged,
                "invented_claims": false_n,
                "invented_caught": false_caught,
                "catch_rate": round(false_caught / max(1, false_n), 3),
                "floor": FLOOR,
                "novel": NOVEL,
            },
            indent=1,
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
