"""Requests from inside the guest for what only the host can do: pull a pool disk out of the machine, put it back.

A disk pulled from a running server (a failed drive, a bumped cable, a SAN path gone) is what ZFS sees as a
REMOVED or FAULTED leaf; nothing inside the guest can cause it, QEMU can: ``device_del`` of the disk's
``virtio-blk-pci`` device (an ACPI hot-unplug the guest kernel answers), then ``blockdev-add`` and
``device_add`` of the same file under the same serial to put it back. The guest asks through its output share:
it writes ``hostctl/N.req`` holding ``unplug SERIAL`` or ``plug SERIAL``; the host, which polls the directory
while the guest runs, answers ``N.ok`` or ``N.err`` (one line). Requests are read as untrusted text: only those
two verbs, only serials of the layout's disks, one line of at most 200 bytes; nothing else is run.
"""

from __future__ import annotations

import json
import os
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Tuple

#: the share's subdirectory of requests and answers
DIR = "hostctl"
VERBS = ("unplug", "plug")
MAX_REQUEST = 200
#: how long the guest kernel may take to answer an unplug (TCG: seconds, on a loaded host more)
UNPLUG_TIMEOUT = 90.0


class HostCtlError(Exception):
    """A request refused or a QMP command that failed: its text goes back to the guest."""


def device_id(serial: str) -> str:
    """The QEMU device id of a pool disk (``-device ...,id=``)."""
    return f"disk-{serial}"


@dataclass(frozen=True)
class Request:
    number: int
    verb: str
    serial: str


def parse_request(name: str, text: str, serials: Mapping[str, Path]) -> Request:
    """A request file's name (``N.req``) and content, checked (pure)."""
    stem = name[:-len(".req")] if name.endswith(".req") else ""
    if not stem.isdigit() or len(stem) > 9:
        raise HostCtlError(f"not a request file name: {name!r}")
    if len(text) > MAX_REQUEST or text.count("\n") > 1:
        raise HostCtlError("a request is one line of at most 200 bytes")
    words = text.split()
    if len(words) != 2 or words[0] not in VERBS:
        raise HostCtlError(f"a request is `{' SERIAL` or `'.join(VERBS)} SERIAL`")
    if words[1] not in serials:
        raise HostCtlError(f"no pool disk has the serial {words[1]!r} (disks: {', '.join(sorted(serials))})")
    return Request(int(stem), words[0], words[1])


class QMP:
    """A minimal QEMU Machine Protocol client over a unix socket: commands, and the events seen meanwhile."""

    def __init__(self, path: Path, timeout: float = 30.0) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.sock.connect(str(path))
        self.buf = b""
        self.events: List[Dict[str, Any]] = []
        self._message()  # the greeting
        self.execute("qmp_capabilities")

    def close(self) -> None:
        self.sock.close()

    def _message(self) -> Dict[str, Any]:
        while b"\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise HostCtlError("QEMU closed its QMP socket")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        msg = json.loads(line)
        if not isinstance(msg, dict):
            raise HostCtlError(f"QMP sent {line[:80]!r}")
        return msg

    def execute(self, command: str, **arguments: Any) -> Any:
        req: Dict[str, Any] = {"execute": command}
        if arguments:
            req["arguments"] = arguments
        self.sock.sendall(json.dumps(req).encode() + b"\n")
        while True:
            msg = self._message()
            if "event" in msg:
                self.events.append(msg)
            elif "error" in msg:
                raise HostCtlError(f"{command}: {msg['error'].get('desc', msg['error'])}")
            elif "return" in msg:
                return msg["return"]

    def wait_event(self, name: str, device: str, timeout: float) -> None:
        """Until QEMU reports ``name`` for ``device`` (already seen ones count)."""
        deadline = time.monotonic() + timeout
        while True:
            for ev in self.events:
                if ev.get("event") == name and ev.get("data", {}).get("device") == device:
                    self.events.remove(ev)
                    return
            left = deadline - time.monotonic()
            if left <= 0:
                raise HostCtlError(f"no {name} for {device} within {timeout:.0f} s (the guest did not let go?)")
            self.sock.settimeout(left)
            try:
                msg = self._message()
            except socket.timeout:
                continue
            if "event" in msg:
                self.events.append(msg)


class HostControl:
    """Answers the guest's requests (:func:`parse_request`) with QMP commands, one at a time, as they come."""

    def __init__(self, out_dir: Path, qmp_path: Path, disk_files: Mapping[str, Path], log=print) -> None:
        self.dir = out_dir / DIR
        self.qmp_path = qmp_path
        self.disks = dict(disk_files)
        self.log = log
        self.plugged = {s: True for s in self.disks}
        self.generation: Dict[str, int] = {}
        self.done: set[str] = set()
        self._qmp: Optional[QMP] = None

    def prepare(self) -> None:
        """An empty request directory in the share (an earlier run's requests are not answered again)."""
        if self.dir.is_symlink() or (self.dir.exists() and not self.dir.is_dir()):
            raise HostCtlError(f"{self.dir} is not a directory")
        self.dir.mkdir(exist_ok=True)
        for f in self.dir.iterdir():
            if f.is_file() and not f.is_symlink() and f.suffix in (".req", ".ok", ".err", ".tmp"):
                f.unlink()

    def close(self) -> None:
        if self._qmp is not None:
            self._qmp.close()
            self._qmp = None

    def poll(self) -> List[Tuple[str, str]]:
        """Answer every new request; returns (request, answer) pairs for the host's log."""
        answered: List[Tuple[str, str]] = []
        try:
            names = sorted(os.listdir(self.dir))
        except OSError:
            return answered
        for name in names:
            if not name.endswith(".req") or name in self.done:
                continue
            self.done.add(name)
            answer, ok = self._answer(name)
            stem = name[:-len(".req")]
            self._write(f"{stem}.{'ok' if ok else 'err'}", answer)
            answered.append((name, answer))
        return answered

    def _answer(self, name: str) -> Tuple[str, bool]:
        try:
            fd = os.open(self.dir / name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            with os.fdopen(fd, "rb") as f:
                text = f.read(MAX_REQUEST + 1).decode("utf-8", "replace")
            req = parse_request(name, text, self.disks)
            return self._do(req), True
        except (HostCtlError, OSError, ValueError) as e:
            return f"refused: {e}", False

    def _write(self, name: str, text: str) -> None:
        fd = os.open(self.dir / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        with os.fdopen(fd, "w") as f:
            f.write(text.replace("\n", " ")[:500] + "\n")

    def _client(self) -> QMP:
        if self._qmp is None:
            self._qmp = QMP(self.qmp_path)
        return self._qmp

    def _do(self, req: Request) -> str:
        qmp = self._client()
        dev = device_id(req.serial)
        t0 = time.monotonic()
        if req.verb == "unplug":
            if not self.plugged[req.serial]:
                raise HostCtlError(f"{req.serial} is already out")
            qmp.execute("device_del", id=dev)
            qmp.wait_event("DEVICE_DELETED", dev, UNPLUG_TIMEOUT)
            self.plugged[req.serial] = False
            return f"{req.serial} pulled out ({time.monotonic() - t0:.1f} s for the guest to let go)"
        if self.plugged[req.serial]:
            raise HostCtlError(f"{req.serial} is in already")
        # a -drive backend goes with its device: the file is opened again under a new node name
        n = self.generation[req.serial] = self.generation.get(req.serial, 0) + 1
        node = f"{req.serial}-again{n}"
        qmp.execute("blockdev-add", **{"driver": "raw", "node-name": node, "cache": {"no-flush": True},
                                       "file": {"driver": "file", "filename": str(self.disks[req.serial])}})
        qmp.execute("device_add", driver="virtio-blk-pci", id=dev, drive=node, serial=req.serial)
        self.plugged[req.serial] = True
        return f"{req.serial} put back in ({time.monotonic() - t0:.1f} s)"
