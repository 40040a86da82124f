"""`zocrates-nb toc` and `zocrates-nb read`: the agent's document tools, for a person.

Both run with a fresh run state at library scope, so they show exactly what the search agent
would get (outline text, asset texts, notices).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from zocrates_nb.config import load_settings


def _toolkit(args: argparse.Namespace) -> Any:
    from zocrates_nb.index import Index
    from zocrates_nb.retrieval.state import RunState
    from zocrates_nb.retrieval.tools import Toolkit

    settings = load_settings(args.home)
    index = Index.open(args.home, settings)
    return index, Toolkit(index, RunState.new(settings.retrieval))


def _fail(result: dict[str, Any]) -> int:
    from zocrates_nb.cli import CliError

    raise CliError(str(result.get("message") or result.get("status")))


def toc_command(args: argparse.Namespace) -> int:
    index, kit = _toolkit(args)
    try:
        result = kit.document_toc(args.key)
    finally:
        index.close()
    if result.get("status") != "success":
        return _fail(result)
    if args.json:
        print(json.dumps(result, ensure_ascii=False, indent=1))
        return 0
    print(result["outline"])
    if result.get("notice"):
        print(result["notice"])
    return 0


def read_command(args: argparse.Namespace) -> int:
    index, kit = _toolkit(args)
    try:
        result = kit.read_document(args.key, list(args.asset_ids))
    finally:
        index.close()
    if result.get("status") != "success":
        return _fail(result)
    if args.json:
        print(json.dumps(result, ensure_ascii=False, indent=1))
        return 0
    print(f"# {result['title']}")
    for asset in result["assets"]:
        page = f" (p. {asset['page']})" if asset.get("page") else ""
        print(f"\n## [{asset['asset_id']}] {asset['heading']}{page}\n")
        print(asset["text"])
        if asset.get("csv"):
            print("\n```csv\n" + asset["csv"].rstrip() + "\n```")
    if result.get("notice"):
        print("\n" + result["notice"])
    return 0
