"""Which parser reads a captured text: the text kinds of ``zfsmon import`` and ``zfsmon parse``.

People keep logs of ``zpool iostat -v 5``, ``cat arcstats`` loops, arcstat and
pgbench output. Each source that reads such a text declares it as a
:class:`~zfsmon.sources.spec.TextKind` in its ``SOURCE`` record: a cheap
``sniff`` that looks at the text's shape (headers, key prefixes) and its own
pure parser. :data:`KINDS` is derived from the records in their order, and
``detect`` returns the first kind whose sniff accepts the text, so the more
specific kinds come first.

Captures without printed times get relative timestamps from their parser
(interval counts, the kstat's monotonic ``snaptime``); :func:`is_relative`
tells callers to place them on the wall clock, :func:`shift` moves them.
"""

from __future__ import annotations

import dataclasses
from typing import Dict, Iterable, List, Mapping, Optional, Sequence

from zfsmon.model import ParseError, Record
from zfsmon.sources.spec import EPOCH_MIN, ParseOptions, Source, TextKind, discover


def kinds_of(sources: Sequence[Source]) -> Dict[str, TextKind]:
    """Every source's text kinds by name, in detection order."""
    return {k.name: k for s in sources for k in s.kinds}


#: in detection order
KINDS: Dict[str, TextKind] = kinds_of(discover())


def detect(text: str, kinds: Optional[Mapping[str, TextKind]] = None) -> Optional[TextKind]:
    """The first kind whose sniff accepts the text, or None."""
    return next((k for k in (KINDS if kinds is None else kinds).values() if k.sniff(text)), None)


def get(name: str) -> TextKind:
    key = name.lower().replace("_", "-")
    if key not in KINDS:
        raise KeyError(name)
    return KINDS[key]


def parse(text: str, source: str, kind: Optional[str] = None, interval: Optional[float] = None,
          options: Optional[ParseOptions] = None) -> List[Record]:
    """Detect (or take) the kind and parse, with the options it takes. Raises ParseError for an unknown or
    unreadable text."""
    tk = get(kind) if kind else detect(text)
    if tk is None:
        raise ParseError(source, None, "not a format zfsmon knows (try one of: " + ", ".join(KINDS) + ")")
    return tk.read(text, source, interval, options)


def is_relative(records: List[Record]) -> bool:
    """True when the timestamps are offsets (the capture printed no times)."""
    return bool(records) and max(r.ts for r in records) < EPOCH_MIN


def shift(records: Iterable[Record], delta: float) -> List[Record]:
    """Move records in time (relative or virtual-clock captures onto the wall clock)."""
    return [dataclasses.replace(r, ts=r.ts + delta) for r in records]
