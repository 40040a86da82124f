"""The `zocrates-nb` command line."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from zocrates_nb.config import ConfigError, default_home, load_settings


class CliError(Exception):
    """A user-facing error: printed as one line, exit status 2."""


def _print_json(data: Any) -> None:
    print(json.dumps(data, ensure_ascii=False, indent=1))


def _open_index(args: argparse.Namespace) -> Any:
    from zocrates_nb.index import Index

    home: Path = args.home
    settings = load_settings(home)
    return Index.open(home, settings)


def _library_from_args(args: argparse.Namespace) -> Any:
    from zocrates_nb.library import open_library

    if args.sample:
        from zocrates_nb import sample

        folder = sample.build(args.home / "sample-library")
        return open_library(folder=folder)
    return open_library(
        zotero_dir=args.zotero_dir,
        zotero_local=args.zotero_local,
        zotero_web=args.zotero_web,
        group=args.group,
        folder=args.folder,
        download_dir=args.home / "downloads",
    )


def cmd_index(args: argparse.Namespace) -> int:
    from zocrates_nb.index import index_library

    sources = [args.zotero_dir, args.zotero_local or None, args.zotero_web, args.folder,
               args.sample or None]
    if sum(s is not None for s in sources) > 1:
        raise CliError("give one library source: --zotero-dir, --zotero-local, --zotero-web, "
                       "--folder or --sample")
    library = _library_from_args(args)
    settings = load_settings(args.home)
    index = _open_index(args)
    try:
        report = index_library(
            library, index, progress=not args.json, max_pages=settings.index.max_pages
        )
    finally:
        index.close()
    if args.json:
        _print_json(report.to_json())
    else:
        print(_report_text(report))
    return 0


def _report_text(report: Any) -> str:
    """A human summary of an IndexReport, one line per problem document."""
    lines = [
        f"indexed {report.items} items ({report.attachments} attachments, {report.notes} notes): "
        f"{report.converted} converted, {report.reused} from cache, {report.unchanged} unchanged, "
        f"{report.removed} removed; {report.chunks} chunks in {report.seconds:.1f} s"
    ]
    for e in report.errors:
        lines.append(f"  error   {e.get('item_key', '')} {e.get('file', '')}: {e.get('error', '')}")
    for sk in report.skipped:
        key, file, reason = sk.get("item_key", ""), sk.get("file", ""), sk.get("reason", "")
        lines.append(f"  skipped {key} {file}: {reason}")
    return "\n".join(lines)


def cmd_status(args: argparse.Namespace) -> int:
    index = _open_index(args)
    try:
        status = index.status()
    finally:
        index.close()
    if args.json:
        _print_json(status)
    else:
        for key, value in status.items():
            print(f"{key:>16}: {value}")
    return 0


def _filter(index: Any, items: Sequence[str] | None, collections: Sequence[str] | None,
            chunk_type: str | None) -> Any:
    from zocrates_nb.index import SearchFilter

    keys: set[str] | None = None
    if items:
        keys = set(items)
    if collections:
        try:
            in_collections = index.collection_item_keys(list(collections))
        except ValueError as e:
            raise CliError(str(e)) from e
        keys = in_collections if keys is None else keys & in_collections
    return SearchFilter(
        item_keys=sorted(keys) if keys is not None else None,
        chunk_types=[chunk_type] if chunk_type else None,
    )


def cmd_search(args: argparse.Namespace) -> int:
    index = _open_index(args)
    try:
        if args.queries:
            return _batch_search(index, args)
        if not args.query:
            raise CliError("give a QUERY (or --queries FILE.jsonl)")
        flt = _filter(index, args.items, args.collection, args.type)
        hits = index.search(args.query, flt, limit=args.limit)
    finally:
        index.close()
    if args.json:
        _print_json([h.to_json() for h in hits])
        return 0
    if not hits:
        print("no results")
    for n, h in enumerate(hits, 1):
        c = h.chunk
        who = (c.authors[0] + (" et al." if len(c.authors) > 1 else "")) if c.authors else ""
        print(f"[{n}] {c.title} ({who}{', ' if who else ''}{c.year or 'n.d.'}) [{c.item_key}]")
        print(f"    § {c.section or c.chunk_type}  ·  {c.chunk_type}  ·  score {h.score:.4f}")
        snippet = " ".join(c.text.split())
        print(f"    {snippet[:300]}{'…' if len(snippet) > 300 else ''}")
    return 0


def _batch_search(index: Any, args: argparse.Namespace) -> int:
    with open(args.queries, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                q = json.loads(line)
                flt = _filter(index, q.get("items"), q.get("collections"), q.get("type"))
                hits = index.search(q["query"], flt, limit=args.limit)
            except (json.JSONDecodeError, KeyError) as e:
                raise CliError(f"{args.queries}:{n}: bad query line ({e})") from e
            print(json.dumps({"id": q.get("id", n), "results": [h.to_json() for h in hits]},
                             ensure_ascii=False))
    return 0


def cmd_convert(args: argparse.Namespace) -> int:
    from zocrates_nb.ingest import ConversionError, convert_file

    path = Path(args.file)
    if not path.is_file():
        raise CliError(f"no such file: {path}")
    try:
        bundle = convert_file(path)
    except ConversionError as e:
        raise CliError(f"{path.name}: {e}") from e
    toc = bundle.toc
    if args.json:
        _print_json({
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
        })
        return 0
    print(f"{toc.title}\n{', '.join(toc.authors)}{' · ' if toc.authors else ''}{toc.year or ''}")
    for s in toc.sections:
        indent = "  " * max(s.level - 1, 0)
        num = f"{s.number} " if s.number else ""
        print(f"{indent}[{s.id}] {num}{s.title or 'Frontmatter'}  (p.{s.page}, {s.words} words)")
    for a in (*toc.figures, *toc.tables):
        print(f"[{a.id}] {a.label}: {a.caption[:80]}")
    return 0


def cmd_toc(args: argparse.Namespace) -> int:
    from zocrates_nb.retrieval.commands import toc_command

    return toc_command(args)


def cmd_read(args: argparse.Namespace) -> int:
    from zocrates_nb.retrieval.commands import read_command

    return read_command(args)


def cmd_bench(args: argparse.Namespace) -> int:
    from zocrates_nb import bench, bench_retrieval

    if args.what == "ui":
        from zocrates_nb import bench_ui

        result = bench_ui.run(args)
    else:
        result = bench_retrieval.run(args) if args.what in ("beir", "tokens") else bench.run(args)
    if args.json:
        _print_json(result)
    else:
        for key, value in result.items():
            print(f"{key:>22}: {value}")
    return 0


def _conversation(name: str) -> Callable[[argparse.Namespace], int]:
    """ask / resume / chat / sessions / doctor live in zocrates_nb.app_cli (the App's surface)."""

    def run(args: argparse.Namespace) -> int:
        from zocrates_nb import app_cli

        commands: Any = app_cli
        if getattr(args, "server", None):  # --server URL: drive a running Jupyter server
            from zocrates_nb.server import remote_cli as commands
        try:
            result: int = getattr(commands, f"{name}_command")(args)
        except app_cli.CommandError as e:
            raise CliError(str(e)) from None
        return result

    return run


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="zocrates-nb",
        description="Research assistant over your Zotero library (offline by default).",
    )
    p.add_argument("--home", type=Path, default=None,
                   help="data home (default: $ZOCRATES_HOME or ~/.zocrates-nb)")
    sub = p.add_subparsers(dest="command", required=True)

    ix = sub.add_parser("index", help="index a library (incremental)")
    src = ix.add_argument_group("library source (default: auto-detect ~/Zotero)")
    src.add_argument("--zotero-dir", type=Path,
                     help="Zotero data directory (zotero.sqlite + storage/)")
    src.add_argument("--zotero-local", action="store_true",
                     help="Zotero's local API (Zotero running)")
    src.add_argument("--zotero-web", metavar="LIBRARY_ID",
                     help="Zotero Web API library id ($ZOTERO_API_KEY)")
    src.add_argument("--group", action="store_true", help="--zotero-web names a group library")
    src.add_argument("--folder", type=Path, help="a plain folder of PDF/HTML/Markdown files")
    src.add_argument("--sample", action="store_true", help="the built-in sample library")
    ix.add_argument("--json", action="store_true")
    ix.set_defaults(func=cmd_index)

    st = sub.add_parser("status", help="what is indexed")
    st.add_argument("--json", action="store_true")
    st.set_defaults(func=cmd_status)

    se = sub.add_parser("search", help="hybrid search over the index")
    se.add_argument("query", nargs="?")
    se.add_argument("--items", nargs="+", metavar="KEY", help="item or attachment keys")
    se.add_argument("--collection", nargs="+", metavar="NAME", help="collection names or keys")
    se.add_argument("--type", help="chunk type (frontmatter, abstract, body, figure, table, note)")
    se.add_argument("--limit", type=int, default=10)
    se.add_argument("--queries", type=Path,
                    help="batch mode: JSONL of {id, query, items?, collections?}")
    se.add_argument("--json", action="store_true")
    se.set_defaults(func=cmd_search)

    cv = sub.add_parser("convert", help="convert one file and print its table of contents")
    cv.add_argument("file")
    cv.add_argument("--json", action="store_true")
    cv.set_defaults(func=cmd_convert)

    tc = sub.add_parser("toc", help="a document's compact outline (parent, attachment or note key)")
    tc.add_argument("key")
    tc.add_argument("--json", action="store_true")
    tc.set_defaults(func=cmd_toc)

    rd = sub.add_parser("read", help="read sections/figures/tables of a document: read KEY s2,f1")
    rd.add_argument("key")
    rd.add_argument("asset_ids", nargs="+", help="s1…, f1…, t1…, abstract, full, p4 (any form)")
    rd.add_argument("--json", action="store_true")
    rd.set_defaults(func=cmd_read)

    from zocrates_nb.app_cli import add_parsers

    add_parsers(sub)
    for name in ("ask", "resume", "chat", "sessions", "doctor"):
        sub.choices[name].set_defaults(func=_conversation(name))
    from zocrates_nb.server.remote_cli import add_server_options

    add_server_options(sub)

    be = sub.add_parser("bench", help="benchmarks")
    be.add_argument("what", choices=["index", "search", "beir", "tokens", "ui"])
    be.add_argument("dir", nargs="?", type=Path, help="beir: a BEIR dataset directory")
    be.add_argument("--split", default="test", help="beir: qrels split (default test)")
    be.add_argument("--queries-limit", type=int, help="beir: only the first N queries")
    be.add_argument("--zotero-dir", type=Path, help="library to benchmark (default: the sample)")
    be.add_argument("--folder", type=Path)
    be.add_argument("--repeat", type=int, default=3, help="runs per measurement (median)")
    be.add_argument("--json", action="store_true")
    be.set_defaults(func=cmd_bench)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    args.home = (args.home or default_home()).expanduser().resolve()
    func: Callable[[argparse.Namespace], int] = args.func
    try:
        return func(args)
    except (CliError, ConfigError) as e:
        print(f"zocrates-nb: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("zocrates-nb: interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # library errors with clear messages
        from zocrates_nb.library import LibraryError

        if isinstance(e, LibraryError):
            print(f"zocrates-nb: error: {e}", file=sys.stderr)
            return 2
        raise


if __name__ == "__main__":
    sys.exit(main())
