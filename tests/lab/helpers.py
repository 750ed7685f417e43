"""Small workload helpers for lab tests: real I/O on the lab's dataset, nothing simulated."""

from __future__ import annotations

import os
import random
import subprocess
import threading
import time
from typing import IO, Dict, List

from tests.conftest import wait_until


def write_file(path: str, mb: int, chunk: int = 1 << 20) -> None:
    block = os.urandom(chunk)  # incompressible, so it really reaches the vdevs
    with open(path, "wb") as f:
        for _ in range(mb * (1 << 20) // chunk):
            f.write(block)
        f.flush()
        os.fsync(f.fileno())


def collect_lines(stream: IO[str], lines: List[str]) -> threading.Thread:
    """Append each line of a child's output to ``lines`` as it is printed (a thread; join it once the child exited)."""
    def read() -> None:
        for line in stream:
            lines.append(line)
    t = threading.Thread(target=read, daemon=True)
    t.start()
    return t


def drop_host_caches() -> None:
    """FUSE file pages live in the host page cache; drop them so reads reach zfs-fuse."""
    subprocess.run(["sync"], check=False)
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


def random_reads(path: str, count: int, size: int = 8192, seed: int = 1) -> float:
    """Seconds taken by `count` random preads of `size` bytes."""
    rnd = random.Random(seed)
    fd = os.open(path, os.O_RDONLY)
    try:
        blocks = os.fstat(fd).st_size // size
        t0 = time.monotonic()
        for _ in range(count):
            os.pread(fd, size, rnd.randrange(blocks) * size)
        return time.monotonic() - t0
    finally:
        os.close(fd)


def interval_leaf_ops(pool: str, leaves: List[str], workload, interval: int = 1, timeout: float = 120.0
                      ) -> Dict[str, float]:
    """Sum of read+write ops/s per leaf over the interval reports of `zpool iostat -v` taken from before
    `workload` runs until every leaf has shown ops in one (bounded by `timeout`).

    The first report averages since import and is skipped. Written data reaches the leaves only when ZFS
    syncs the transaction group, which on a busy machine can come after any fixed window: so this waits for
    the condition, not for a number of reports. A deliberately naive reader, independent of zfsmon's parser,
    so that it can check it.
    """
    proc = subprocess.Popen(["zpool", "iostat", "-v", pool, str(interval)], stdout=subprocess.PIPE, text=True)
    names = {os.path.basename(x) for x in leaves}
    totals: Dict[str, float] = {n: 0.0 for n in names}
    reports = [0]

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            parts = line.split()
            if parts[:1] == ["pool"]:
                reports[0] += 1
            elif reports[0] > 1 and parts and os.path.basename(parts[0]) in names and len(parts) == 7:
                totals[os.path.basename(parts[0])] += _num(parts[3]) + _num(parts[4])

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        workload()
        wait_until(lambda: all(v > 0 for v in totals.values()), timeout,
                   lambda: f"zpool iostat interval reports with ops on every leaf of {pool} (so far {totals})",
                   step=0.5)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        reader.join(timeout=30)
    return dict(totals)


def _num(text: str) -> float:
    mult = {"K": 1024.0, "M": 1024.0 ** 2, "G": 1024.0 ** 3}  # ZFS prints powers of 1024
    if text == "-":
        return 0.0
    if text[-1] in mult:
        return float(text[:-1]) * mult[text[-1]]
    return float(text)
