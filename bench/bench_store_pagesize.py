"""What SQLite's page size would do to a recording: bytes per value, the chunk table's unused page space, and
the write-ahead log's bytes per committed interval (disk writes the recorder adds to the host), for --ticks
of bench_store's synthetic pool written one interval per commit. The Recorder is unchanged: only the page
size of the new file differs (set on SQLite's connection before the file is laid out).

    python3 bench/bench_store_pagesize.py --ticks 1800 --page-size 4096 16384
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

from bench_store import Synthetic  # noqa: E402

from zfsmon.store import Recorder, Recording, schema  # noqa: E402


def one(ticks: int, page_size: int, path: str) -> str:
    connect = sqlite3.connect

    def with_page_size(*a, **kw):
        c = connect(*a, **kw)
        c.execute(f"PRAGMA page_size={page_size}")  # no effect on a file that has pages already
        return c
    for s in ("", "-wal", "-shm"):
        if os.path.exists(path + s):
            os.remove(path + s)
    g = Synthetic()
    wal = 0
    sqlite3.connect = with_page_size
    try:
        with Recorder(path, {}) as rec:
            rec._db.execute("PRAGMA synchronous=OFF")
            rec._db.execute("PRAGMA wal_autocheckpoint=0")  # let the log grow, to count what each commit adds
            whole = ticks // schema.CHUNK_TICKS * schema.CHUNK_TICKS
            for i in range(ticks):
                rec.write(g.tick(i, text=False)[0])
                if i == whole - 1:
                    wal = os.path.getsize(path + "-wal")
            rec._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        sqlite3.connect = connect
    with Recording.open(path) as r:
        values = r.value_count()
    db = sqlite3.connect(path)
    pages, unused = db.execute("SELECT sum(pgsize), sum(unused) FROM dbstat WHERE name = 'chunk'").fetchone()
    got = db.execute("PRAGMA page_size").fetchone()[0]
    db.close()
    size = os.path.getsize(path)
    os.remove(path)
    return (f"| {got} | {size / values:.2f} | {pages / 2**20:.2f} MiB, {100 * unused / pages:.0f} % unused | "
            f"{wal / whole / 1024:.1f} KiB |")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ticks", type=int, default=1800)
    ap.add_argument("--page-size", type=int, nargs="+", default=[4096, 16384])
    ap.add_argument("--dir", default="/var/tmp/zfsmon-bench")
    args = ap.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    print(f"Command: `python3 bench/bench_store_pagesize.py {' '.join(sys.argv[1:])}`\n")
    print("| page size | bytes/value | chunk table pages | WAL bytes per commit |\n|---|---|---|---|")
    for ps in args.page_size:
        print(one(args.ticks, ps, os.path.join(args.dir, f"pagesize-{ps}.zfsmon")), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
