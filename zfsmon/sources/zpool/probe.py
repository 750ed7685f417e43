"""Which ``zpool iostat`` flags does this machine's ``zpool`` accept?

OpenSolaris-era zpools (zfs-fuse, old illumos) know only ``[-T u|d] [-v]``;
ZoL 0.7+ added ``-l`` (waits), ``-q`` (queues), ``-p`` (exact numbers), ``-H``,
``-y``.  Version strings are unreliable across platforms, so we ask: run
``zpool iostat FLAG`` (no interval: one since-import report, instant) and look
for the usage error an unknown flag produces.  :func:`decide` is the pure
decision over those results; :func:`probe_flags` runs the commands.
"""

from __future__ import annotations

import re
import subprocess
import time
from dataclasses import dataclass, field
from typing import Dict, List, Mapping, Optional, Sequence

__all__ = ["ProbeResult", "IostatFlags", "CANDIDATES", "decide", "probe_flags", "is_usage_error"]

#: what we try, each as extra argv for ``zpool iostat``; "" is the baseline (does zpool work at all?)
CANDIDATES: Dict[str, Sequence[str]] = {
    "": (),
    "T": ("-T", "u"),
    "l": ("-l",),
    "q": ("-q",),
    "lq": ("-l", "-q"),
    "p": ("-p",),
    "H": ("-H",),
    "y": ("-y", "1", "1"),  # -y is only meaningful (and on some versions only valid) with an interval
}

_USAGE_RE = re.compile(r"invalid option|unrecognized option|illegal option|unknown option|^usage:", re.I | re.M)


@dataclass(frozen=True)
class ProbeResult:
    returncode: int
    stdout: str = ""
    stderr: str = ""


def is_usage_error(result: ProbeResult) -> bool:
    """An unknown flag: zpool prints ``invalid option 'l'`` and its usage, exit status 2."""
    return bool(_USAGE_RE.search(result.stderr) or (result.returncode != 0 and _USAGE_RE.search(result.stdout)))


@dataclass(frozen=True)
class IostatFlags:
    """The accepted flags; :meth:`argv` is the richest combination the collector should use."""

    accepted: frozenset = field(default_factory=frozenset)
    #: why nothing could be probed (zpool missing, daemon down), else empty
    problem: str = ""

    def has(self, key: str) -> bool:
        return key in self.accepted

    def argv(self) -> List[str]:
        """``-T u`` (real timestamps), ``-l -q`` (if both together work, else whichever does), ``-p`` (exact)."""
        out: List[str] = []
        if self.has("T"):
            out += ["-T", "u"]
        if self.has("lq"):
            out += ["-l", "-q"]
        elif self.has("l"):
            out.append("-l")
        elif self.has("q"):
            out.append("-q")
        if self.has("p"):
            out.append("-p")
        return out


def decide(results: Mapping[str, ProbeResult]) -> IostatFlags:
    """Pure: probe results by CANDIDATES key -> the accepted flags.

    If the baseline (plain ``zpool iostat``) fails for another reason than
    usage, nothing is known: flags are not trusted and the problem is kept,
    so the collector falls back to the classic format and reports why.
    """
    base = results.get("")
    if base is None:
        return IostatFlags(problem="baseline `zpool iostat` was not probed")
    if base.returncode != 0 and not _no_pools(base):
        err = (base.stderr or base.stdout).strip().splitlines()
        return IostatFlags(problem=err[-1] if err else f"zpool iostat: exit status {base.returncode}")
    accepted = set()
    for key, res in results.items():
        if key and not is_usage_error(res) and (res.returncode == 0 or _no_pools(res)):
            accepted.add(key)
    return IostatFlags(frozenset(accepted))


def _no_pools(res: ProbeResult) -> bool:
    return "no pools available" in (res.stderr + res.stdout)


def probe_flags(zpool: str = "zpool", timeout: float = 15.0, keys: Optional[Sequence[str]] = None) -> IostatFlags:
    """Run each candidate once, all at the same time, and :func:`decide`.

    Each is mostly the start of a process (``-y`` also waits out its interval), so one after another they add up
    before `zfsmon iostat`'s first report; side by side, they cost the slowest one. ``timeout`` bounds them all.
    """
    wanted = list(keys if keys is not None else CANDIDATES)
    results: Dict[str, ProbeResult] = {}
    running: Dict[str, subprocess.Popen[str]] = {}
    reaped = set()
    try:
        for key in wanted:
            argv = [zpool, "iostat", *CANDIDATES[key]]
            try:
                running[key] = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                                stdin=subprocess.DEVNULL, text=True)
            except FileNotFoundError:
                return IostatFlags(problem=f"{zpool}: command not found")
            except OSError as exc:
                results[key] = ProbeResult(-1, "", str(exc))
        deadline = time.monotonic() + timeout
        for key, proc in running.items():
            try:
                out, err = proc.communicate(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired as exc:
                results[key] = ProbeResult(-1, "", str(exc))
                continue
            reaped.add(key)
            results[key] = ProbeResult(proc.returncode, out, err)
    finally:
        for key, proc in running.items():  # a probe past the deadline, or every one when zpool is missing
            if key not in reaped:
                proc.kill()
                proc.communicate()
    return decide({key: results[key] for key in wanted if key in results})
