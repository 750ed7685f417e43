"""Dashboard benchmark: CPU per refresh with 64 leaves and every panel, and opening a 24-hour recording in replay.

Refresh: the real Textual app (headless, ``App.run_test``) at 160x50 and at 80x24, fed every second's
records of bench_store's synthetic pool (8 raidz2 vdevs x 8 leaves = 64 leaves, log, cache, ARC, L2ARC
and ZIL kstats, pgbench) plus a block-device counter sample per leaf (so the goose-egg check runs), with
a 5-minute window already full. One refresh = draining one interval's records into the model and
redrawing every panel, as the 1 Hz timer does; CPU is process time (all threads: the findings' worker too), and the
main thread's own (``time.thread_time``) is split into feeding the model, the panels' text, and Textual's drawing.

Replay: ``Recording.open`` + the cursor's first window (5 min) + the first full redraw, on a 24-hour
recording written by bench/bench_store.py (or made here with --make-hours).

    python3 bench/bench_top.py --recording /var/tmp/zfsmon-top-bench/day.zfsmon
    python3 bench/bench_top.py --breakdown      # the refresh's own parts, without Textual
    python3 bench/bench_top.py --totals --leaves 64,256 --windows 300,3600   # the tree: rates vs totals mode

Breakdown: the model and the panels of one refresh at 160x50 timed alone (feeding a second's records, building
each panel's text) and the findings analysis the app runs every ``FINDINGS_EVERY_S`` in a worker thread, with
its share per 1 Hz refresh; what the refresh's CPU holds beyond these is Textual's drawing.

Totals: the vdev tree's text in rates mode and in totals mode (``r``), and feeding a second's records, with the
pool at 64 or 256 leaves (8 or 32 raidz2 vdevs of 8) and a full 5-minute or 1-hour window, outside Textual.

Prints a markdown section for docs/performance.md.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import sys
import time
from typing import Dict, List

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_store import POOL, T0, Synthetic  # noqa: E402

from zfsmon import gcpolicy  # noqa: E402
from zfsmon.model import Entity, Kind, Record, Role, Sample  # noqa: E402
from zfsmon.store import Recorder, Recording  # noqa: E402
from zfsmon.views.top import panels  # noqa: E402
from zfsmon.views.top.app import FINDINGS_CPU_SHARE, FINDINGS_EVERY_S, LiveFeed, TopApp, findings_every  # noqa: E402
from zfsmon.views.top.replay import ReplayCursor  # noqa: E402
from zfsmon.views.top.state import TopState  # noqa: E402
from zfsmon.views.top.timeline import read_timeline  # noqa: E402


class WithDevices(Synthetic):
    """bench_store's pool plus /proc/diskstats-like counters for every leaf."""

    def __init__(self, vdevs: int = 8) -> None:
        super().__init__()
        if vdevs != 8:  # bench_store's pool with another count of 8-leaf raidz2 vdevs (their names stay unique)
            data = [(Entity(Kind.POOL, POOL, POOL), 0)]
            for v in range(vdevs):
                vname = f"raidz2-{v}"
                data.append((Entity(Kind.VDEV, vname, POOL, Role.DATA, POOL), 1))
                data += [(Entity(Kind.LEAF, f"sd{v}x{d}", POOL, Role.DATA, vname), 2) for d in range(8)]
            self.rows = data + [(e, depth) for e, depth in self.rows if e.role in (Role.LOG, Role.CACHE)]
        self.leaves = [e.name for e, depth in self.rows if depth == 2]
        self.dev = {n: [0, 0, 0, 0, 0, 0] for n in self.leaves}

    def records(self, i: int) -> List[Record]:
        out: List[Record] = list(self.tick(i, text=False)[0])
        for n in self.leaves:
            c = self.dev[n]
            for j, step in enumerate((300, 200, 300 * 65536, 200 * 65536, 300 * 4_000_000, 200 * 3_000_000)):
                c[j] += self.rnd.randrange(0, step)
            out.append(Sample(T0 + i, Entity(Kind.DEVICE, n), {
                "reads": c[0], "writes": c[1], "read_bytes": c[2], "write_bytes": c[3], "read_time_ns": c[4],
                "write_time_ns": c[5]}, source="diskstats"))
        return out


async def _refresh_cpu(size, warm: int, n: int) -> dict:
    syn = WithDevices()
    feed = LiveFeed()
    info = panels.HeaderInfo("bench", "Linux", "synthetic", "/var/tmp/x.zfsmon", "live", started=T0)
    clock = [T0 + warm]
    app = TopApp(TopState(300), info, 1.0, feed=feed, clock=lambda: clock[0])
    per_tick = 0
    async with app.run_test(size=size) as pilot:
        for i in range(warm):  # a full window, as after five minutes of running
            recs = syn.records(i)
            per_tick = len(recs)
            app.state.feed(recs)
        app.redraw()
        await pilot.pause()
        batches = [syn.records(i) for i in range(warm, warm + n)]  # made before timing: not the dashboard's cost
        collector = _Collections()
        gc.callbacks.append(collector)
        parts = {"feed": 0.0, "text": 0.0, "drawing": 0.0}  # the main thread's CPU (time.thread_time) by part
        cpu0, wall0, main0 = time.process_time(), time.perf_counter(), time.thread_time()
        for i, batch in zip(range(warm, warm + n), batches):
            clock[0] = T0 + i
            feed.sink(batch)
            t0 = time.thread_time()
            app._pump()  # the records into the model
            t1 = time.thread_time()
            app.redraw()  # the panels' text, handed to the widgets
            t2 = time.thread_time()
            await pilot.pause()  # Textual draws what changed (the line panels' strips included)
            t3 = time.thread_time()
            parts["feed"] += t1 - t0
            parts["text"] += t2 - t1
            parts["drawing"] += t3 - t2
        cpu, wall, main = time.process_time() - cpu0, time.perf_counter() - wall0, time.thread_time() - main0
        gc.callbacks.remove(collector)
    return {"size": f"{size[0]}x{size[1]}", "records": per_tick, "cpu_ms": 1000 * cpu / n, "wall_ms": 1000 * wall / n,
            "redraws": app.redraws, "gc_ms": 1000 * collector.cpu / n, "gc_runs": dict(sorted(collector.runs.items())),
            "main_ms": 1000 * main / n, **{f"{k}_ms": 1000 * v / n for k, v in parts.items()}}


class _Collections:
    """The cyclic collector's runs per generation and their CPU time (all threads': the findings run in a worker),
    from ``gc.callbacks``."""

    def __init__(self) -> None:
        self.runs: Dict[int, int] = {}
        self.cpu = 0.0
        self._start = 0.0

    def __call__(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._start = time.process_time()
        else:
            self.cpu += time.process_time() - self._start
            self.runs[info["generation"]] = self.runs.get(info["generation"], 0) + 1


def make_recording(path: str, hours: float) -> None:
    syn = Synthetic()
    with Recorder(path, {"host": "bench", "interval": "1"}) as rec:
        for i in range(int(hours * 3600)):
            rec.write(syn.tick(i)[0])


def _paint_times(app: TopApp) -> List[float]:
    """When the app hands the screen an update, appended to the list returned (Textual's ``App._display``, which a
    headless app calls too, then returns without writing to a terminal). A key's latency is the time to the last
    of them: the pilot's own wall time per press is not, as ``Pilot.press`` and ``pause`` each wait for the
    process to be idle in 20 ms sleeps (textual._wait.wait_for_idle: at least three per press and pause)."""
    stamps: List[float] = []
    display = app._display

    def stamped(screen, renderable) -> None:
        if renderable is not None:
            stamps.append(time.perf_counter())
        display(screen, renderable)

    app._display = stamped  # type: ignore[method-assign]
    return stamps


def check_window(path: str, state: TopState) -> int:
    """The cursor's window (``state``) against the recording read afresh; the number of series compared.

    Every sparkline series equals the one of a cursor opened at the same time on the file anew (no kept states, no
    block read around an earlier position), pgbench's TPS line equals the recorded readings, and the findings are
    the same. A difference ends the bench: a timing of a wrong screen says nothing."""
    lo, hi = state.window()
    with Recording.open(path) as rec:
        fresh = ReplayCursor(rec, state.window_s).move_to(hi)
        wrong = [k for k in sorted(set(state.series) | set(fresh.series)) if state.spark(*k) != fresh.spark(*k)]
        tps = state.spark("workload", "tps")  # the dashboard keeps pgbench's line under "workload"
        raw = [(s.ts, float(s.metrics["tps"])) for s in rec.samples(entity_keys=["workload:pgbench"], start=lo, end=hi)]
        if not tps or tps != raw:
            wrong.append(("workload:pgbench", "tps: not the recorded readings"))
        if state.findings_job()().render() != fresh.findings_job()().render():
            wrong.append(("findings", "differ"))
    if wrong:
        raise SystemExit(f"replay at {hi:.0f}: the window differs from the recording read afresh: {wrong[:5]}")
    return len(state.series)


async def _open_replay(path: str) -> dict:
    t0 = time.perf_counter()
    c0 = time.process_time()
    rec = Recording.open(path)
    cur = ReplayCursor(rec, 300.0)
    t_cursor = time.perf_counter() - t0
    info = panels.HeaderInfo("bench", "", "", path, "replay")
    app = TopApp(cur.state, info, cur.interval, replay=cur)
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.pause()
        t_first = time.perf_counter() - t0
        c_check = time.process_time()
        checked = [check_window(path, cur.state)]  # at the end of the run (day 7 of a week), before the steps
        c_check = time.process_time() - c_check
        while app.timeline is None:  # the whole-run timeline's read (a worker thread) done: steps measured alone
            await pilot.pause(0.05)
        t_rest = time.perf_counter()
        while not cur.back_ready():  # as a user who looks before stepping: the app prepares while the cursor rests
            await pilot.pause(0.05)
        t_rest = time.perf_counter() - t_rest
        steps = []
        paints = _paint_times(app)
        for _ in range(10):  # the first step back builds the states of the next (replay.BACK_STRIDE)
            paints.clear()
            s0, c1 = time.perf_counter(), time.process_time()
            await pilot.press("left")
            await pilot.pause()
            if not paints:
                raise SystemExit("a step back updated nothing on screen: no latency to measure")
            # the pilot's own wall time, its CPU, and the key's latency: from sending it to the last screen update
            steps.append((time.perf_counter() - s0, time.process_time() - c1, max(paints) - s0))
        t_step = sum(w for w, _c, _p in steps) / len(steps)
        c1 = time.process_time()
        checked.append(check_window(path, cur.state))  # after 10 steps back: kept states and forward steps
        c_check += time.process_time() - c1
        s0 = time.perf_counter()
        await pilot.press("home")
        await pilot.pause()
        t_home = time.perf_counter() - s0
    cpu = time.process_time() - c0 - c_check
    lo, hi = cur.start, cur.end
    rec.close()
    t0, c0 = time.perf_counter(), time.process_time()  # the timeline panel's read (the app does it in a worker)
    tl = read_timeline(path)
    tl_wall, tl_cpu = time.perf_counter() - t0, time.process_time() - c0
    return {"hours": (hi - lo) / 3600, "bytes": os.path.getsize(path), "cursor_s": t_cursor, "first_paint_s": t_first,
            "step_s": t_step, "step_first_s": steps[0][0], "step_first_cpu_s": steps[0][1],
            "step_first_paint_s": steps[0][2], "step_rest_paint_s": sum(p for _w, _c, p in steps[1:]) / 9,
            "step_rest_s": sum(w for w, _c, _p in steps[1:]) / 9,
            "step_rest_cpu_s": sum(c for _w, c, _p in steps[1:]) / 9,
            "home_s": t_home, "cpu_s": cpu, "samples_in_window": len(cur.state.samples),
            "timeline_s": tl_wall, "timeline_cpu_s": tl_cpu, "timeline_every": tl.every, "rest_s": t_rest,
            "series_checked": checked}


def breakdown(rounds: int = 20) -> Dict[str, float]:
    """Milliseconds of CPU per part of a refresh at 160x50 (the widths the app gives its panels there), outside
    Textual; ``findings`` is one run of the app's findings job, ``findings_per_refresh`` its share at 1 Hz. Under
    the app's collector policy (:mod:`zfsmon.gcpolicy`), as the app runs them."""
    with gcpolicy.fewer_collections():
        return _breakdown(rounds)


def _breakdown(rounds: int) -> Dict[str, float]:
    syn = WithDevices()
    st = TopState(300)
    for i in range(300):
        st.feed(syn.records(i))
    o = panels.ViewOptions(pool=st.pools()[0])
    batches = [syn.records(i) for i in range(300, 300 + rounds)]
    out: Dict[str, float] = {}
    c = time.process_time()
    for b in batches:
        st.feed(b)
    out["feed"] = (time.process_time() - c) / rounds * 1000
    tree_w, side_w = 95, 62  # 160x50: the tree takes 3/5 of the width, the side column 2/5
    parts = {"tree": lambda: panels.tree_lines(st, o, tree_w), "arc": lambda: panels.arc(st, o, side_w, False),
             "zil": lambda: panels.zil(st, o, side_w, False), "workload": lambda: panels.workload(st, o, side_w, False),
             "read path": lambda: panels.read_path(st, o, side_w, False)}
    for name, build in parts.items():
        c = time.process_time()
        for _ in range(rounds):
            build()
        out[name] = (time.process_time() - c) / rounds * 1000
    runs = 3
    c = time.process_time()
    for _ in range(runs):
        st.findings_job()()
    out["findings"] = (time.process_time() - c) / runs * 1000
    out["findings_per_refresh"] = out["findings"] / findings_every(out["findings"] / 1000)  # the app's pace
    return out


def tree_modes(leaves: int, window_s: float, rounds: int = 10) -> Dict[str, float]:
    """CPU of the vdev tree's text (the whole tree, 160x50's width) in rates and in totals mode, and of feeding a
    second's records, with a full window of ``window_s`` at ``leaves`` leaves; milliseconds per 1 Hz refresh."""
    syn = WithDevices(vdevs=leaves // 8)
    st = TopState(window_s)
    c = time.process_time()
    for i in range(int(window_s)):
        st.feed(syn.records(i))
    fill = time.process_time() - c
    batches = [syn.records(i) for i in range(int(window_s), int(window_s) + rounds)]
    out: Dict[str, float] = {"records": float(len(batches[0])), "held": float(len(st.samples)), "fill_s": fill}
    with gcpolicy.fewer_collections():
        feed, text = 0.0, {"rates": 0.0, "totals": 0.0}
        for b in batches:
            c = time.process_time()
            st.feed(b)
            feed += time.process_time() - c
            for mode in ("rates", "totals"):
                o = panels.ViewOptions(pool=st.pools()[0], totals=mode == "totals")
                c = time.process_time()
                panels.tree_lines(st, o, 95)
                text[mode] += time.process_time() - c
    out["feed"] = feed / rounds * 1000
    out.update({mode: v / rounds * 1000 for mode, v in text.items()})
    lo = st.window()[0]
    out["covered_s"] = st.now - max(lo, min(s.ts for s in st.samples))  # what MAX_SAMPLES leaves of the window
    return out


def _print_tree_modes(leaves: List[int], windows: List[float], rounds: int) -> None:
    print("| leaves | window | records per second | samples held (seconds of the window) | feeding a second "
          "| tree text, rates mode | tree text, totals mode |")
    print("|---|---|---|---|---|---|---|")
    for n in leaves:
        for w in windows:
            r = tree_modes(n, w, rounds)
            print(f"| {n} | {w / 60:g} min | {r['records']:.0f} | {r['held']:,.0f} ({r['covered_s']:.0f} s of it) "
                  f"| {r['feed']:.1f} ms | {r['rates']:.1f} ms | {r['totals']:.1f} ms |", flush=True)


def _print_refresh(results: List[dict]) -> None:
    print("| screen | records per interval | CPU per refresh | of it, the cyclic collector (runs per generation) "
          "| of it, the main thread: feed + text + drawing | wall per refresh | share of one core at 1 Hz |")
    print("|---|---|---|---|---|---|---|")
    for r in results:
        runs = ", ".join(f"{n} x gen {g}" for g, n in r["gc_runs"].items()) or "none"
        print(f"| {r['size']} | {r['records']} | {r['cpu_ms']:.1f} ms | {r['gc_ms']:.1f} ms ({runs}) | "
              f"{r['main_ms']:.1f} ms: {r['feed_ms']:.1f} + {r['text_ms']:.1f} + {r['drawing_ms']:.1f} | "
              f"{r['wall_ms']:.1f} ms | {r['cpu_ms'] / 10:.1f}% |")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--recording", help="a 24-hour recording (bench/bench_store.py --keep makes one)")
    ap.add_argument("--make-hours", type=float, default=24.0, help="hours to generate when --recording is missing")
    ap.add_argument("--dir", default="/var/tmp/zfsmon-top-bench")
    ap.add_argument("--refreshes", type=int, default=60)
    ap.add_argument("--refresh-only", action="store_true", help="only the refresh loop (no replay, no recording)")
    ap.add_argument("--breakdown", action="store_true", help="only the refresh's parts outside Textual, timed alone")
    ap.add_argument("--totals", action="store_true",
                    help="only the vdev tree's text in rates and totals mode (and feeding), per --leaves and --windows")
    ap.add_argument("--leaves", default="64,256", help="--totals: leaf counts, multiples of 8 (default 64,256)")
    ap.add_argument("--windows", default="300,3600", help="--totals: full windows, seconds (default 300,3600)")
    ap.add_argument("--rounds", type=int, default=10, help="--totals: refreshes timed per case (default 10)")
    args = ap.parse_args()
    if args.totals:
        print(f"Command: `python3 bench/bench_top.py {' '.join(sys.argv[1:])}`\n")
        _print_tree_modes([int(x) for x in args.leaves.split(",")], [float(x) for x in args.windows.split(",")],
                          args.rounds)
        return 0
    if args.breakdown:
        got = breakdown()
        print(f"Command: `python3 bench/bench_top.py {' '.join(sys.argv[1:])}`\n")
        print("| part of a 160x50 refresh (64 leaves) | CPU |\n|---|---|")
        for name, ms in got.items():
            label = {"findings": f"findings analysis (one run; the app runs it every {FINDINGS_EVERY_S:g} s, or less "
                                 f"often where that would take more than {FINDINGS_CPU_SHARE:.0%} of a core)",
                     "findings_per_refresh": "findings analysis, its share per 1 Hz refresh",
                     "feed": "model: a second's 143 records fed"}.get(name, f"panel text: {name}")
            print(f"| {label} | {ms:.1f} ms |")
        return 0
    results = [asyncio.run(_refresh_cpu(size, 300, args.refreshes)) for size in ((160, 50), (80, 24))]
    print("## Dashboard\n")
    print(f"Command: `python3 bench/bench_top.py {' '.join(sys.argv[1:])}`\n")
    if args.refresh_only:
        _print_refresh(results)
        return 0
    path = args.recording or os.path.join(args.dir, "day.zfsmon")
    if not os.path.exists(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        make_recording(path, args.make_hours)
    rp = asyncio.run(_open_replay(path))
    _print_refresh(results)
    print(f"\nReplay of a {rp['hours']:.0f}-hour recording ({rp['bytes'] / 2 ** 20:.0f} MiB, 64 leaves at 1 s): "
          f"open + first 5-minute window {rp['cursor_s']:.2f} s, first paint {rp['first_paint_s']:.2f} s; "
          f"a step {rp['step_s'] * 1000:.0f} ms; jump to the start {rp['home_s']:.2f} s "
          f"({rp['samples_in_window']} samples in the window; {' and '.join(map(str, rp['series_checked']))} sparkline series checked "
          "against the file read afresh). The whole-run timeline's read: "
          f"{rp['timeline_s']:.2f} s ({rp['timeline_cpu_s']:.2f} s CPU, {rp['timeline_every']:g} s buckets).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
