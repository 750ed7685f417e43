"""A recording that another process resumed (a soak after a reboot writes on into the same file): the timeline's
axis says where, with ``R``, beside the run boundaries and marks, and the empty stretch before it stays empty."""

from __future__ import annotations

from rich.console import Console

from zfsmon import names
from zfsmon.analysis.restart import is_resumed
from zfsmon.model import Entity, Event, EventKind, Kind, Sample
from zfsmon.store import Recorder
from zfsmon.views.top import timeline
from zfsmon.views.top.panels.base import ViewOptions
from zfsmon.views.top.panels.whole_run import TIMELINE_LABEL
from zfsmon.views.top.panels.whole_run import timeline as draw

T0 = 1_767_225_600.0
PGBENCH = Entity(Kind.WORKLOAD, names.PGBENCH)


def _session(path: str, start: float, seconds: int, tps: float) -> None:
    clock = start - 1
    with Recorder(path, {"argv": "zfsmon top --soak"}, clock=lambda: clock) as rec:
        for i in range(seconds):
            rec.write([Sample(start + i, PGBENCH, {"tps": tps}, interval=1.0)])


def _axis(tl: timeline.Timeline, width: int = 120) -> str:
    console = Console(width=width, no_color=True, record=True)
    console.print(draw(tl, None, ViewOptions(), width, live=False))
    lines = console.export_text().splitlines()
    return next(ln for ln in lines if ln[TIMELINE_LABEL:].strip().startswith(("─", "|", "R", "━", "M")))


def test_the_resumed_recording_shows_r_where_the_second_session_began(tmp_path) -> None:
    path = str(tmp_path / "soak.zfsmon")
    _session(path, T0, 300, 100.0)
    _session(path, T0 + 600, 300, 40.0)  # ten minutes later: a reboot's gap
    tl = timeline.read_timeline(path)
    resumed = [e for e in tl.events if is_resumed(e)]
    assert [round(e.ts) for e in resumed] == [round(T0 + 599)]
    axis = _axis(tl)
    cells = axis[TIMELINE_LABEL:].rstrip()
    assert cells.count("R") == 1, axis
    # 900 s across the row: the second session starts two thirds along
    assert abs(cells.index("R") / len(cells) - 599 / 899) < 0.03, axis
    [(_name, _label, _unit, _fixed, vals)] = [r for r in timeline.rows(tl, T0, T0 + 899, len(cells))
                                             if r[0] == "tps"]
    gap = vals[int(len(vals) * 0.4):int(len(vals) * 0.6)]
    assert gap and all(v is None for v in gap), vals  # nothing was read while the guest was down


def test_other_info_events_and_a_fresh_recording_show_no_r(tmp_path) -> None:
    tl = timeline.Timeline(1.0)
    tl.event(Event(T0, EventKind.INFO, names.RECORDING_STARTED + ": zfsmon top", source="record"))
    tl.event(Event(T0 + 1, EventKind.INFO, "arcstats: a field is new"))
    tl.event(Event(T0 + 1, EventKind.INFO, names.RECORDING_RESUMED + ": an imported log's text", source="import"))
    assert tl.events == []
    tl.event(Event(T0 + 2, EventKind.INFO, names.RECORDING_RESUMED + ": zfsmon top", source="record"))
    assert [e.ts for e in tl.events] == [T0 + 2]
