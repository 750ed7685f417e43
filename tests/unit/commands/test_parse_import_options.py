"""`zfsmon parse` and `zfsmon import` through the real CLI: the kind named the same way (--kind NAME), the
`zpool iostat` options (--iostat-flags, --topology, a zpool status among import's files), notes for what was
guessed, and `parse --list` derived from the sources' TextKind records. Our own OpenZFS captures (issue 12)."""

from __future__ import annotations

import csv

import pytest

from tests.conftest import TEST_DATA
from zfsmon.cli import main
from zfsmon.commands import parse as parse_cmd
from zfsmon.model import EventKind, Kind
from zfsmon.sources import detect
from zfsmon.store import Recording

V21, V23 = TEST_DATA / "openzfs-2.1", TEST_DATA / "openzfs-2.3"
TREE = {("pool", "zguest", None, ""),
        ("vdev", "mirror-0", "data", "zguest"), ("leaf", "virtio-data0", "data", "mirror-0"),
        ("leaf", "virtio-data1", "data", "mirror-0"),
        ("vdev", "mirror-1", "data", "zguest"), ("leaf", "virtio-data2", "data", "mirror-1"),
        ("leaf", "virtio-data3", "data", "mirror-1"),
        ("vdev", "virtio-log0", "log", "zguest"), ("vdev", "virtio-cache0", "cache", "zguest")}


@pytest.fixture(autouse=True)
def _no_host_pools(monkeypatch):
    """This machine may run zfs-fuse pools: the tests say what the host has (nothing, unless a test sets it)."""
    monkeypatch.setattr(parse_cmd, "host_text", lambda argv: None)


def _rows(out: str):
    return list(csv.DictReader(out.splitlines()))


def _tree_of(rows):
    return {(r["kind"], r["name"], r["role"] or None, r["parent"]) for r in rows}


# --- the kind: --kind NAME on both commands ------------------------------------------------------------------

def test_parse_takes_kind_as_an_option_and_detects_headerless_rows(capsys):
    path = str(V23 / "zpool-iostat-vHp.txt")
    assert main(["parse", path]) == 0
    detected = capsys.readouterr()
    assert main(["parse", "--kind", "zpool-iostat", path]) == 0
    named = capsys.readouterr()
    assert named.out == detected.out and _tree_of(_rows(named.out)) == TREE
    assert "note: zpool-iostat-vHp.txt: pool zguest: vdev tree guessed" in named.err


def test_parse_old_positional_kind_still_works_with_a_note(capsys):
    path = str(V23 / "zpool-iostat-vHp.txt")
    assert main(["parse", "zpool_iostat", path]) == 0
    out = capsys.readouterr()
    assert _tree_of(_rows(out.out)) == TREE
    assert "use `zfsmon parse --kind zpool-iostat FILE`" in out.err


@pytest.mark.parametrize("argv", [["parse", "--kind", "nosuchkind", "x"], ["import", "--kind", "nosuchkind", "x",
                                                                            "--into", "y"]])
def test_unknown_kind_is_one_line_naming_the_kinds(argv, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--kind: unknown kind 'nosuchkind'" in err and "zpool-iostat" in err


def test_parse_unknown_positional_kind_and_bad_usage(capsys, tmp_path):
    assert main(["parse", "nosuchkind", str(V23 / "zpool-iostat-vH.txt")]) == 2
    assert "unknown kind 'nosuchkind'" in capsys.readouterr().err
    assert main(["parse", "a", "b", "c"]) == 2
    assert "zfsmon parse [--kind NAME] FILE" in capsys.readouterr().err


@pytest.mark.parametrize("cmd", ["parse", "import"])
def test_undetected_text_names_the_real_option(cmd, tmp_path, capsys):
    log = tmp_path / "x.log"
    log.write_text("hello world\n")
    argv = [cmd, str(log)] + (["--into", str(tmp_path / "x.zfsmon")] if cmd == "import" else [])
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "name one with --kind NAME" in err
    # the option the message names exists on this command
    with pytest.raises(SystemExit):
        main([cmd, "--help"])
    assert "--kind NAME" in capsys.readouterr().out


def test_list_shows_every_kind_with_its_example_command(capsys):
    assert main(["parse", "--list"]) == 0
    out = capsys.readouterr().out
    for k in detect.KINDS.values():
        assert f"{k.name:<14} {k.help}" in out
        assert k.example, f"kind {k.name} has no example command"
        assert f"e.g. {k.example}" in out


# --- zpool iostat options -----------------------------------------------------------------------------------

def test_parse_with_topology_file_says_where_the_tree_came_from(capsys):
    assert main(["parse", str(V21 / "zpool-iostat-vHpl.txt"), "--topology", str(V21 / "zpool-status.txt")]) == 0
    out = capsys.readouterr()
    assert _tree_of(_rows(out.out)) == TREE
    assert "tree guessed" not in out.err
    assert f"note: zpool-iostat-vHpl.txt: pool zguest: roles and parents from {V21 / 'zpool-status.txt'}" in out.err
    assert "16 values read as `zpool iostat -H -l`" in out.err


def test_parse_iostat_flags_are_the_users_word(capsys):
    assert main(["parse", str(V21 / "zpool-iostat-vHpl.txt"), "--iostat-flags=-vHpl"]) == 0
    rows = _rows(capsys.readouterr().out)
    assert {r["metric"] for r in rows} >= {"total_wait_read", "scrub_wait"}
    assert main(["parse", str(V21 / "zpool-iostat-vHpl.txt"), "--iostat-flags", "q"]) == 0
    rows = _rows(capsys.readouterr().out)
    assert "syncq_read_pend" in {r["metric"] for r in rows} and "total_wait_read" not in {r["metric"] for r in rows}
    with pytest.raises(SystemExit):
        main(["parse", str(V21 / "zpool-iostat-vHpl.txt"), "--iostat-flags", "zz"])
    assert "not zpool iostat flag letters" in capsys.readouterr().err


def test_parse_asks_this_host_only_through_its_zpool_status(monkeypatch, capsys):
    status = (V23 / "zpool-status.txt").read_text()
    asked = []

    def host(argv):
        asked.append(list(argv))
        return status

    monkeypatch.setattr(parse_cmd, "host_text", host)
    assert main(["parse", str(V23 / "zpool-iostat-vw.txt")]) == 0
    out = capsys.readouterr()
    assert asked == [["zpool", "status", "zguest"]] and _tree_of(_rows(out.out)) == TREE
    assert "roles and parents from zpool status on this host" in out.err


def test_import_with_zpool_status_among_the_logs(tmp_path, capsys):
    rec = tmp_path / "h.zfsmon"
    assert main(["import", str(V23 / "zpool-iostat-vHplq.txt"), str(V23 / "zpool-status.txt"), "--into", str(rec),
                 "--interval", "2"]) == 0
    err = capsys.readouterr().err
    assert "zpool-status.txt: zpool status: gives the roles and parents of the other logs" in err
    with Recording.open(str(rec)) as r:
        ents = {(e.kind.value, e.name, e.role.value if e.role else None, e.parent) for e in r.entities()
                if e.kind in (Kind.POOL, Kind.VDEV, Kind.LEAF)}
        assert ents == TREE
        assert "zpool-status.txt" in r.meta["notes"] and "(zpool-iostat)" in r.meta["imported_from"]
        log = [s for s in r.samples() if s.entity.name == "virtio-log0" and s.source != "status"]
        # `virtio-log0	1892352	501424128	0	11	2270	827805	...` then `... 1720320	501596160	0	2	0	206366`
        assert [(s.metrics["alloc"], s.metrics["write_ops"], s.metrics["write_bw"]) for s in log] == \
            [(1892352, 11, 827805), (1720320, 2, 206366)]
        assert [s.since_boot for s in log] == [True, False]


def test_import_guess_is_a_note_an_event_and_metadata(tmp_path, capsys):
    rec = tmp_path / "g.zfsmon"
    assert main(["import", str(V21 / "zpool-iostat-vr.txt"), "--into", str(rec), "--interval", "2"]) == 0
    err = capsys.readouterr().err
    assert "note: zpool-iostat-vr.txt: pool zguest: vdev tree guessed from the histogram tables" in err
    with Recording.open(str(rec)) as r:
        assert "vdev tree guessed" in r.meta["notes"]
        notes = [e for e in r.events(kinds=[EventKind.INFO]) if "note" in e.data]
        assert len(notes) == 1 and "log, cache" in notes[0].text
        ents = {(e.kind.value, e.name, e.role.value if e.role else None, e.parent) for e in r.entities()}
        assert ents == TREE


def test_import_y_said_keeps_the_first_report_as_an_interval(tmp_path):
    plain, said = tmp_path / "p.zfsmon", tmp_path / "y.zfsmon"
    log = str(V23 / "zpool-iostat-vy.txt")
    assert main(["import", log, "--into", str(plain), "--interval", "2"]) == 0
    assert main(["import", log, "--into", str(said), "--interval", "2", "--iostat-flags", "y"]) == 0
    with Recording.open(str(plain)) as p, Recording.open(str(said)) as y:
        assert [s.since_boot for s in p.samples() if s.entity.name == "zguest"] == [True, False]
        assert [s.since_boot for s in y.samples() if s.entity.name == "zguest"] == [False, False]
        assert y.meta["iostat_flags"] == "y"


def test_import_with_kind_named_still_takes_the_status_file_for_the_tree(tmp_path, capsys):
    rec = tmp_path / "k.zfsmon"
    assert main(["import", "--kind", "zpool-iostat", str(V21 / "zpool-iostat-vw.txt"), str(V21 / "zpool-status.txt"),
                 "--into", str(rec), "--interval", "2"]) == 0
    assert "roles and parents from" in capsys.readouterr().err
    with Recording.open(str(rec)) as r:
        assert {(e.kind.value, e.name, e.role.value if e.role else None, e.parent) for e in r.entities()} == TREE
        assert "(zpool-iostat)" in r.meta["imported_from"] and "zpool-status.txt (" not in r.meta["imported_from"]


def test_iostat_flags_on_another_kind_are_said_to_be_ignored(capsys):
    assert main(["parse", str(V23 / "arcstats.after"), "--iostat-flags", "l"]) == 0
    assert "--iostat-flags does not apply to arcstats (ignored)" in capsys.readouterr().err


def test_a_status_beside_a_headed_capture_gives_roles_the_text_lacks(tmp_path, capsys):
    """zfs-fuse prints its SLOG as a plain top-level row (no `logs` heading): its zpool status says it is one."""
    fuse = TEST_DATA / "zfsfuse"
    rec = tmp_path / "f.zfsmon"
    assert main(["import", str(fuse / "zpool_iostat_-v_ziocap.txt"), str(fuse / "zpool_status_ziocap.txt"),
                 "--into", str(rec), "--interval", "1"]) == 0
    assert f"roles and parents from {fuse / 'zpool_status_ziocap.txt'}" in capsys.readouterr().err
    with Recording.open(str(rec)) as r:
        roles = {e.name: e.role.value for e in r.entities() if e.kind == Kind.VDEV}
    assert roles["loop5"] == "log" and roles["loop6"] == "cache" and roles["mirror-0"] == "data"
    assert main(["parse", str(fuse / "zpool_iostat_-v_ziocap.txt")]) == 0
    rows = _rows(capsys.readouterr().out)
    assert {r["role"] for r in rows if r["name"] == "loop5"} == {"data"}  # what the text alone says
