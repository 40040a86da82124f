"""index, status, search, convert, toc and read: the library through `App`."""

from __future__ import annotations

import argparse
import json
import re
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from zocrates_nb.errors import UsageError

if TYPE_CHECKING:
    from zocrates_nb.app import App, SearchHit


def _json(data: Any) -> None:
    print(json.dumps(data, ensure_ascii=False, indent=1))


def _app(args: argparse.Namespace) -> App:
    from zocrates_nb.cli.client import open_local

    return open_local(args)


def index_command(args: argparse.Namespace) -> int:
    with _app(args) as app:
        report = app.index(
            zotero_dir=args.zotero_dir,
            zotero_local=args.zotero_local,
            zotero_web=args.zotero_web,
            group=args.group,
            folder=args.folder,
            sample=args.sample,
            progress=not args.json and sys.stderr.isatty(),  # a bar is for a person watching
        )
    if args.json:
        _json(report.to_json())
        return 0
    print(
        f"indexed {report.items} items ({report.attachments} attachments, {report.notes} "
        f"notes): {report.converted} converted, {report.reused} from cache, {report.unchanged} "
        f"unchanged, {report.removed} removed; {report.chunks} chunks in {report.seconds:.1f} s"
    )
    for line in report.repairs:
        print(f"  repaired {line}")
    for e in report.errors:
        print(f"  error   {e.get('item_key', '')} {e.get('file', '')}: {e.get('error', '')}")
    for w in report.warnings:
        print(f"  warning {w.get('item_key', '')} {w.get('file', '')}: {w.get('warning', '')}")
    for sk in report.skipped:
        print(f"  skipped {sk.get('item_key', '')} {sk.get('file', '')}: {sk.get('reason', '')}")
    return 0


def status_command(args: argparse.Namespace) -> int:
    with _app(args) as app:
        status = app.status()
        hint = "" if status.chunks else app.index_hint()
    if args.json:
        _json(status.model_dump(mode="json"))
        return 0
    for key, value in status:
        if key == "problems":
            for line in value:
                print(f"{'problem':>16}: {as_typed(line, args)}")
        elif key == "retractions":
            print(f"{'retractions':>16}: {value.message if value else 'not checked'}")
        else:
            print(f"{key:>16}: {value}")
    if hint:
        print(f"{'to index':>16}: {as_typed(hint, args)}")
    return 0


def not_indexed(app: App) -> UsageError:
    """The error a command that reads the index gives on a home with nothing indexed."""
    return UsageError(f"nothing is indexed in {app.home} yet: {app.index_hint()}")


def as_typed(text: str, args: argparse.Namespace) -> str:
    """A hint's `zocrates-nb …` commands as this user must type them: with the `--home` the
    command was given (the default home needs none)."""
    if not getattr(args, "home_flag", False):
        return text
    return re.sub(r"`zocrates-nb (?!--home)", f"`zocrates-nb --home {shlex.quote(str(args.home))} ",
                  text)  # fmt: skip


def search_command(args: argparse.Namespace) -> int:
    with _app(args) as app:
        if args.queries:
            return _batch_search(app, args)
        if not args.query:
            raise UsageError("give a QUERY (or --queries FILE.jsonl)")
        hits = app.search(args.query, items=args.items, collections=args.collection,
                          chunk_type=args.type, limit=args.limit)  # fmt: skip
        if not hits and not app.status().chunks:
            raise not_indexed(app)
    if args.json:
        _json([h.model_dump(mode="json") for h in hits])
        return 0
    if not hits:
        print("no results")
    for n, h in enumerate(hits, 1):
        print_hit(n, h)
    return 0


def print_hit(n: int, h: SearchHit) -> None:
    who = (h.authors[0] + (" et al." if len(h.authors) > 1 else "")) if h.authors else ""
    print(f"[{n}] {h.title} ({who}{', ' if who else ''}{h.year or 'n.d.'}) [{h.item_key}]")
    print(f"    § {h.section or h.chunk_type}  ·  {h.chunk_type}  ·  score {h.score:.4f}")
    snippet = " ".join(h.text.split())
    print(f"    {snippet[:300]}{'…' if len(snippet) > 300 else ''}")


def _batch_search(app: App, args: argparse.Namespace) -> int:
    """One JSON line per query line; a bad line gets `{"id", "error"}` (and a note on stderr)
    and the batch goes on. Exit status 1 when any line failed."""
    from zocrates_nb.app import describe_error

    if not Path(args.queries).is_file():
        raise UsageError(f"no such file: {args.queries}")
    failed = 0
    with open(args.queries, encoding="utf-8", errors="replace") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            line_id: Any = n
            try:
                q = json.loads(line)
                if not isinstance(q, dict):
                    raise UsageError('a line must be a JSON object with a "query"')
                line_id = q.get("id", n)
                if not isinstance(q.get("query"), str):
                    raise UsageError('the line has no "query" text')
                if not q["query"].strip():
                    raise UsageError("the query is empty")
                hits = app.search(q["query"], items=q.get("items"),
                                  collections=q.get("collections"), chunk_type=q.get("type"),
                                  limit=args.limit)  # fmt: skip
            except json.JSONDecodeError as e:
                message = f"not valid JSON (column {e.colno})"
            except Exception as e:  # reported for this line; the batch goes on
                message = describe_error(e, doing="This query")
            else:
                results = [h.model_dump(mode="json") for h in hits]
                print(json.dumps({"id": line_id, "results": results}, ensure_ascii=False))
                continue
            failed += 1
            print(json.dumps({"id": line_id, "error": message}, ensure_ascii=False), flush=True)
            print(f"zocrates-nb: {args.queries}:{n}: {message}", file=sys.stderr)
    return 1 if failed else 0


def convert_command(args: argparse.Namespace) -> int:
    with _app(args) as app:
        toc = app.convert(Path(args.file)).toc
    if args.json:
        _json({
            "title": toc.title, "authors": toc.authors, "year": toc.year, "abstract": toc.abstract,
            "sections": [
                {"id": s.id, "level": s.level, "number": s.number, "title": s.title, "page": s.page,
                 "line_start": s.line_start, "line_end": s.line_end, "words": s.words}
                for s in toc.sections
            ],
            "figures": [{"id": f.id, "label": f.label, "caption": f.caption, "page": f.page}
                        for f in toc.figures],
            "tables": [{"id": t.id, "label": t.label, "caption": t.caption, "page": t.page}
                       for t in toc.tables],
        })  # fmt: skip
        return 0
    print(f"{toc.title}\n{', '.join(toc.authors)}{' · ' if toc.authors else ''}{toc.year or ''}")
    for s in toc.sections:
        indent = "  " * max(s.level - 1, 0)
        num = f"{s.number} " if s.number else ""
        print(f"{indent}[{s.id}] {num}{s.title or 'Frontmatter'}  (p.{s.page}, {s.words} words)")
    for a in (*toc.figures, *toc.tables):
        print(f"[{a.id}] {a.label}: {a.caption[:80]}")
    return 0


def toc_command(args: argparse.Namespace) -> int:
    with _app(args) as app:
        result = app.toc(args.key)
    if args.json:
        _json(result.model_dump(mode="json"))
        return 0
    print(result.outline)
    if result.notice:
        print(result.notice)
    return 0


def read_command(args: argparse.Namespace) -> int:
    with _app(args) as app:
        result = app.read(args.key, args.asset_ids)
    if args.json:
        _json(result.model_dump(mode="json"))
        return 0
    print(f"# {result.title}")
    for asset in result.assets:
        page = f" (p. {asset.page})" if asset.page else ""
        print(f"\n## [{asset.asset_id}] {asset.heading}{page}\n")
        print(asset.text)
        if asset.csv:
            print("\n```csv\n" + asset.csv.rstrip() + "\n```")
    if result.notice:
        print("\n" + result.notice)
    return 0
