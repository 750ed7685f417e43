"""The record each source module declares (``SOURCE = Source(...)``), and :func:`discover`, which finds them.

A source is one thing zfsmon reads. Its module says, in one place, what it
is (``name``, ``help``), whether this host has it (``check``: the line
``zfsmon doctor`` prints, whose detail is also why ``record`` skips it), how
to run it (``collector``), which saved texts it reads (``kinds``, for
``zfsmon parse`` and ``zfsmon import``) and which metrics table family
(``zfsmon/metrics/<family>.py``) documents its values, which entity kinds it
``feeds``, and the ``aliases`` older recordings name it by. ``name`` is what its
samples and events carry as ``source``.

Every list of sources is derived from these records: the host registry
(:mod:`zfsmon.sources.registry`: ``record``/``top``/``exporter`` sources and
doctor's source lines), the text kinds (:mod:`zfsmon.sources.detect`) and the
sources table of docs/metrics.md. Adding a source is adding a module
(docs/contributing.md).

The derived modules call :func:`discover` (the registry when its whole list is
first asked for, detect when it is imported), and it imports every module of
the package and its subpackages, them included. That is safe because a derived module holds no
``SOURCE`` and no source module imports a derived one
(tests/unit/sources/test_source_records.py checks it). A command that names its
sources imports only their modules (:data:`zfsmon.sources.registry.MODULES`).
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from typing import Callable, List, Optional, Sequence, Tuple

from zfsmon.host import Check, Host
from zfsmon.model import Kind, Record, with_intervals
from zfsmon.sources.base import Collector

#: seconds at or above this (1973) are epoch times; below it they are offsets (elapsed time, time since boot)
EPOCH_MIN = 1e8

#: (text, source, interval) -> records, or ParseError. ``source`` names the text (a file name) in errors.
Parse = Callable[[str, str, Optional[float]], List[Record]]
#: the probed host -> doctor's line for this source (``ok`` False: the detail says why it cannot run here)
CheckHost = Callable[[Host], Check]
#: (host, interval in seconds, pools; empty: all) -> the running collector
MakeCollector = Callable[[Host, float, Sequence[str]], Collector]


@dataclass(frozen=True)
class ParseOptions:
    """What the user (or the files around a capture) says about it beyond its own text.

    Every kind gets the same options and takes what applies to it (a kind
    names them in ``TextKind.options`` so the commands can say which ones it
    ignores): ``flags``, the letters of the command that printed the text
    (``zpool iostat``: ``l``/``q`` for headerless columns, ``y`` for a first
    report that is an interval); ``beside``, (name, text) of the other files
    given with it, the user's ``--topology`` file first (``zpool iostat`` looks
    there for a ``zpool status`` capture); ``host_text``, asked with a command's
    argv, returns that command's output on this host or None (only a kind that
    needs it calls it, e.g. ``zpool status`` for a pool of the capture's name).
    """

    flags: str = ""
    beside: Tuple[Tuple[str, str], ...] = ()
    host_text: Optional[Callable[[Sequence[str]], Optional[str]]] = None


#: (text, source, interval, options) -> records, or ParseError
ParseWith = Callable[[str, str, Optional[float], ParseOptions], List[Record]]


@dataclass(frozen=True)
class TextKind:
    """A saved text format: a cheap ``sniff`` of its shape, and the source's own pure parser.

    ``parse`` returns relative timestamps (below :data:`EPOCH_MIN`) when the
    text printed no times; ``zfsmon import`` then places them on the clock.
    """

    name: str
    help: str
    sniff: Callable[[str], bool]
    parse: Parse
    #: a command whose output is such a text (shown in docs/metrics.md and `zfsmon parse --list`)
    example: str = ""
    #: the parser that also takes :class:`ParseOptions` (None: ``parse`` ignores them)
    parse_with: Optional[ParseWith] = None
    #: which :class:`ParseOptions` fields ``parse_with`` uses (``"flags"``, ``"beside"``, ``"host_text"``)
    options: Tuple[str, ...] = ()
    #: its rows are figures over an interval (``zpool iostat``'s ops/s): given no interval, each takes the one
    #: the capture's printed times show (:func:`zfsmon.model.with_intervals`), as a live collector's would
    interval_rows: bool = False

    def __str__(self) -> str:
        return self.name

    def read(self, text: str, source: str, interval: Optional[float], options: Optional[ParseOptions] = None
             ) -> List[Record]:
        """Parse with the options this kind takes (the others are ignored: see ``options``); interval rows
        without an interval get the one their printed times show (``interval_rows``)."""
        if self.parse_with is not None:
            records = self.parse_with(text, source, interval, options or ParseOptions())
        else:
            records = self.parse(text, source, interval)
        return with_intervals(records) if self.interval_rows and interval is None else records


@dataclass(frozen=True)
class Source:
    """One source, declared by its module as ``SOURCE``.

    ``order``: sources are listed, started and their text kinds tried in
    ascending order (then by name). Detection takes the first kind whose
    sniff accepts a text, so a source with a more specific sniff gets a lower
    order. A source with a ``collector`` must have a ``check``; one without
    (saved tool output, pgbench's text, PostgreSQL statistics the workload
    layer collects) is parse-only or documentation-only.
    """

    name: str
    help: str
    order: int
    check: Optional[CheckHost] = None
    collector: Optional[MakeCollector] = None
    kinds: Tuple[TextKind, ...] = ()
    family: Optional[str] = None
    #: the entity kinds its samples are about: the dashboard shows its errors on the panels of these kinds
    feeds: Tuple[Kind, ...] = ()
    #: other names its records carry in recordings made by other zfsmon versions (``Sample.source``,
    #: ``Event.source``); what this version writes is ``name``
    aliases: Tuple[str, ...] = ()
    #: started when the user names no sources; False: only when named (another source gives the same samples by
    #: default, e.g. ``zpool-influxdb`` beside ``zpool``)
    default: bool = True

    def __post_init__(self) -> None:
        if self.collector is not None and self.check is None:
            raise ValueError(f"source {self.name}: a collector needs a check (doctor's line, record's reason)")

    def unavailable(self, host: Host) -> Optional[str]:
        """None when this source can run on ``host``, else the reason (the detail doctor prints)."""
        if self.check is None:
            return "it has no collector"
        chk = self.check(host)
        return None if chk.ok else chk.detail


def discover(package: str = "zfsmon.sources") -> Tuple[Source, ...]:
    """Every ``SOURCE`` record of the modules in ``package`` and its subpackages (a family's modules, e.g.
    ``zfsmon.sources.zpool``), by (order, name).

    Imports each module; an import error is the caller's (a broken source
    must not quietly vanish from every list, which is why this does not use
    :func:`pkgutil.walk_packages`: it passes over a subpackage that fails to
    import). Two records with one name, or two kinds with one name, are an
    error.
    """
    found: List[Source] = []
    for name in _modules_under(package):
        record = getattr(importlib.import_module(name), "SOURCE", None)
        if record is None:
            continue
        if not isinstance(record, Source):
            raise TypeError(f"{name}.SOURCE is a {type(record).__name__}, not a Source record")
        found.append(record)
    found.sort(key=lambda s: (s.order, s.name))
    _unique("source", [s.name for s in found])
    _unique("text kind", [k.name for s in found for k in s.kinds])
    return tuple(found)


def _modules_under(package: str) -> List[str]:
    """The dotted names of the modules and subpackages below ``package``, depth first, each imported (a
    subpackage's own path is only known once it is)."""
    names: List[str] = []
    for info in pkgutil.iter_modules(importlib.import_module(package).__path__, f"{package}."):
        names.append(info.name)
        if info.ispkg:
            names.extend(_modules_under(info.name))
    return names


def _unique(what: str, names: List[str]) -> None:
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ValueError(f"{what} name(s) declared twice: {', '.join(twice)}")
