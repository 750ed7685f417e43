"""`zfsmon trace` at work; its manual and options are :mod:`zfsmon.commands.options.trace`."""

from __future__ import annotations

import argparse
import sys
import time
from typing import List

from zfsmon import host
from zfsmon.commands._readtext import read_text
from zfsmon.errors import UserError, printable
from zfsmon.model import Event, EventKind, ParseError, Record, Sample
from zfsmon.trace import catalog
from zfsmon.trace.bcc_collector import BccCollector
from zfsmon.trace.collector import TraceCollector
from zfsmon.trace.protocol import TraceParser
from zfsmon.views.trace_text import Totals, csv_rows, table


def _list() -> int:
    fam = catalog.tracer_family()
    linux = fam == "bpftrace"
    for spec in catalog.SCRIPTS.values():
        files = ", ".join(spec.files.values())
        for others in (catalog.VARIANTS, catalog.LINUX_D):  # the script used where this one's probes are missing
            if spec.name in others:
                other = others[spec.name]
                files += ", " + ", ".join(other.files.values()) + f" ({other.used_when})"
        if linux:
            offers = ["bpftrace"] if "bpftrace" in spec.files else []
            offers += ["bcc"] if catalog.bcc_offers(spec.name) else []
            offers += ["dtrace"] if "dtrace" in spec.files else []
            here = f"  [{', '.join(offers) or 'not on this platform'}]"
        else:
            here = "" if fam in spec.files else "  (not on this platform)"
        print(f"{spec.name:<12} {spec.help}\n{'':<12} {files}{here}")
    if linux:
        print(f"{'all':<12} bcc only: every bcc trace ({', '.join(catalog.bcc_program.TRACES)}) in one program")
        for check in (host.probe_bpftrace(), host.probe_bcc(), host.probe_dtrace()):
            print(f"backend {check.name}: {'usable' if check.ok else 'not usable'}: {check.detail}")
    return 0


class _Printer:
    """Groups samples of one interval (same ts) and prints them as a table or CSV."""

    def __init__(self, use_csv: bool) -> None:
        self.csv = use_csv
        self.pending: List[Sample] = []
        self.totals = Totals()
        self.intervals = 0
        self.header_done = False

    def take(self, records: List[Record]) -> None:
        for r in records:
            if isinstance(r, Sample):
                if self.pending and r.ts != self.pending[0].ts:
                    self.flush()
                self.pending.append(r)
                self.totals.add(r)
            elif isinstance(r, Event):
                self.flush()
                where = sys.stderr if r.kind == EventKind.ERROR or self.csv else sys.stdout
                print(("zfsmon: " if r.kind == EventKind.ERROR else "") + printable(r.text), file=where)

    def flush(self) -> None:
        if not self.pending:
            return
        self.intervals += 1
        if self.csv:
            sys.stdout.write(csv_rows(self.pending, header=not self.header_done))
            self.header_done = True
        else:
            stamp = time.strftime("%H:%M:%S", time.localtime(self.pending[0].ts))
            print(f"{stamp}  ({printable(self.pending[0].source)})")
            print("\n".join(table(self.pending)))
            print()
        sys.stdout.flush()
        self.pending = []


def _from_file(args: argparse.Namespace, out: _Printer) -> None:
    lines = read_text(args.from_file).splitlines()  # bounded; binary input is one line, not a UnicodeDecodeError
    parser = TraceParser(f"trace:{args.from_file}")
    problems: List[str] = []
    samples = 0
    for line in lines:
        try:
            recs = parser.feed(line, time.time())
        except ParseError as exc:
            problems.append(str(exc))
            continue
        samples += sum(isinstance(r, Sample) for r in recs)
        out.take(recs)
    out.flush()
    if not samples:
        raise UserError(f"{args.from_file}: no trace output in it" + (f" ({len(problems)} unreadable lines; first: "
                                                                      f"{problems[0]})" if problems else ""))
    if problems:
        print(printable(f"zfsmon: {len(problems)} unreadable lines left out; first: {problems[0]}"), file=sys.stderr)


def _live(args: argparse.Namespace, out: _Printer) -> None:
    if args.interval < 1:
        raise UserError("INTERVAL must be a whole number of seconds >= 1")
    names = catalog.split_names(args.name)
    backend = catalog.choose_backend(args.backend, names)
    coll: TraceCollector
    if backend == "bcc":
        coll = BccCollector(names, args.interval, slow_ms=args.slow, pools=tuple(args.pool))
    else:
        if len(names) != 1:
            raise UserError(f"{backend} runs one trace per run; several at once: --backend bcc {args.name}")
        coll = TraceCollector(names[0], args.interval, slow_ms=args.slow, pools=tuple(args.pool), backend=backend)
    problem = coll.preflight()
    if problem:
        raise UserError(problem)
    if isinstance(coll, BccCollector):
        print(f"zfsmon: bcc compiles one program for {', '.join(coll.selection)} (seconds natively, minutes "
              f"under emulation); it says when it is ready", file=sys.stderr, flush=True)
    coll.start()
    try:
        seen_data = False
        while True:
            done = args.count is not None and coll.intervals() >= args.count
            if done:
                time.sleep(0.2)  # the reader thread queues an interval's samples just after counting it
            recs = coll.poll()
            seen_data = seen_data or any(isinstance(r, Sample) for r in recs)
            out.take(recs)
            if coll.ended() and not seen_data:
                errors = [r.text for r in recs if isinstance(r, Event) and r.kind == EventKind.ERROR]
                raise UserError(errors[-1] if errors else f"{coll.argv[0]} ended before printing anything")
            if done:
                break
            time.sleep(0.1)
        out.flush()
    finally:
        coll.stop()


def run(args: argparse.Namespace) -> int:
    if args.list:
        return _list()
    out = _Printer(args.csv)
    if args.from_file:
        _from_file(args, out)
    elif not args.name:
        raise UserError("which trace? give NAME (see `zfsmon trace --list`)")
    else:
        try:
            _live(args, out)
        except KeyboardInterrupt:
            out.flush()
    if not args.csv and not args.no_histograms:
        lines = out.totals.render()
        if lines:
            print("latency histograms over the whole run:\n" + "\n".join(lines))
    return 0
