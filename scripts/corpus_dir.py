"""Where the evaluation scripts find the test corpus: `--corpus DIR`, else $ZOCRATES_TEST_CORPUS,
else ../shared/corpus beside the repository (the rule tests/conftest.py follows)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

ENV = "ZOCRATES_TEST_CORPUS"
DEFAULT = Path(
    os.environ.get(ENV) or Path(__file__).resolve().parents[1].parent / "shared" / "corpus"
)


def add_corpus_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--corpus", type=Path, default=DEFAULT,
        help=f"the test corpus folder (default: ${ENV}, else ../shared/corpus): {DEFAULT}",
    )
