"""One reader for every named kstat family, made from its row of the kstat table (:mod:`zfsmon.metrics.kstats`).

For a :class:`~zfsmon.metrics.kstats.KstatFamily` it gives what each
platform needs: the pure parsers of the four shapes (Linux ``/proc/spl``,
FreeBSD ``sysctl``, illumos ``kstat -p``, zfs-fuse's folder;
:mod:`zfsmon.sources.kstat.text` reads the text), the collectors, doctor's
line, the sniffer and the reader of saved dumps. A family's module keeps only
its ``SOURCE`` record and the names older code imports.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import time
from typing import Callable, ClassVar, Dict, List, Mapping, Optional, Sequence, Type

from zfsmon.host import Check, Host, run_probe
from zfsmon.metrics.kstats import FREEBSD, FUSE, FUSE_ROOT, ILLUMOS, LINUX, KstatFamily
from zfsmon.model import Entity, ParseError, Record, Sample
from zfsmon.sources.base import Clock, Collector
from zfsmon.sources.child import StreamCollector
from zfsmon.sources.fields import FieldWatch
from zfsmon.sources.kstat import text as kstat_text
from zfsmon.sources.kstat.text import CommandCollector, KstatFileCollector, KstatPBlock, KstatTable
from zfsmon.sources.spec import TextKind

#: why a host with zfs-fuse installed may show no kstats folder
FUSE_HINT = "zfs-fuse kstats appear under /zfs-kstat only if it exists before the daemon starts and a pool exists"


def _drop(name: str, prefix: str) -> str:
    """``name`` without ``prefix`` (a name that is only the prefix, or lacks it, stays as it is)."""
    return name[len(prefix):] if prefix and name.startswith(prefix) and len(name) > len(prefix) else name


class KstatReader:
    """Everything zfsmon does with one kstat family, driven by its table row."""

    def __init__(self, family: KstatFamily) -> None:
        self.family = family
        self.name = family.name
        self.linux, self.freebsd = family.place(LINUX), family.place(FREEBSD)
        self.illumos, self.fuse = family.place(ILLUMOS), family.place(FUSE)
        self.entity = Entity(family.kind, family.entity)
        split = family.split
        self.split_entity = Entity(split.kind, split.name) if split else None
        module, _inst, kname = (self.illumos or "::").split(":")
        self._illumos_module, self._illumos_name = module, kname
        self._illumos_line = re.compile(rf"^{re.escape(module)}:\d+:{re.escape(kname)}:\S+\t") if self.illumos \
            else None
        #: the collector class of the family's zfs-fuse folder (constructed with the folder and a clock)
        self.fuse_class: Type[StatDirCollector] = type(f"{family.label}StatDirCollector", (StatDirCollector,),
                                                       {"reader": self, "__module__": __name__})

    # --- one table -> samples ---------------------------------------------------------------------------------

    def to_samples(self, table: KstatTable, ts: float, source: str, where: str = "") -> List[Sample]:
        """The family's sample (and, with a split, the second entity's when it has any statistic)."""
        fam = self.family
        for stat, what in fam.excludes.items():
            if stat in table.strings:
                raise ParseError(where or source, None, f"{what} ({table.strings[stat]}), not the {fam.name} kstat")
        if fam.required and not any(k in table.values for k in fam.required):
            need = f"neither {' nor '.join(fam.required)}" if len(fam.required) > 1 else f"no {fam.required[0]}"
            raise ParseError(where or source, None, f"no {fam.label} statistics ({need})")
        main: Dict[str, float] = {}
        side: Dict[str, float] = {}
        split_prefix = fam.split.prefix if fam.split else ""
        for name, v in table.values.items():
            short = _drop(name, split_prefix)
            if short != name:
                side[short] = v
            else:
                main[_drop(name, fam.drop_prefix)] = v
        out = [Sample(ts, self.entity, main, source=source)]
        if side and self.split_entity is not None:
            out.append(Sample(ts, self.split_entity, side, source=source))
        return out

    # --- pure parsers -----------------------------------------------------------------------------------------

    def parse_linux(self, text: str, ts: float, source: Optional[str] = None, where: Optional[str] = None
                    ) -> List[Sample]:
        """``cat /proc/spl/kstat/zfs/NAME``."""
        where = where or self.linux or self.name
        return self.to_samples(kstat_text.parse_proc_table(text, where), ts, source or self.name, where)

    def parse_freebsd(self, text: str, ts: float, source: Optional[str] = None, where: str = "sysctl"
                      ) -> List[Sample]:
        """``sysctl -q kstat.zfs.misc.NAME`` (other sysctl lines are ignored)."""
        return self.to_samples(kstat_text.parse_sysctl(text, self.family.sysctl_prefix, where), ts,
                               source or self.name, where)

    def illumos_block(self, block: KstatPBlock, ts: float, source: str, where: str) -> List[Sample]:
        """One interval of ``kstat -p`` output: the family's samples, none when the block lacks the kstat."""
        table = block.find(self._illumos_name, self._illumos_module)
        if table is None:
            return []
        return self.to_samples(kstat_text.kstat_p_table(table), ts, source, where)

    def parse_illumos(self, text: str, ts: float, source: Optional[str] = None, where: str = "kstat -p",
                      interval: Optional[float] = None) -> List[Sample]:
        """``kstat -p zfs:0:NAME [INTERVAL]`` or a wider ``kstat -p zfs:::`` capture.

        Each interval block becomes one reading. A block stamped by ``-T u`` uses
        that time; otherwise block *i* is at ``ts + i * interval`` (or all at
        ``ts`` when the interval is unknown). A capture cut short still yields the
        statistics it holds.
        """
        out: List[Sample] = []
        for blk, bts in kstat_text.timed_blocks(text, ts, where, interval):
            out.extend(self.illumos_block(blk, bts, source or self.name, where))
        if not out:
            raise ParseError(where, None, f"no {self._illumos_module}:*:{self._illumos_name} statistics in kstat "
                             "output")
        return out

    def parse_stat_files(self, files: Mapping[str, str], ts: float, source: Optional[str] = None,
                         where: Optional[str] = None) -> List[Sample]:
        """zfs-fuse's one-file-per-statistic folder, already read into ``{name: content}``."""
        where = where or self.fuse or self.name
        return self.to_samples(kstat_text.parse_stat_files(files, where), ts, source or self.name, where)

    # --- collectors -------------------------------------------------------------------------------------------
    # Each collector has a FieldWatch of its own: the statistics it has no row for, and those that come or go
    # while it runs, are said once in its run (zfsmon.sources.fields).

    def _watched(self, parse: Callable[..., List[Sample]]) -> kstat_text.TextParser:
        """A collector's parser: ``parse``'s samples and what its :class:`FieldWatch` says of them."""
        watch = FieldWatch(self.name)
        return lambda t, ts, n, w: watch.watched(list(parse(t, ts, n, w)))

    def linux_collector(self, path: Optional[str] = None, clock: Clock = time.time) -> KstatFileCollector:
        """Reads ``/proc/spl/kstat/zfs/NAME`` each poll."""
        return KstatFileCollector(self.name, path or self.linux, self._watched(self.parse_linux), clock)

    def freebsd_collector(self, clock: Clock = time.time) -> CommandCollector:
        """Runs ``sysctl -q kstat.zfs.misc.NAME`` each poll."""
        return CommandCollector(self.name, ["sysctl", "-q", self.freebsd], self._watched(self.parse_freebsd), clock)

    def illumos_collector(self, interval: float = 1.0, clock: Clock = time.time) -> StreamCollector:
        """One persistent ``kstat -p zfs:0:NAME INTERVAL``; each printed block is one reading."""
        watch = FieldWatch(self.name)
        return kstat_text.kstat_p_collector(
            self.name, self.illumos, interval,
            lambda blk, ts: watch.watched(list(self.illumos_block(blk, ts, self.name, "kstat -p"))), clock)

    def fuse_collector(self, directory: Optional[str] = None, clock: Clock = time.time) -> StatDirCollector:
        """Reads zfs-fuse's folder of the kstat each poll."""
        return self.fuse_class(directory, clock)

    def collector_for_host(self, interval: float = 1.0, fuse_dir: Optional[str] = None,
                           linux_path: Optional[str] = None, platform: Optional[str] = None) -> Optional[Collector]:
        """The collector this machine supports, or None when it has no such kstat we can read."""
        plat = platform or sys.platform
        if plat.startswith("linux"):
            linux = linux_path or self.linux
            if linux and os.path.exists(linux):
                return self.linux_collector(linux)
            fuse = fuse_dir or self.fuse
            if self.fuse and fuse and os.path.isdir(fuse):
                return self.fuse_collector(fuse)
            return None
        if plat.startswith("freebsd"):
            return self.freebsd_collector() if self.freebsd else None
        if plat.startswith("sunos"):
            return self.illumos_collector(interval) if self.illumos else None
        return None

    def make_collector(self, host: Host, interval: float, pools: Sequence[str]) -> Collector:
        """After :meth:`check_host` found the kstat (if it vanishes, the reader says so as it polls)."""
        found = self.collector_for_host(interval, platform=host.system.lower())
        if found is not None:
            return found
        return self.fuse_collector() if self.fuse else self.linux_collector()

    # --- doctor's line ----------------------------------------------------------------------------------------

    def check_host(self, host: Host) -> Check:
        """Doctor's line: where this host's kstat is, or why there is none."""
        fam, name = self.family, self.name
        if host.system == "Linux":
            if self.linux and os.path.exists(self.linux):
                return Check(name, True, self.linux)
            if self.fuse and os.path.isdir(self.fuse):
                return Check(name, True, f"{self.fuse}/ ({len(os.listdir(self.fuse))} files, zfs-fuse)")
            if not self.fuse and FUSE in fam.absent and os.path.isdir(FUSE_ROOT):
                return Check(name, False, fam.absent[FUSE])
            if self.fuse and shutil.which("zfs-fuse"):
                return Check(name, False, FUSE_HINT)
            if not self.linux:
                return Check(name, False, f"no {name} kstat on Linux")
            return Check(name, False, f"no {self.linux} ({fam.absent[LINUX]})" if LINUX in fam.absent
                         else f"no {self.linux}")
        if host.system == "FreeBSD" and self.freebsd:
            cp = run_probe(["sysctl", "-n", f"{fam.sysctl_prefix}{fam.probe}"])
            ok = bool(cp and cp.returncode == 0)
            return Check(name, ok, f"sysctl {self.freebsd}" if ok else f"sysctl {self.freebsd} missing")
        if host.system == "SunOS" and self.illumos:
            cp = run_probe(["kstat", "-p", f"{self.illumos}:{fam.probe}"])
            ok = bool(cp and cp.returncode == 0 and cp.stdout.strip())
            return Check(name, ok, f"kstat -p {self.illumos}" if ok else f"kstat {self.illumos} not readable")
        platform = {"SunOS": ILLUMOS}.get(host.system, host.system.lower())
        return Check(name, False, fam.absent.get(platform, f"no known {fam.label} kstats on {host.system}"))

    # --- saved dumps (`zfsmon parse` / `zfsmon import`) ---------------------------------------------------------

    def looks_like(self, text: str) -> bool:
        """A Linux dump holding one of the family's marks, its sysctl lines, or its ``kstat -p`` lines."""
        fam = self.family
        if any(kstat_text.looks_like_proc(text, s) for s in fam.excludes):
            return False
        if self.linux and any(kstat_text.looks_like_proc(text, s) for s in fam.marks_or_required):
            return True
        prefix = fam.sysctl_prefix
        return any((prefix and ln.startswith(prefix)) or (self._illumos_line and self._illumos_line.match(ln))
                   for ln in kstat_text.head(text))

    def parse_dumps(self, text: str, source: str, interval: Optional[float] = None) -> List[Record]:
        """One or more saved dumps. Linux dumps are timed by their kstat snaptime (seconds since boot, relative;
        :func:`zfsmon.sources.kstat.text.timed_proc_dumps`), the others by ``interval`` (1 s if not given). The
        statistics zfsmon has no row for, and those that came or went between dumps, are notes
        (:class:`~zfsmon.sources.fields.FieldWatch`)."""
        return FieldWatch(self.name, source).watched(self._dumps(text, source, interval))

    def _dumps(self, text: str, source: str, interval: Optional[float]) -> List[Record]:
        head = kstat_text.head(text)
        if head and kstat_text.HEADER_RE.match(head[0]):
            return kstat_text.timed_proc_dumps(
                text, source, interval, lambda dump, ts, where: list(self.parse_linux(dump, ts, self.name, where)))
        prefix = self.family.sysctl_prefix
        if prefix and any(ln.startswith(prefix) for ln in head):
            out: List[Record] = []
            for i, dump in enumerate(kstat_text.split_sysctl_dumps(text)):
                out.extend(self.parse_freebsd(dump, i * (interval or 1.0), self.name, f"{source} (dump {i + 1})"))
            return out
        if self.illumos:
            return list(self.parse_illumos(text, 0.0, self.name, source, interval or 1.0))
        raise ParseError(source, None, f"not a {self.name} kstat dump")

    def text_kind(self, name: str, what: str, log: str) -> TextKind:
        """The saved-text kind of the family's dumps (``zfsmon parse``/``import``): ``what`` they are, and the
        ``log`` file of the example loop."""
        where = [f"Linux {self.linux}" if self.linux else "", "FreeBSD sysctl" if self.freebsd else "",
                 "illumos kstat -p" if self.illumos else ""]
        example = f"while sleep 10; do cat {self.linux}; done > {log}" if self.linux else ""
        return TextKind(name, f"{what}: {', '.join(w for w in where if w)}", self.looks_like, self.parse_dumps,
                        example)


class StatDirCollector(Collector):
    """Reads a zfs-fuse kstat folder each poll (:class:`~zfsmon.sources.kstat.text.StatDir`: each statistic held,
    and opened afresh by its inode).

    The folder exists only while zfs-fuse runs with a pool imported; its
    absence is an error event, and polling goes on.
    """

    reads_in_poll = True
    #: the family it reads (each family's :attr:`KstatReader.fuse_class` sets it)
    reader: ClassVar[KstatReader]

    #: polls between fresh listings of the folder: statistics that appeared, and ones that went (a held one
    #: stays readable until then; one that cannot be opened forces a listing at once)
    RELIST_EVERY = 60

    def __init__(self, directory: Optional[str] = None, clock: Clock = time.time) -> None:
        super().__init__(clock)
        self.name = self.reader.name
        self.directory = directory or self.reader.fuse
        self._dir = kstat_text.StatDir(self.directory)
        self._polls = 0
        self._watch = FieldWatch(self.name)

    def _read(self) -> Dict[str, str]:
        self._polls += 1
        try:
            return self._dir.read(relist=self._polls % self.RELIST_EVERY == 0)
        except FileNotFoundError:  # a statistic (or the folder) went away: list again
            return self._dir.read(relist=True)

    def poll(self) -> List[Record]:
        ts = self.clock()
        try:
            files = self._read()
            records: List[Record] = list(self.reader.parse_stat_files(files, ts, self.name, self.directory))
        except (OSError, ParseError) as exc:
            self._dir.close()  # a restarted daemon is a new mount: list it afresh
            return [self._error(f"{self.name}: {exc}")]
        self._ok()
        return self._watch.watched(records)

    def stop(self) -> None:
        self._dir.close()
