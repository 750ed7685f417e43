"""Faults on the guest's kernel OpenZFS, live in CI: the fault matrix's `io` and `cache` rows, short.

The scenario (tests/guest/scenario.sh, its last step) runs bench/guest_faults.sh with 40 s faults: a fio
workload recorded by `zfsmon soak --fio --interval 2` while `zinject -e io` fails half of one mirror leaf's reads
(virtio-data1) and is cleared with `zpool clear`, then while the host pulls the cache device out of the machine
over QMP (zfsmon.lab.guest.hostctl) and puts it back, and `zpool online` takes it back. The whole matrix, with
the checksum, slow-disk, pulled-data-disk and suspended-pool rows, is `bench/bench_guest_faults.py` (on demand;
its committed OpenZFS 2.4 run is checked by tests/unit/test_guest_faults_openzfs24.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Dict, List

import pytest

from zfsmon.analysis.faults import matrix_summary
from zfsmon.analysis.findings import analyze
from zfsmon.model import Role
from zfsmon.store import Recording

pytestmark = pytest.mark.guest

INTERVAL = 2.0  # guest_faults.sh's recording interval


@pytest.fixture(scope="module")
def faults(guest_out: Path) -> Dict[str, object]:
    out = guest_out / "faults"
    log = (guest_out / "faults.log").read_text()
    assert log.rstrip().endswith("faults exit 0"), log[-3000:]
    with Recording.open(out / "faults.zfsmon") as rec:
        samples, events = list(rec.samples()), rec.events()
        ents = {e.key: e for e in rec.entities()}
    summary = matrix_summary(samples, events, (out / "steps.tsv").read_text())
    return {"out": out, "samples": samples, "events": events, "ents": ents, "summary": summary,
            "rows": {r["row"]: r for r in summary["rows"]}}


def _texts(row: dict) -> List[str]:
    return [t.split(": ", 1)[1] for t in row["events"]]


def test_both_rows_ran_and_the_recorder_stopped_cleanly(faults) -> None:
    assert sorted(faults["rows"]) == ["cache", "io"]
    assert not (faults["out"] / "failed.txt").exists(), (faults["out"] / "failed.txt").read_text()
    assert (faults["out"] / "stop.txt").read_text().rstrip().endswith("exit 0")
    # every host request answered ok: the cache device's unplug and plug
    assert [p.name for p in sorted((faults["out"].parent / "hostctl").glob("*.ok"))] == ["1.ok", "2.ok"]


def test_read_errors_are_counted_on_the_leaf_they_were_injected_on(faults) -> None:
    io = faults["rows"]["io"]
    ents = faults["ents"]
    leaf = ents["leaf:zguest/virtio-data1"]
    assert (leaf.role, leaf.parent, leaf.pool) == (Role.DATA, "mirror-0", "zguest")
    errs = io["leaf_errors"]
    assert {d for d in errs if "data" in d} == {"zguest/virtio-data1"}, errs  # of the data leaves, that one only
    assert errs["zguest/virtio-data1"]["read_errors"] > 0
    said = [t for t in _texts(io) if t.startswith("pool zguest: virtio-data1 has ")]
    assert said and all(" read errors" in t for t in said), _texts(io)
    # `zpool clear` at the row's end: the counts say so in words too (seen by the next `zpool status` run)
    everything = [e.text for e in faults["events"]]
    assert any(t.startswith("pool zguest: virtio-data1 errors cleared (had ") for t in everything), everything


def test_the_pulled_cache_device_is_seen_gone_and_back(faults) -> None:
    cache = faults["rows"]["cache"]
    dev = faults["ents"]["vdev:zguest/virtio-cache0"]
    assert dev.role == Role.CACHE
    gone = [t for t in _texts(cache) if t.startswith("pool zguest: virtio-cache0 ") and t.endswith("(was ONLINE)")]
    assert gone, _texts(cache)
    assert "pool zguest: virtio-cache0 ONLINE (was " + gone[0].split()[3] + ")" in _texts(cache), _texts(cache)
    # the pool itself stays ONLINE: only the block devices' list told the status source to look at once
    assert "zguest" not in cache["states"], cache["states"]


def test_no_interval_lost_and_no_absurd_rate(faults) -> None:
    summary = faults["summary"]
    assert summary["bad_rates"] == [], summary["bad_rates"]
    for row in summary["rows"]:
        assert row["longest_gap_s"] is not None and row["longest_gap_s"] <= 3 * INTERVAL, row
        assert row["recovery_s"] is not None and row["recovery_s"] <= 2 * INTERVAL, row


def test_analyze_names_each_incident(faults) -> None:
    report = analyze(faults["samples"], faults["events"])
    texts = [f.text for f in report.topic("incident")]
    assert any(t.startswith("virtio-data1 (data leaf of zguest/mirror-0) ") and " read errors counted" in t
               for t in texts), texts
    assert any(t.startswith("virtio-cache0 (cache device of zguest) ") for t in texts), texts
    assert all(f.numbers["end"] is not None for f in report.topic("incident")), texts
