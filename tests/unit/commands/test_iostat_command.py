"""`zfsmon iostat`'s table, CSV and operands, on records parsed from real captures."""

from __future__ import annotations

import argparse

import pytest

from tests.conftest import TEST_DATA
from zfsmon.cli import main
from zfsmon.commands.iostat import _Printer, split_operands
from zfsmon.errors import UserError
from zfsmon.model import Sample
from zfsmon.sources.zpool.iostat import parse_text
from zfsmon.sources.zpool.status import parse_status
from zfsmon.views.iostat_text import IostatTable, csv_columns, csv_header, csv_rows

FUSE = TEST_DATA / "zfsfuse"


def _samples(name: str, **kw):
    topo = parse_status((FUSE / "zpool_status_ziocap.txt").read_text())
    return [r for r in parse_text((FUSE / name).read_text(), interval=1.0, topology=topo, **kw)
            if isinstance(r, Sample)]


def test_table_groups_roles_and_prints_numbers_as_zpool_did():
    text = (FUSE / "zpool_iostat_-v_ziocap.txt").read_text()
    lines = IostatTable().render(_samples("zpool_iostat_-v_ziocap.txt"))
    names = [ln.split()[0] for ln in lines[3:-1]]
    # the SLOG gets its `logs` heading although zfs-fuse printed none
    assert names == ["ziocap", "mirror-0", "loop1", "loop2", "mirror-1", "loop3", "loop4", "logs", "loop5",
                     "cache", "loop6"]
    original = {ln.split()[0]: ln.split()[1:] for ln in text.splitlines()[3:-1] if ln.split()[0] != "mirror"}
    for ln in lines[3:-1]:
        toks = ln.split()
        if toks[0] in original:
            assert toks[1:] == original[toks[0]], toks[0]
    assert lines[0].split() == ["capacity", "operations", "bandwidth"]
    assert lines[2] == lines[-1] and set(lines[2]) == {"-", " "}


def test_scripted_and_parsable():
    s = _samples("zpool_iostat_-v_ziocap.txt")
    lines = IostatTable(parsable=True, scripted=True).render(s)
    assert lines[0].split("\t") == ["ziocap", str(776 * 1024), str(245 * 1024 ** 2), "5", "85",
                                    str(round(22.8 * 1024)), str(669 * 1024)]
    assert "logs\t-\t-\t-\t-\t-\t-" in lines and all("\t" in ln for ln in lines)


def test_goose_egg_where_the_device_saw_nothing():
    s = [x for x in _samples("zpool_iostat_-T_u_-v_ziocap_1_4_writes.txt") if x.ts == 1795332272.0]
    table = IostatTable(device_ops={"loop1": 0.0, "loop2": 374.0, "loop3": 0.0})
    rows = {ln.split()[0]: ln.split() for ln in table.render(s)[3:-1]}
    assert rows["loop1"][-1] == "goose"  # ZFS wrote 384 ops/s, the device says 0
    assert rows["loop2"][-1] == "374"
    assert rows["loop3"][-1] == "goose" and rows["loop4"][-1] == "-"  # unknown device
    assert rows["mirror-0"][-1] == "-"  # not a disk
    idle = [x for x in _samples("zpool_iostat_-T_u_-v_ziocap_1_4_writes.txt") if x.ts == 1795332274.0]
    rows = {ln.split()[0]: ln.split() for ln in table.render(idle, with_header=False)[:-1]}
    assert rows["loop1"][-1] == "0"  # both idle: no egg


def test_csv_has_empty_cells_for_missing_values():
    s = _samples("zpool_iostat_-v_ziocap.txt")
    cols = csv_columns(s)
    assert csv_header(cols) == "time,pool,kind,name,role,parent,since_boot,interval,alloc,free,read_ops," \
                               "write_ops,read_bw,write_bw"
    rows = {r.split(",")[3]: r.split(",") for r in csv_rows(s, cols)}
    assert rows["loop1"][4:10] == ["data", "mirror-0", "1", "", "", ""]
    assert rows["loop5"][4] == "log" and rows["loop5"][8] == "0"


def test_printer_starts_a_new_header_per_report_and_skips_since_boot_with_y(capsys):
    args = argparse.Namespace(parsable=False, csv=False, scripted=False, skip_first=True)
    p = _Printer(args, None)
    recs = parse_text((FUSE / "zpool_iostat_-v_ziocap_1_8_cache-removed-readded.txt").read_text(), interval=1.0)
    p.take(recs)
    out, err = capsys.readouterr()
    assert p.reports == 7 and out.count("capacity") == 7
    assert "removed loop6" in err and "added loop6" in err


def test_operands():
    assert split_operands(["tank", "zlab", "5", "3"]) == (["tank", "zlab"], 5.0, 3)
    assert split_operands(["5"]) == ([], 5.0, None)
    assert split_operands([]) == ([], None, None)
    with pytest.raises(UserError, match="whole seconds"):
        split_operands(["tank", "0.5"])
    with pytest.raises(UserError, match="COUNT"):
        split_operands(["1", "0"])


def test_missing_zpool_is_a_one_line_error(capsys):
    assert main(["iostat", "--zpool", "/nonexistent/zpool", "tank", "1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("zfsmon: /nonexistent/zpool: command not found") and err.count("\n") == 1
