"""discover and stage: papers beyond the library, a staging list, and saving it to Zotero or a
RIS/BibTeX file; an answer saved as a note, its quotes as highlights. Every command is a call of
`App`; the list is the data home's unless `--session` names a session's."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from zocrates_nb.cli.options import JSON_HELP, Values, positive_int
from zocrates_nb.errors import UsageError

if TYPE_CHECKING:
    from zocrates_nb.app import App, SaveResult
    from zocrates_nb.turn import Candidate

CANDIDATE_FIELDS = ("id", "title", "authors", "year", "venue", "doi", "arxiv_id", "url",
                    "pdf_url", "in_library", "library_key", "why", "sources", "retracted",
                    "notice")  # fmt: skip


def _app(args: argparse.Namespace) -> App:
    from zocrates_nb.cli.client import open_local

    return open_local(args)


def _json(data: Any) -> None:
    print(json.dumps(data, ensure_ascii=False, indent=1))


def candidate_json(c: Candidate) -> dict[str, Any]:
    return c.model_dump(mode="json", include=set(CANDIDATE_FIELDS))


def print_candidate(c: Candidate) -> None:
    authors = ", ".join(c.authors[:3]) + (" et al." if len(c.authors) > 3 else "")
    where = ", ".join(str(p) for p in (c.venue, c.year) if p)
    ident = f"doi:{c.doi}" if c.doi else f"arXiv:{c.arxiv_id}" if c.arxiv_id else c.url or ""
    lines = [
        " — ".join(p for p in (authors, where) if p),
        f"{ident}  [{', '.join(c.sources)}]".strip(),
        (f"already in your library ({c.library_key})" if c.library_key
         else "already in your Zotero library") if c.in_library else "",
        f"why: {c.why}" if c.why else "",
        f"⚠ {c.notice}" if c.notice else "",
    ]
    print(f"{c.id}  {c.title}")
    for line in filter(None, lines):
        print(f"            {line}")


def discover_command(args: argparse.Namespace) -> int:
    with _app(args) as app:
        found = app.discover(args.query, limit=args.limit, session_id=args.session)
    if args.json:
        _json({"candidates": [candidate_json(c) for c in found.candidates],
               "errors": found.errors})  # fmt: skip
        return 0
    for e in found.errors:
        print(f"warning: {e}", file=sys.stderr)
    if not found.candidates:
        print("no candidates")
    for c in found.candidates:
        print_candidate(c)
    if found.candidates:
        print("\nstage some with: zocrates-nb stage add ID …")
    return 0


def stage_add_command(args: argparse.Namespace) -> int:
    with _app(args) as app:
        added = app.stage(args.ids, session_id=args.session)
        total = len(app.staged(session_id=args.session))
    for c in added:
        print(f"staged {c.id}  {c.title}")
    print(f"{total} staged")
    return 0


def stage_list_command(args: argparse.Namespace) -> int:
    with _app(args) as app:
        staged = app.staged(session_id=args.session)
    if args.json:
        _json({"staged": [candidate_json(c) for c in staged]})
        return 0
    if not staged:
        print("nothing staged")
    for c in staged:
        print_candidate(c)
    return 0


def stage_remove_command(args: argparse.Namespace) -> int:
    with _app(args) as app:
        removed = app.unstage(args.ids, session_id=args.session)
    print(f"removed {removed} of {len(args.ids)}")
    return 0


def stage_save_command(args: argparse.Namespace) -> int:
    with _app(args) as app:
        staged = app.staged(session_id=args.session)
        writes = args.to in ("connector", "web") or args.out is not None
        confirmed = args.yes or not writes or _ask(args, len(staged), app)
        if not confirmed:
            print("nothing saved")
            return 1
        result, text = app.save_staged(args.to, confirmed=True, session_id=args.session,
                                       out=args.out, collection=args.collection,
                                       tags=args.tag, lost=args.lost)  # fmt: skip
    if text is not None:
        sys.stdout.write(text)
        return 0
    return print_result(result, args.json)


def print_result(result: SaveResult, as_json: bool) -> int:
    """A save's outcome, adding up: saved, already in Zotero, not saved (why), not saved yet,
    each paper by its title and id; what was asked for but not applied; how to continue.
    The exit status is 0 only when everything asked for was done."""
    status = 0 if result.complete else 1
    if as_json:
        _json(result.model_dump(mode="json"))
        return status
    for line in result.warnings:
        print(f"warning: {line}", file=sys.stderr)
    print(f"saved {len(result.saved)} to {result.where}" if result.where else
          f"saved {len(result.saved)}")  # fmt: skip
    if result.attached or result.unattached:
        tried = len(result.attached) + len(result.unattached)
        print(f"Zotero attached PDFs to {len(result.attached)} of {tried}")
        for cid, reason in result.unattached.items():
            print(f"  no PDF for {result.name(cid)}: {reason}")
    if result.held:
        print(f"already in Zotero {len(result.held)}:")
        for cid, where in result.held.items():
            print(f"  {result.name(cid)}: {where}")
    if result.failed:
        print(f"not saved {len(result.failed)}:")
        for cid, reason in result.failed.items():
            print(f"  {result.name(cid)}: {reason}")
    if result.pending:
        print(f"not saved yet {len(result.pending)}:")
        for cid in result.pending:
            print(f"  {result.name(cid)}")
    if result.incomplete:
        print(f"not applied: {'; '.join(result.incomplete)}")
    if result.message:
        print(result.message)
    return status


def add_command(args: argparse.Namespace) -> int:
    """Look the identifiers up, show what was found, ask (unless --yes), then save."""
    with _app(args) as app:
        if not args.yes:
            found, unknown = app.lookup(args.identifiers)
            for c in found:
                print_candidate(c)
            for ident, why in unknown.items():
                print(f"  {ident}: {why}", file=sys.stderr)
            if not found:
                print("nothing to add")
                return 1
            where = ("the Zotero app" if args.to == "connector" else "your Zotero web library")
            if not sys.stdin.isatty():
                raise UsageError(f"adding {len(found)} papers to {where} needs a yes: add --yes")
            if input(f"Add {len(found)} papers to {where}? [y/N] ").strip().lower() not in (
                "y", "yes"):  # fmt: skip
                print("nothing saved")
                return 1
        result, found = app.add(args.identifiers, to=args.to, confirmed=True,
                                collection=args.collection, tags=args.tag,
                                lost=args.lost)  # fmt: skip
    if not args.json:
        for c in found:
            if c.id in result.saved:
                print(f"added {c.id}  {c.title}")
    return print_result(result, args.json)


def note_save_command(args: argparse.Namespace) -> int:
    with _app(args) as app:
        if not args.yes:
            where = "the Zotero app" if args.to == "connector" else "your Zotero library"
            if not sys.stdin.isatty():
                raise UsageError(f"saving the answer as a note in {where} needs a yes: add --yes")
            if input(f"Save the answer as a note in {where}? [y/N] ").strip().lower() not in (
                "y", "yes"):  # fmt: skip
                print("nothing saved")
                return 1
        result = app.save_note(args.session, to=args.to, turn_id=args.turn, confirmed=True,
                               collection=args.collection, tag_cited=args.tag_cited,
                               standalone=args.standalone)  # fmt: skip
    if args.json:
        _json(result.model_dump(mode="json"))
    else:
        print(result.message or f"saved the answer as {result.where}")
        if result.tagged:
            print(f"tagged zocrates:cited: {', '.join(result.tagged)}")
        for key, reason in result.failed.items():
            print(f"  {key}: {reason}")
    return 0 if not result.failed else 1


def _ask(args: argparse.Namespace, n: int, app: App) -> bool:
    if not n:
        return True  # App.save_staged explains that nothing is staged
    where = {
        "connector": f"the Zotero app at {app.settings.zotero.connector_url} (its selected "
                     "collection)",
        "web": "your Zotero library through the Web API",
    }.get(args.to, str(args.out))  # fmt: skip
    if not sys.stdin.isatty():
        raise UsageError(f"saving {n} staged papers to {where} needs a yes: add --yes")
    answer = input(f"Save {n} staged papers to {where}? [y/N] ")
    return answer.strip().lower() in ("y", "yes")


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    def session(p: argparse.ArgumentParser) -> None:
        p.add_argument("--session", help="a session's list (default: the data home's list)")

    di = sub.add_parser("discover", help="find papers beyond your library (online.enabled)")
    di.add_argument("query")
    di.add_argument("--limit", type=positive_int, default=10, help="at most this many (10)")
    di.add_argument("--json", action="store_true", help=JSON_HELP)
    session(di)
    di.set_defaults(func=discover_command)

    st = sub.add_parser("stage", help="stage discovered papers, then save them to Zotero")
    ss = st.add_subparsers(dest="stage_command", required=True)
    add = ss.add_parser("add", help="stage candidates by id (from discover)")
    add.add_argument("ids", nargs="+", metavar="ID")
    add.set_defaults(func=stage_add_command)
    ls = ss.add_parser("list", help="the staging list")
    ls.add_argument("--json", action="store_true", help=JSON_HELP)
    ls.set_defaults(func=stage_list_command)
    rm = ss.add_parser("remove", help="take candidates off the staging list")
    rm.add_argument("ids", nargs="+", metavar="ID")
    rm.set_defaults(func=stage_remove_command)
    sv = ss.add_parser("save", help="save the staging list to Zotero, or export it")
    sv.add_argument("--to", required=True, choices=["connector", "web", "ris", "bibtex"])
    sv.add_argument("--out", help="ris/bibtex: the file to write (default: standard output)")
    sv.add_argument("--collection", help="the collection to save into: web, its key; "
                    "connector, its name or path (default: the one selected in Zotero)")
    sv.add_argument("--tag", nargs="+", action=Values,
                    help="tags to give the saved items (--tag a b, or --tag a --tag b)")
    sv.add_argument("--lost", choices=["saved", "unsaved"],
                    help="connector: what you found in Zotero for papers whose save was not "
                    "answered (the save says when this is needed)")
    sv.add_argument("--yes", action="store_true", help="do not ask before writing")
    sv.add_argument("--json", action="store_true", help=JSON_HELP)
    sv.set_defaults(func=stage_save_command)
    for p in (add, ls, rm, sv):
        session(p)

    ad = sub.add_parser("add", help="add papers to Zotero by DOI, arXiv id or ISBN "
                        "(online.enabled)")  # fmt: skip
    ad.add_argument("identifiers", nargs="+", metavar="DOI|arXiv-id|ISBN")
    ad.add_argument("--to", choices=["connector", "web"], default="connector",
                    help="the Zotero app (default) or your web library")
    ad.add_argument("--collection", help="the collection to save into: connector, its name or "
                    "path (default: the one selected in Zotero); web, its key")
    ad.add_argument("--tag", nargs="+", action=Values,
                    help="tags to give the papers (--tag a b, or --tag a --tag b)")
    ad.add_argument("--lost", choices=["saved", "unsaved"], help=argparse.SUPPRESS)
    ad.add_argument("--yes", action="store_true", help="do not ask before writing")
    ad.add_argument("--json", action="store_true", help=JSON_HELP)
    ad.set_defaults(func=add_command)

    no = sub.add_parser("note", help="save an answer as a Zotero note")
    ns = no.add_subparsers(dest="note_command", required=True)
    nsv = ns.add_parser("save", help="save an answer and its cited sources as a Zotero note")
    nsv.add_argument("--session", required=True)
    nsv.add_argument("--turn", help="the turn id (default: the last answered turn)")
    nsv.add_argument("--to", required=True, choices=["connector", "web"])
    nsv.add_argument("--collection", help="web: a collection key for a standalone note")
    nsv.add_argument("--standalone", action="store_true",
                     help="web: a standalone note even when the answer cites one paper (when "
                          "the library does not hold that paper)")
    nsv.add_argument("--tag-cited", action="store_true",
                     help="web: also tag the cited items zocrates:cited")
    nsv.add_argument("--yes", action="store_true", help="do not ask before writing")
    nsv.add_argument("--json", action="store_true", help=JSON_HELP)
    nsv.set_defaults(func=note_save_command)

    an = sub.add_parser("annotate", help="write an answer's verified quotes as highlights in "
                        "your Zotero PDFs")  # fmt: skip
    an.add_argument("--session", required=True)
    an.add_argument("--turn", help="the turn's number (1, 2, …) or id (default: the last answer)")
    an.add_argument("--to", default="web", choices=["web"],
                    help="your Zotero library through the Web API (zotero.web)")
    an.add_argument("--dry-run", action="store_true", help="show the highlights, write nothing")
    an.add_argument("--yes", action="store_true", help="do not ask before writing")
    an.add_argument("--json", action="store_true", help=JSON_HELP)
    an.set_defaults(func=annotate_command)


def annotate_command(args: argparse.Namespace) -> int:
    with _app(args) as app:
        if not args.yes and not args.dry_run:
            if not sys.stdin.isatty():
                raise UsageError("highlighting quotes in your Zotero PDFs needs a yes: add --yes "
                                 "(or --dry-run to see them first)")  # fmt: skip
            if input("Write this answer's verified quotes as highlights in your Zotero PDFs? "
                     "[y/N] ").strip().lower() not in ("y", "yes"):  # fmt: skip
                print("nothing written")
                return 1
        result = app.annotate(args.session, turn=args.turn, to=args.to, confirmed=True,
                              dry_run=args.dry_run)  # fmt: skip
    if args.json:
        _json(result.model_dump(mode="json"))
        return 0 if all(h.state in ("written", "already", "would write")
                        for h in result.highlights) else 1  # fmt: skip
    verb = "would highlight" if result.dry_run else "highlights"
    print(f"turn {result.turn} of session {result.session_id}: {verb} in {result.where}")
    for h in result.highlights:
        state = {"written": f"written ({h.key})", "already": f"already there ({h.key})",
                 "would write": "would write"}.get(h.state, f"{h.state}: {h.reason}")  # fmt: skip
        print(f"  [{h.n}] {h.title}, p. {h.page_label}: “{h.quote}” — {state}")
    for s in result.skipped:
        where = f" ({s.title})" if s.title else ""
        print(f"  skipped{where}: “{s.quote}” — {s.why}")
    if result.message:
        print(result.message)
    return 0 if all(h.state in ("written", "already", "would write")
                    for h in result.highlights) else 1  # fmt: skip
