"""`zfsmon import` at work; its manual and options are :mod:`zfsmon.commands.options.import_`."""

from __future__ import annotations

import argparse
import os
import sys
from typing import List, Optional

from zfsmon import outfile
from zfsmon.commands.parse import (
    check_possible,
    kind_arg,
    notes,
    options_from,
    parse_log_text,
    place_by_boot,
    print_notes,
    read_log,
)
from zfsmon.errors import UserError
from zfsmon.model import ParseError, Record, Sample
from zfsmon.sources import detect
from zfsmon.sources.kstat import text as kstat_text
from zfsmon.sources.zpool.status import parse_status
from zfsmon.store import Recorder
from zfsmon.store.schema import SIDE_FILES


def place(records: List[Record], path: str, start: Optional[float] = None) -> List[Record]:
    """Relative timestamps onto the wall clock (see the module's description)."""
    if not detect.is_relative(records):
        return records
    lo = min(r.ts for r in records)
    hi = max(r.ts for r in records)
    if start is not None:
        return detect.shift(records, start - lo)
    mtime = os.path.getmtime(path) if path != "-" else 0.0
    return detect.shift(records, mtime - hi)


def _check_times(records: List[Record], path: str) -> None:
    """Several readings of one entity at one time: the log printed no times and no interval was given."""
    seen = set()
    for r in records:
        if isinstance(r, Sample) and not r.since_boot:
            k = (r.entity.key, r.source, r.ts)
            if k in seen:
                raise UserError(f"{path}: the log shows no times or interval; say how far apart its reports are "
                                "with --interval S")
            seen.add(k)


def _is_status(text: str) -> bool:
    """A ``zpool status`` capture: it gives the other logs' trees (and is imported too if a kind reads it)."""
    try:
        parse_status(text)
    except ParseError:
        return False
    return True


def run(args: argparse.Namespace) -> int:
    wanted = kind_arg(args.kind, "--kind") if args.kind else None
    loaded = []
    texts = [(path, read_log(path)) for path in args.logs]
    trees = {p for p, t in texts if _is_status(t)} if len(texts) > 1 else set()
    for path in sorted(trees):
        print(f"{path}: zpool status: gives the roles and parents of the other logs", file=sys.stderr)
    all_notes: List[str] = []
    for path, text in texts:
        if path in trees:
            own = detect.detect(text)
            if own is None or (wanted and wanted != own.name):
                continue  # only the others' tree (`--kind zpool-iostat` names the logs' kind, not this file's)
        beside = [(p, t) for p, t in texts if p != path]
        records, kind = parse_log_text(text, path, wanted, args.interval, options_from(args, beside))
        print_notes(records)
        all_notes.extend(notes(records))
        _check_times(records, path)
        if not (kstat_text.boot_clock(records) and detect.is_relative(records)):
            records = place(records, path, args.start.resolve(None) if args.start else None)
            check_possible(records, path)
        loaded.append((path, kind, records))
    loaded = place_by_boot(loaded, args.start.resolve(None) if args.start else None, all_notes)
    if not loaded:
        raise UserError("only zpool status captures given: no log to import (they give the roles of "
                        "zpool iostat logs given with them)")
    if os.path.exists(args.into) and any(os.path.samefile(args.into, p) for p in args.logs if p != "-"):
        raise UserError(f"{args.into}: that is one of the logs")
    meta = {"host": "(imported)", "argv": " ".join(["zfsmon", "import"] + sys.argv[2:]) if sys.argv[1:2] == ["import"]
            else "zfsmon import", "imported_from": ", ".join(f"{p} ({k})" for p, k, _ in loaded)}
    if args.interval:
        meta["interval"] = f"{args.interval:g}"
    if args.iostat_flags:
        meta["iostat_flags"] = args.iostat_flags
    if all_notes:
        meta["notes"] = "; ".join(all_notes)
    outfile.check_target(args.into)
    # what this import may remove if it fails: only names nothing had before it (not a user's file, not a link)
    ours = [args.into + s for s in ("",) + SIDE_FILES if not os.path.lexists(args.into + s)]
    created = args.into in ours
    try:
        with Recorder(args.into, meta) as rec:
            for path, kind, records in loaded:
                rec.write(records)
                n = sum(1 for r in records if isinstance(r, Sample))
                print(f"{path}: {kind}: {n} samples, {len(records) - n} events", file=sys.stderr)
    except BaseException:
        if created:  # a recording this import began and could not finish: not left behind half-made
            for made in ours:
                if os.path.lexists(made):
                    os.unlink(made)
        raise
    return 0
