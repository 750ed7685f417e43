"""Every recording says where it was made (platform, ZFS flavour and versions); info, report, CSV and the
exporter show it, and recordings made before that still open and say "not recorded"."""

from __future__ import annotations

import csv

import pytest

from tests.unit.store_data import records
from zfsmon import host as hostmod
from zfsmon.cli import main
from zfsmon.commands import info
from zfsmon.engine import session as session_mod
from zfsmon.engine.session import Session
from zfsmon.store import NOT_RECORDED, Recorder, Recording, platform_of, zfs_of
from zfsmon.views import prometheus
from zfsmon.views.report_pdf import build

GUEST = {"host": "zfsmon-guest", "platform": "Linux 6.1.0-50-amd64 x86_64", "zfs_flavour": "openzfs-kmod",
         "zfs_version": "2.3.2-2~bpo12+2", "zfs_userland": "zfs-2.3.2-2~bpo12+2"}
LAB = {"host": "vm", "platform": "Linux 6.18.44 x86_64", "zfs_flavour": "zfs-fuse",
       "zfs_version": "0.7.0-25+b1 (pool v23)"}


def _record(path, meta_defaults, meta, monkeypatch):
    monkeypatch.setattr(session_mod, "recording_meta", lambda: dict(meta_defaults))
    with Session(1.0) as s:
        rec = s.record_into(str(path), meta)
        for b in records(3):
            rec.write(b)
    return str(path)


def test_a_session_recording_carries_the_hosts_origin_even_when_the_command_gives_none(tmp_path, monkeypatch):
    # soak and attach pass only their own keys: the lab's "ZFS ?" came from there
    path = _record(tmp_path / "soak.zfsmon", LAB, {"argv": "zfsmon soak --lab", "interval": "1", "kind": "soak"},
                   monkeypatch)
    with Recording.open(path) as rec:
        assert {k: rec.meta[k] for k in LAB} == LAB and rec.meta["kind"] == "soak"
        assert zfs_of(rec.meta) == "zfs-fuse 0.7.0-25+b1 (pool v23)" and platform_of(rec.meta) == LAB["platform"]


def test_the_commands_own_meta_wins(tmp_path, monkeypatch):
    path = _record(tmp_path / "r.zfsmon", LAB, {"host": "given", "interval": "1"}, monkeypatch)
    with Recording.open(path) as rec:
        assert rec.meta["host"] == "given" and rec.meta["zfs_flavour"] == "zfs-fuse"


def test_this_hosts_origin_is_real():
    meta = hostmod.recording_meta()
    assert meta["platform"].split()[0] in ("Linux", "FreeBSD", "SunOS", "Darwin")
    assert meta["zfs_flavour"] and "host" in meta


def test_info_report_csv_and_exporter_show_it(tmp_path, monkeypatch, capsys):
    path = _record(tmp_path / "g.zfsmon", GUEST, {"argv": "zfsmon record", "interval": "1"}, monkeypatch)
    with Recording.open(path) as rec:
        lines = info.render(info.describe(rec))
        head = build(rec).summary_lines()[1]
        fam = prometheus.host_info(prometheus.latest_from_recording(rec).host)
    assert "platform:   Linux 6.1.0-50-amd64 x86_64" in lines
    assert "zfs:        openzfs-kmod 2.3.2-2~bpo12+2" in lines  # tools of the same version are not repeated
    assert head.startswith("host zfsmon-guest (Linux 6.1.0-50-amd64 x86_64; ZFS openzfs-kmod 2.3.2-2~bpo12+2)")
    [sample] = fam.samples
    assert sample.name == "zfsmon_host_info" and sample.value == 1.0
    assert sample.labels == {**GUEST}
    out = tmp_path / "csv"
    assert main(["export", path, "--csv", str(out)]) == 0
    with open(out / "meta.csv", newline="") as fh:
        meta = dict(csv.reader(fh))
    assert meta["key"] == "value" and {k: meta[k] for k in GUEST} == GUEST and meta["interval"] == "1"


def test_tools_of_another_version_are_named():
    assert zfs_of({**GUEST, "zfs_userland": "zfs-2.2.7-1"}) == \
        "openzfs-kmod 2.3.2-2~bpo12+2 (tools zfs-2.2.7-1)"


def test_an_old_recording_opens_and_says_not_recorded(tmp_path, capsys):
    path = str(tmp_path / "old.zfsmon")
    with Recorder(path, {"host": "h1", "interval": 1}) as rec:  # what recordings held before: no origin
        for b in records(3):
            rec.write(b)
    with Recording.open(path) as rec:
        lines = info.render(info.describe(rec))
        head = build(rec).summary_lines()[1]
        fam = prometheus.host_info(prometheus.latest_from_recording(rec).host)
    assert f"zfs:        {NOT_RECORDED}" in lines and f"platform:   {NOT_RECORDED}" in lines
    assert f"ZFS {NOT_RECORDED}" in head and "?" not in head.split("recorded by")[0]
    assert fam.samples[0].labels["zfs_version"] == "" and fam.samples[0].labels["host"] == "h1"
    out = tmp_path / "csv"
    assert main(["export", path, "--csv", str(out)]) == 0
    with open(out / "meta.csv", newline="") as fh:
        meta = dict(csv.reader(fh))
    assert meta["zfs_version"] == "" and meta["host"] == "h1"


@pytest.mark.parametrize("flavour,version,tools,want", [
    ("openzfs-kmod", "2.3.2-2~bpo12+2", "zfs-2.3.2-2~bpo12+2", (2, 3, 2)),
    ("openzfs-kmod", "2.1.11-1", "", (2, 1, 11)),
    ("freebsd", "2.2.0-FreeBSD_g95785196f", "", (2, 2, 0)),
    ("freebsd", "legacy", "", ()),
    ("zfs-fuse", "0.7.0-25+b1 (pool v23)", "", ()),
    ("illumos", "omnios-r151046", "", ()),
])
def test_openzfs_version_of_the_host(flavour, version, tools, want):
    assert hostmod.Host("X", "1", "h", flavour, version, zfs_userland=tools).openzfs_version() == want
