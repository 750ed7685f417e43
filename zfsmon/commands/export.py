"""`zfsmon export` at work; its manual and options are :mod:`zfsmon.commands.options.export`."""

from __future__ import annotations

import argparse
import fnmatch
import os
import sys
from typing import IO, Iterable, List, Optional, Sequence

from zfsmon import outfile
from zfsmon.analysis.downsample import downsample_blocks
from zfsmon.commands import _serve
from zfsmon.errors import UserError
from zfsmon.model import Kind, Record
from zfsmon.store import Recording, arrays
from zfsmon.views import csv_export as view


def select_entities(rec: Recording, patterns: Optional[Sequence[str]]) -> Optional[List[str]]:
    """Entity keys matching any pattern (None = all). A pattern matches a kind, a key, a name or pool/name."""
    if not patterns:
        return None
    kinds = {k.value for k in Kind}
    keys = []
    for e in rec.entities():
        names = (e.key, e.name, f"{e.pool}/{e.name}" if e.pool else e.name)
        for pat in patterns:
            if pat in kinds and e.kind.value == pat or any(fnmatch.fnmatchcase(n, pat) for n in names):
                keys.append(e.key)
                break
    if not keys:
        some = ", ".join(sorted(e.key for e in rec.entities())[:8])
        raise UserError(f"no entity matches {' '.join(patterns)} (the recording has: {some}...)")
    return keys


def _check_out(path: str, recording: str) -> None:
    if path != "-" and os.path.exists(path) and os.path.samefile(path, recording):
        raise UserError(f"{path}: that is the recording itself")


#: the files a per-kind or long export writes (an earlier export's files of these names are replaced or removed)
EXPORT_FILES = sorted({f"{f}.csv" for f in view.KIND_FILE.values()} | {"samples.csv", "events.csv", "meta.csv"}
                      | set(view.FIO_FILES))


def _check_ownership(out: str) -> outfile.Written:
    """Before anything is written: every file of an export's name in ``out`` must be one an earlier export wrote
    (its manifest vouches for it), else the export is refused, so no file the user made is replaced or
    removed."""
    written = outfile.Written(out)
    foreign = [n for n in EXPORT_FILES if os.path.lexists(os.path.join(out, n)) and not written.vouches(n)]
    if foreign:
        raise UserError(f"{os.path.join(out, foreign[0])}: not written by an earlier zfsmon export (its "
                        f"{outfile.Written.NAME} does not list it as it is): zfsmon neither replaces nor removes it; "
                        "move it away or export into another directory")
    return written


def _remove_stale(written: outfile.Written, names: Sequence[str]) -> List[str]:
    """An earlier export's files this export did not write (another kind, or long vs per-kind): removed, so the
    directory holds one export, not a mix. Only files the manifest vouches for."""
    gone = []
    for name in EXPORT_FILES:
        if name not in names and written.vouches(name):
            written.remove(name)
            gone.append(name)
    return gone


def _openmetrics(rec: Recording, args: argparse.Namespace, keys: Optional[List[str]], start: Optional[float],
                 end: Optional[float]) -> int:
    """The scrapes the exporter would have served (zfsmon.views.openmetrics), into a file written whole."""
    if not _serve.HAVE_PROMETHEUS:  # the scrapes are the exporter's own, rendered by prometheus_client
        raise UserError(f"--openmetrics: {_serve.INSTALL_HINT}")
    openmetrics = _serve.openmetrics
    _check_out(args.openmetrics, args.file)
    every = args.every or openmetrics.DEFAULT_EVERY
    records: List[Record] = [*rec.samples(entity_keys=keys, start=start, end=end), *rec.events(start, end)]
    records.sort(key=lambda r: r.ts)
    labels = {"job": "zfsmon", "instance": rec.meta.get("host") or "zfsmon"}
    lines = openmetrics.openmetrics(openmetrics.scrapes(records, rec.meta, rec.nominal_interval() or 1.0, every,
                                                        note=lambda m: print(f"note: {m}", file=sys.stderr)),
                                    labels)
    if args.openmetrics == "-":
        n = _write_lines(sys.stdout, lines)
    else:
        with outfile.atomic(args.openmetrics) as fh:
            n = _write_lines(fh, lines)
        print(f"{args.openmetrics}: {n} samples, a scrape every {every:g} s", file=sys.stderr)
    return 0


def _write_lines(fh: IO[str], lines: Iterable[str]) -> int:
    n = 0
    for line in lines:
        fh.write(line + "\n")
        n += not line.startswith("#")
    return n


def run(args: argparse.Namespace) -> int:
    with Recording.open(args.file) as rec:
        span = rec.time_range()
        start = args.start.resolve(span) if args.start else None
        # a live recording: export what exists now (the columns are fixed from it)
        end = args.end.resolve(span) if args.end else (span[1] if span else None)
        if start is not None and end is not None and end < start:
            raise UserError("--to is before --from")
        keys = select_entities(rec, args.entities)
        if args.openmetrics:
            return _openmetrics(rec, args, keys, start, end)
        if args.every:  # column-wise, a block of readings at a time, chunks as arrays: no Sample per reading
            streams = rec.select_streams(keys) if keys is not None else None
            rows = view.bucket_rows(downsample_blocks(arrays.blocks(rec, streams, start, end), args.every))
        else:
            rows = view.rows(rec.samples(entity_keys=keys, start=start, end=end))
        events = rec.events(start, args.end.resolve(span) if args.end else None)
        if args.json:
            _check_out(args.json, args.file)
            if args.json == "-":
                n, ne = view.write_jsonl(sys.stdout, rows, events)
            else:
                with outfile.atomic(args.json) as fh:
                    n, ne = view.write_jsonl(fh, rows, events)
                print(f"{args.json}: {n} rows, {ne} events", file=sys.stderr)
            return 0
        out = args.csv
        _check_out(out, args.file)
        if args.long:
            if out == "-":
                view.write_long(sys.stdout, rows)
                return 0
            outfile.check_directory(out)
            manifest = _check_ownership(out)
            with outfile.atomic(os.path.join(out, "samples.csv")) as fh:
                n = view.write_long(fh, rows)
            names = ["samples.csv"]
            written = [f"samples.csv ({n} values)"]
        else:
            if out == "-":
                raise UserError("per-kind CSV needs a directory (use --long for standard output)")
            outfile.check_directory(out)
            manifest = _check_ownership(out)
            streams = rec.select_streams(keys) if keys is not None else list(rec.streams)
            pairs = {(m.kind, m.name) for sid in streams for m in rec.streams[sid].metrics}
            wide = view.WideCSV(out, view.wide_columns(pairs, bool(args.every)), bool(args.every))
            try:
                for r in rows:
                    wide.write(r)
            except BaseException:
                wide.abort()
                raise
            wide.close()
            names = [f"{f}.csv" for f in wide.counts]
            written = [f"{f}.csv ({n} rows)" for f, n in sorted(wide.counts.items())]
        if view.has_fio(e for e in rec.entities() if keys is None or e.key in keys):  # the sweep, the vdev roles
            for name, n in view.write_fio_tables(out, list(rec.samples(entity_keys=keys, start=start, end=end))
                                                 ).items():
                names.append(name)
                written.append(f"{name} ({n} rows)")
        with outfile.atomic(os.path.join(out, "events.csv")) as fh:
            ne = view.write_events(fh, events)
        written.append(f"events.csv ({ne} events)")
        with outfile.atomic(os.path.join(out, "meta.csv")) as fh:
            view.write_meta(fh, rec.meta)
        written.append("meta.csv (host, platform, ZFS version)")
        names += ["events.csv", "meta.csv"]
        gone = _remove_stale(manifest, names)
        manifest.record(names)
        print(f"{out}: " + ", ".join(written) + (f"; removed an earlier export's {', '.join(gone)}" if gone else ""),
              file=sys.stderr)
    return 0
