"""A fault's figures from its window (zfsmon.analysis.faults): what the matrix benches report per row."""

from __future__ import annotations

from zfsmon.analysis.faults import bad_rates, figures, parse_steps
from zfsmon.metrics.health import STATE_CODES
from zfsmon.model import Entity, Event, EventKind, Kind, Role, Sample

T = 1_800_000_000.0
STEPS = (f"{T + 60:.3f}\tbaseline\tend\n{T + 60:.3f}\tio\tstart\n{T + 100:.3f}\tio\tend\n"
         f"{T + 140:.3f}\tpull\tstart\n{T + 150:.3f}\tpull\tback\n{T + 200:.3f}\tstop\tsent\n"
         f"{T + 210:.3f}\tpull\tend\nnot a line\n{T + 300:.3f}\tcache\tstart\n")
POOL = Entity(Kind.POOL, "zguest")
LEAF = Entity(Kind.LEAF, "virtio-data1", "zguest", Role.DATA, "mirror-0")
JOB = Entity(Kind.WORKLOAD, "fio:disk:read")


def _samples():
    out = []
    for i in range(0, 240, 2):
        t = T + i
        out.append(Sample(t, POOL, {"read_ops": 10.0}, 2.0, source="zpool"))
        out.append(Sample(t, JOB, {"iops": 100.0 if not 60 <= i < 100 else 50.0}, 2.0, source="fio"))
        errors = 0 if i < 64 else min(i - 60, 40) * 10
        state = "DEGRADED" if 140 <= i < 150 else "ONLINE"
        out.append(Sample(t, LEAF, {"read_errors": float(errors), "slow_ios": float(max(0, i - 60)),
                                    "state": float(STATE_CODES[state])}, source="status"))
    return out


def test_steps_give_each_started_and_ended_row_with_its_marks():
    ws = parse_steps(STEPS)
    assert [(w.row, w.start - T, w.end - T) for w in ws] == [("io", 60, 100), ("pull", 140, 210)]
    assert ws[1].marks == (("back", T + 150), ("stop sent", T + 200))


def test_a_windows_figures():
    samples = _samples()
    events = [Event(T + 65, EventKind.INFO, "pool zguest: virtio-data1 has 40 read errors")]
    io = figures(samples, events, parse_steps(STEPS)[0], "zguest")
    assert io.events == ["info: pool zguest: virtio-data1 has 40 read errors"]
    assert io.leaf_errors == {"zguest/virtio-data1": {"read_errors": 400}}
    assert io.workload_ops_before == 100.0 and io.workload_ops_during == 50.0
    assert io.longest_gap_s == 2.0 and io.recovery_s == 2.0
    assert io.slow_ios == {"zguest/virtio-data1": 70 - 0}
    pull = figures(samples, [], parse_steps(STEPS)[1], "zguest")
    assert pull.states == {"zguest/virtio-data1": ["DEGRADED"]}


def test_bad_rates_are_negative_nan_or_absurd_ones():
    ok = Sample(T, POOL, {"read_ops": 5.0}, 1.0, source="zpool")
    assert bad_rates([ok]) == []
    worse = [Sample(T + 1, POOL, {"read_ops": -1.0}, 1.0, source="zpool"),
             Sample(T + 2, POOL, {"read_bytes": float("nan")}, 1.0, source="zpool")]
    assert [(b[1], b[3]) for b in bad_rates([ok, *worse])] == [("read_ops", T + 1), ("read_bytes", T + 2)]
