"""Statistics a source reads that zfsmon has no metrics row for, and ones that came or went: each said once.

Sources read by presence: a statistic the metrics table (:mod:`zfsmon.metrics`) has no row for is recorded
under its own name as a gauge (never turned into a rate), and one missing from a reading is not in it. Neither
stops a collector. :class:`FieldWatch` makes the change known: it looks at the samples a collector (or a saved
capture's reader) produces and says, as one ``info`` event each and once per name in a run, the statistics it
has no row for, the ones a later reading has that an earlier one lacked, and the ones an earlier reading had
that are gone (the module reloaded in another version, a kernel upgrade). The event's ``data`` has ``note``,
so ``zfsmon parse`` and ``import`` print it, and the names under ``fields`` (``kind.metric``).

Pure: samples in, events out; it keeps only each entity's last set of names, so a poll whose names are the
last ones costs one set comparison.
"""

from __future__ import annotations

from typing import Dict, FrozenSet, Iterable, List, Optional, Sequence, Set, Tuple

from zfsmon import metrics
from zfsmon.model import Event, EventKind, Kind, Record, Sample

#: the most names an event's text lists (``data['fields']`` holds them all)
SHOWN = 12

#: the most sets of names kept shared (:attr:`FieldWatch._interned`): entities of one version share one
INTERNED = 64

#: why a statistic comes or goes while zfsmon runs
WHY = "the module reloaded? another version?"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def listed(names: Sequence[str]) -> str:
    """Names for a message: the first :data:`SHOWN` of them, and how many more."""
    more = len(names) - SHOWN
    return ", ".join(names[:SHOWN]) + (f" and {more} more" if more > 0 else "")


def unknown_text(where: str, names: Sequence[str], what: str = "statistic", shown: str = "") -> str:
    """The one wording of "read, but zfsmon has no row for it" (kstat statistics, arcstat and zilstat columns);
    ``shown``: the list as the text gives it (default: the names, the first :data:`SHOWN` of them)."""
    return (f"{where}: {_plural(len(names), what)} zfsmon has no row for, recorded as "
            f"{'a gauge' if len(names) == 1 else 'gauges'}: {shown or listed(names)}")


def _by_kind(pairs: Iterable[Tuple[Kind, str]]) -> Tuple[List[str], str]:
    """(``kind.metric`` names, the text's list: ``l2arc ndev``, ``arc a, b; l2arc ndev``) of (entity kind,
    metric) pairs; the text names the first :data:`SHOWN` of them."""
    groups: Dict[Kind, List[str]] = {}
    for kind, name in sorted(pairs, key=lambda p: (p[0].value, p[1])):
        groups.setdefault(kind, []).append(name)
    full = [f"{k.value}.{n}" for k, ns in groups.items() for n in ns]
    parts: List[str] = []
    room = SHOWN
    for k, ns in groups.items():
        if room > 0:
            parts.append(f"{k.value} {', '.join(ns[:room])}")
        room -= len(ns)
    more = len(full) - SHOWN
    return full, "; ".join(parts) + (f" and {more} more" if more > 0 else "")


class FieldWatch:
    """One collector's (or one capture's) statistics across its readings; see the module text.

    ``where`` starts each event's text (the collector's name, a capture's file name), ``source`` is the events'
    ``source`` (the source record's name). A statistic is gone once two readings of its entity in a row lack it:
    one zfs-fuse read left out as torn (:class:`zfsmon.sources.kstat.text.StatDir`) is no removal.
    """

    def __init__(self, source: str, where: Optional[str] = None, what: str = "statistic") -> None:
        self.source = source
        self.where = where or source
        self.what = what
        self._last: Dict[str, FrozenSet[str]] = {}  # entity key -> the names its readings have
        self._missing: Dict[str, FrozenSet[str]] = {}  # entity key -> names its last reading lacked, not yet gone
        self._told: Set[Tuple[str, Kind, str]] = set()  # (what was said, kind, name): each said once
        self._interned: Dict[FrozenSet[str], FrozenSet[str]] = {}  # one set for the many datasets that share it

    def watched(self, records: Sequence[Record]) -> List[Record]:
        """One reading's ``records``, and after them the events they call for."""
        out: List[Record] = list(records)
        out.extend(self.check(records))
        return out

    def check(self, records: Iterable[Record]) -> List[Event]:
        """The events records call for (usually none): one reading's, or a whole capture's in time order (each
        event is then at the first reading that called for it)."""
        found: Dict[str, List[Tuple[Kind, str]]] = {"unknown": [], "new": [], "gone": []}
        when: Dict[str, float] = {}
        table = metrics.TABLE  # read, not called: a reading's path calls nothing of the metrics module
        for s in records:
            if not isinstance(s, Sample):
                continue
            key = s.entity.key
            names = s.metrics.keys()
            last = self._last.get(key)
            if last is not None and names == last:
                if self._missing:
                    self._missing.pop(key, None)
                continue
            kind = s.entity.kind
            cur = frozenset(names)
            came: FrozenSet[str] = cur
            went: FrozenSet[str] = frozenset()
            if last is not None:
                came, missing = cur - last, last - cur
                went = missing & self._missing.pop(key, frozenset())
                if missing - went:
                    self._missing[key] = missing - went
                self._add(found, when, "new", s.ts, [(kind, n) for n in came if (kind, n) in table])
                self._add(found, when, "gone", s.ts, [(kind, n) for n in went])
            self._add(found, when, "unknown", s.ts, [(kind, n) for n in came if (kind, n) not in table])
            kept = cur | (last - went if last is not None else frozenset())
            if len(self._interned) >= INTERNED:  # names that change reading after reading: no more sharing
                self._interned.clear()
            self._last[key] = self._interned.setdefault(kept, kept)
        out: List[Event] = []
        for told, pairs in found.items():
            if pairs:
                full, shown = _by_kind(set(pairs))
                out.append(self._event(when[told], told, full, shown))
        return out

    def _add(self, found: Dict[str, List[Tuple[Kind, str]]], when: Dict[str, float], told: str, ts: float,
             pairs: List[Tuple[Kind, str]]) -> None:
        """Names to say under ``told`` (those not said yet in this run), first found at ``ts``."""
        fresh = [(k, n) for k, n in pairs if (told, k, n) not in self._told]
        if fresh:
            self._told.update((told, k, n) for k, n in fresh)
            found[told].extend(fresh)
            when.setdefault(told, ts)

    def _event(self, ts: float, told: str, full: List[str], shown: str) -> Event:
        n = _plural(len(full), self.what)
        if told == "unknown":
            text = unknown_text(self.where, full, self.what, shown)
        elif told == "new":
            text = f"{self.where}: {n} an earlier reading did not have, read from now on ({WHY}): {shown}"
        else:
            text = (f"{self.where}: {n} an earlier reading had {'is' if len(full) == 1 else 'are'} gone ({WHY}); "
                    f"the others are read on: {shown}")
        return Event(ts, EventKind.INFO, text, source=self.source, data={"note": text, "change": told, "fields": full})
