"""`zfsmon parse` at work; its manual and options are :mod:`zfsmon.commands.options.parse`."""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
from typing import Callable, List, Optional, Sequence, Tuple

from zfsmon.commands._readtext import read_text
from zfsmon.errors import UserError, printable
from zfsmon.model import Event, EventKind, ParseError, Record, Sample, valid_ts
from zfsmon.sources import detect
from zfsmon.sources.kstat import text as kstat_text
from zfsmon.sources.spec import ParseOptions
from zfsmon.sources.zpool.status import run_zpool
from zfsmon.views import csv_export as view


def kind_arg(text: str, option: str = "") -> str:
    """A kind name (``zpool_iostat`` and ``ZPOOL-IOSTAT`` spell ``zpool-iostat``). Checked when the command runs,
    not by argparse: the kinds are known only once every parser is imported, which `--help` must not wait for.
    An unknown one is a UserError with argparse's exit code, naming the option it came from."""
    try:
        return detect.get(text).name
    except KeyError:
        raise UserError(f"{option + ': ' if option else ''}unknown kind {text!r} (kinds: {', '.join(detect.KINDS)}; "
                        "`zfsmon parse --list` describes them)") from None


def read_log(path: str) -> str:
    """A capture's text, read bounded (see :mod:`zfsmon.commands._readtext`); a UserError when it cannot be."""
    return read_text(path)


def host_text(argv: Sequence[str]) -> Optional[str]:
    """A command's output on this host (``zpool status POOL``), or None: no such command, or it failed."""
    if not argv or shutil.which(argv[0]) is None:
        return None
    try:
        return run_zpool(argv, timeout=15.0)
    except OSError:
        return None


def options_from(args: argparse.Namespace, beside: Sequence[Tuple[str, str]] = (),
                 ask_host: Optional[Callable[[Sequence[str]], Optional[str]]] = None) -> ParseOptions:
    """ParseOptions from the shared options; the --topology file comes first among ``beside``; this host is
    asked through :func:`host_text` unless ``ask_host`` is given."""
    first: List[Tuple[str, str]] = []
    if getattr(args, "topology", None):
        first.append((args.topology, read_log(args.topology)))
    return ParseOptions(flags=getattr(args, "iostat_flags", "") or "", beside=tuple(first) + tuple(beside),
                        host_text=ask_host or host_text)


def parse_log_text(text: str, path: str, kind: Optional[str], interval: Optional[float],
                   options: Optional[ParseOptions] = None) -> Tuple[List[Record], str]:
    """(records, kind name) or a UserError naming the file and line."""
    text, left = _without_messages(text)
    tk = detect.get(kind) if kind else detect.detect(text)
    if tk is None:
        raise UserError(f"{path}: not a format zfsmon can import (kinds: {', '.join(detect.KINDS)}; "
                        "name one with --kind NAME)")
    source = os.path.basename(path) if path != "-" else "stdin"
    if options is not None and options.flags and "flags" not in tk.options:
        print(f"note: {path}: --iostat-flags does not apply to {tk.name} (ignored)", file=sys.stderr)
    try:
        records = tk.read(text, source, interval, options)
    except ParseError as exc:
        retried = _without_cut_line(tk, text, source, interval, options, left)
        if retried is None:
            raise UserError(f"cannot read {path} as {tk.name}: {exc}") from None
        records = retried
    except (ValueError, OverflowError) as exc:  # a parser that let a number it cannot hold through (a 4,301-digit
        # integer: int() refuses it, float() overflows): still one line, never a traceback
        raise UserError(f"cannot read {path} as {tk.name}: a value out of range ({str(exc).split(':')[0]})") from None
    if left:
        ts = min((r.ts for r in records), default=0.0)
        records = records + [Event(ts, EventKind.INFO, f"{source}: {n}", source=source, data={"note": True})
                             for n in left]
    if not any(isinstance(r, Sample) for r in records):
        raise UserError(f"{path}: no readings found in it as {tk.name}")
    return records, tk.name


#: lines a tool or shell prints on standard error, which a capture made with `2>&1` (or `|&`) has among its
#: reports: zpool's "cannot open 'tank': no such pool", "internal error: ...", a shell's "command not found"
#: (at the start of a line, as the tools print them: indented text belongs to the capture)
STRAY_LINE = re.compile(r"^(cannot (open|get|stat|read|iterate|find|connect|allocate)\b|internal error:|warning:|"
                        r"error:|fatal:|zpool: |zfs: |arcstat: |arc_summary: |sh: |bash: |sudo: |Traceback |"
                        r"\S+: command not found|\S+: [Pp]ermission denied)")


def _without_messages(text: str) -> Tuple[str, List[str]]:
    """The text without the lines a tool printed on standard error (they split the reports around them: a
    pgbench summary lost its run, a zpool iostat capture was refused), and a note saying what was left out."""
    lines = text.split("\n")
    stray = [(i + 1, ln) for i, ln in enumerate(lines) if STRAY_LINE.match(ln)]
    if not stray:
        return text, []
    kept = [ln for ln in lines if not STRAY_LINE.match(ln)]
    return "\n".join(kept), [f"left out {len(stray)} line(s) that are messages, not reports (line {stray[0][0]}: "
                             f"{stray[0][1].strip()[:60]!r})"]


def _without_cut_line(tk, text: str, source: str, interval: Optional[float], options: Optional[ParseOptions],
                      left: List[str]) -> Optional[List[Record]]:
    """After a ParseError: a capture whose last line is cut off (no line end: it was interrupted) read without
    that line, said in a note; None when that is not the case or does not help."""
    head, _, cut = text.rpartition("\n")
    if not cut.strip() or not head.strip():
        return None
    try:
        records = tk.read(head + "\n", source, interval, options)
    except ParseError:
        return None
    left.append(f"the last line is cut off (no line end), left out: {cut.strip()[:60]!r}")
    return records


def check_possible(records: List[Record], path: str) -> None:
    """Every time a date (a pgbench summary's ``duration: 300000000000 s``, a --start near year 9999 plus the
    capture's length): else no recording is made, rather than one every later read fails on."""
    bad = next((r for r in records if not valid_ts(r.ts)), None)
    if bad is not None:
        raise UserError(f"{path}: an impossible time ({bad.ts!r} s after 1970, beyond year 9999 or not a number) "
                        f"for {bad.entity.key if isinstance(bad, Sample) else 'an event'}: not imported")


def place_by_boot(loaded: List[Tuple[str, str, List[Record]]], start: Optional[float], all_notes: List[str],
                  hint: str = kstat_text.START_HINT) -> List[Tuple[str, str, List[Record]]]:
    """Kstat dumps timed by snaptime (seconds since boot) onto the wall clock, for `import` and `parse` alike:
    dumps of one boot keep their gaps across files (:func:`zfsmon.sources.kstat.text.boot_shifts`), each guess
    said in a note on standard error (``hint``: how to say the time instead) and added to ``all_notes``. The
    marker events go."""
    waiting = [(p, recs, os.path.getmtime(p) if p != "-" else 0.0) for p, _k, recs in loaded
               if kstat_text.boot_clock(recs) and detect.is_relative(recs)]
    shifts, boot_notes = kstat_text.boot_shifts(waiting, start, hint)
    for note in boot_notes:
        print(f"note: {note}", file=sys.stderr)
    all_notes.extend(boot_notes)
    out = []
    for path, kind, records in loaded:
        records = [r for r in records if not (isinstance(r, Event) and kstat_text.BOOT_CLOCK in r.data)]
        if path in shifts:
            records = detect.shift(records, shifts[path])
            check_possible(records, path)
        out.append((path, kind, records))
    return out


def notes(records: Sequence[Record]) -> List[str]:
    """What the parser had to guess or infer (``info`` events carrying a ``note``)."""
    return [r.text for r in records if isinstance(r, Event) and r.kind == EventKind.INFO and "note" in r.data]


def print_notes(records: Sequence[Record]) -> None:
    for n in notes(records):
        print(f"note: {printable(n)}", file=sys.stderr)


def list_kinds(out=None) -> None:
    """Every kind with its help and a command that printed such a text (derived from the sources' records)."""
    out = out or sys.stdout
    for k in detect.KINDS.values():
        print(f"{k.name:<14} {k.help}", file=out)
        if k.example:
            print(f"{'':<14} e.g. {k.example}", file=out)


def _kind_and_path(args: argparse.Namespace) -> Tuple[Optional[str], str]:
    kind = kind_arg(args.kind, "--kind") if args.kind else None
    if len(args.args) == 1:
        return kind, args.args[0]
    if len(args.args) == 2 and kind is None:
        kind = kind_arg(args.args[0])
        print(f"zfsmon: note: `zfsmon parse KIND FILE` is the old form; use `zfsmon parse --kind {kind} FILE`",
              file=sys.stderr)
        return kind, args.args[1]
    raise UserError("usage: zfsmon parse [--kind NAME] FILE (see `zfsmon parse --help`)")


def run(args: argparse.Namespace) -> int:
    if args.list:
        list_kinds()
        return 0
    kind, path = _kind_and_path(args)
    records, name = parse_log_text(read_log(path), path, kind, args.interval, options_from(args))
    print_notes(records)
    if kstat_text.boot_clock(records) and detect.is_relative(records):
        records = place_by_boot([(path, name, records)], None, [],
                                "`zfsmon import --start T` says when the first was taken")[0][2]
    samples = [r for r in records if isinstance(r, Sample)]
    view.write_long(sys.stdout, view.rows(samples, args.every))
    if args.events:
        for ev in records:
            if isinstance(ev, Event):
                print(f"{view.iso(ev.ts)} {ev.kind.value}: {printable(ev.text)}", file=sys.stderr)
    return 0
