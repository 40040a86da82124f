"""Benchmarks (`zocrates-nb bench <what>`): one module per measured surface, targets here."""

from __future__ import annotations

import argparse
from importlib import import_module
from typing import Any

# `bench <what>` → the module that measures it; each has `run(args) -> dict`.
MODULES = {
    "index": "index",
    "search": "index",
    "beir": "retrieval",
    "tokens": "retrieval",
    "ui": "ui",
    "scale": "scale",
    "server": "server",
    "offline": "offline",
}


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Run the benchmark `args.what` names (imported lazily: each pulls in its own heavy parts)."""
    module = import_module(f"{__name__}.{MODULES.get(args.what, 'index')}")
    result: dict[str, Any] = module.run(args)
    return result
