"""The guest's requests to the host (zfsmon.lab.guest.hostctl): only two verbs, only the layout's disks, one line."""

from __future__ import annotations

import json
import socket
import threading
from pathlib import Path

import pytest

from zfsmon.lab.guest import boot
from zfsmon.lab.guest.hostctl import HostControl, HostCtlError, Request, device_id, parse_request
from zfsmon.lab.guest.runner import PoolLayout
from zfsmon.lab.guest.spec import Image

DISKS = {"data0": Path("/d/data0.img"), "cache0": Path("/d/cache0.img")}


def test_a_request_names_a_verb_and_a_disk_of_the_layout():
    assert parse_request("3.req", "unplug data0\n", DISKS) == Request(3, "unplug", "data0")
    assert parse_request("12.req", "plug cache0", DISKS) == Request(12, "plug", "cache0")


@pytest.mark.parametrize("name,text", [
    ("1.req", "unplug root\n"), ("1.req", "device_del data0\n"), ("1.req", "unplug data0; rm -rf /\n"),
    ("1.req", "unplug data0\nplug data0\n"), ("1.req", "unplug " + "x" * 300), ("x.req", "unplug data0"),
    ("1.ok", "unplug data0"), ("../1.req", "unplug data0"), ("1.req", ""),
])
def test_anything_else_is_refused(name, text):
    with pytest.raises(HostCtlError):
        parse_request(name, text, DISKS)


def test_a_refused_request_is_answered_without_qmp_and_links_are_not_followed(tmp_path):
    ctl = HostControl(tmp_path, tmp_path / "no.sock", DISKS)
    ctl.prepare()
    (ctl.dir / "1.req").write_text("unplug root\n")
    victim = tmp_path / "victim"
    victim.write_text("keep")
    (ctl.dir / "2.req").symlink_to(victim)
    answers = dict(ctl.poll())
    assert answers["1.req"].startswith("refused: no pool disk has the serial 'root'")
    assert answers["2.req"].startswith("refused:")
    assert (ctl.dir / "1.err").is_file() and (ctl.dir / "2.err").is_file() and victim.read_text() == "keep"
    assert ctl.poll() == []  # each request is answered once


def test_each_pool_disk_has_the_device_id_the_host_unplugs_and_qemu_a_qmp_socket(tmp_path):
    img = Image(tmp_path / "img")
    argv = boot.qemu_argv(img, tmp_path / "disks", tmp_path / "out", tmp_path / "src", PoolLayout(),
                          boot.Machine(), False, tmp_path / "console.log", tmp_path / "qmp.sock")
    devices = [argv[i + 1] for i, a in enumerate(argv) if a == "-device"]
    assert f"virtio-blk-pci,drive=data0,serial=data0,id={device_id('data0')}" in devices
    assert argv[argv.index("-qmp") + 1] == f"unix:{tmp_path / 'qmp.sock'},server=on,wait=off"


class FakeQEMU:
    """A QMP peer on a unix socket that answers as QEMU does: greeting, capabilities, then device_del answered
    at once and its DEVICE_DELETED event a little later, blockdev-add and device_add returning {}."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.commands: list = []
        self.srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.srv.bind(str(path))
        self.srv.listen(1)
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        conn, _ = self.srv.accept()
        send = lambda obj: conn.sendall(json.dumps(obj).encode() + b"\r\n")  # noqa: E731
        send({"QMP": {"version": {}, "capabilities": []}})
        buf = b""
        while True:
            chunk = conn.recv(65536)
            if not chunk:
                return
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                cmd = json.loads(line)
                self.commands.append(cmd)
                if cmd["execute"] == "device_add" and cmd["arguments"]["id"] in self._present():
                    send({"error": {"class": "GenericError", "desc": "Duplicate device ID"}})
                    continue
                send({"event": "RTC_CHANGE", "data": {}})  # events come between answers too
                send({"return": {}})
                if cmd["execute"] == "device_del":
                    send({"event": "DEVICE_DELETED", "data": {"path": "/machine/peripheral/x/virtio-backend"}})
                    send({"event": "DEVICE_DELETED", "data": {"device": cmd["arguments"]["id"], "path": "/p"}})

    def _present(self) -> set:
        present = {device_id(s) for s in DISKS}
        for c in self.commands[:-1]:
            dev = c.get("arguments", {}).get("id")
            if c["execute"] == "device_del":
                present.discard(dev)
            elif c["execute"] == "device_add":
                present.add(dev)
        return present


def test_unplug_then_plug_over_qmp_puts_the_same_file_back_under_the_same_serial(tmp_path):
    qemu = FakeQEMU(tmp_path / "qmp.sock")
    ctl = HostControl(tmp_path, tmp_path / "qmp.sock", DISKS, log=lambda _m: None)
    ctl.prepare()
    try:
        (ctl.dir / "1.req").write_text("unplug data0\n")
        assert [a for _r, a in ctl.poll()][0].startswith("data0 pulled out")
        (ctl.dir / "2.req").write_text("unplug data0\n")
        (ctl.dir / "3.req").write_text("plug data0\n")
        (ctl.dir / "4.req").write_text("plug data0\n")
        answers = dict(ctl.poll())
    finally:
        ctl.close()
    assert answers["2.req"] == "refused: data0 is already out"
    assert answers["3.req"].startswith("data0 put back in")
    assert answers["4.req"] == "refused: data0 is in already"
    assert (ctl.dir / "1.ok").read_text().startswith("data0 pulled out") and (ctl.dir / "2.err").is_file()
    sent = [(c["execute"], c.get("arguments", {})) for c in qemu.commands]
    assert sent[0] == ("qmp_capabilities", {})
    assert sent[1] == ("device_del", {"id": "disk-data0"})
    assert sent[2] == ("blockdev-add", {"driver": "raw", "node-name": "data0-again1", "cache": {"no-flush": True},
                                        "file": {"driver": "file", "filename": "/d/data0.img"}})
    assert sent[3] == ("device_add", {"driver": "virtio-blk-pci", "id": "disk-data0", "drive": "data0-again1",
                                      "serial": "data0"})
    assert len(sent) == 4
