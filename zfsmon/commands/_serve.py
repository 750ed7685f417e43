"""Serving /metrics: what `zfsmon exporter` and `zfsmon top --listen` share, so both serve the same families
from the same kind of sink (:class:`~zfsmon.views.prometheus.LatestValues`, fed by the session's sampler), on
an address given the same way, with the same bounded server (views/prometheus_http.py).
"""

from __future__ import annotations

import ipaddress
import sys
from typing import Callable, Optional, Tuple

from zfsmon.errors import UserError
from zfsmon.host import recording_meta
from zfsmon.store import Recording

try:  # the `exporter` extra; without it the other commands work and this one says what to install
    from prometheus_client import CollectorRegistry

    from zfsmon.views import openmetrics  # noqa: F401 (export --openmetrics renders through it, guarded here)
    from zfsmon.views.prometheus import (
        DEFAULT_QUEUES,
        LatestValues,
        ZfsmonCollector,
        latest_from_recording,
        stale_after,
    )
    from zfsmon.views.prometheus_http import start_server
except ImportError as _missing:
    if not (_missing.name or "").startswith("prometheus_client"):
        raise
    HAVE_PROMETHEUS = False
else:
    HAVE_PROMETHEUS = True

#: what `zfsmon exporter` (and `top --listen`) says when prometheus_client is not installed
INSTALL_HINT = "the exporter needs prometheus_client (pip install 'zfsmon[exporter]')"


def parse_listen(text: str) -> Tuple[str, int]:
    """``127.0.0.1:9134``, ``[::1]:9134``, ``:9134`` (loopback), ``localhost:0``."""
    host, sep, port = text.rpartition(":")
    if not sep or not (port.isascii() and port.isdigit()) or int(port) > 65535:
        raise UserError(f"--listen {text!r}: expected ADDRESS:PORT (like 127.0.0.1:9134)")
    host = host.strip("[]") or "127.0.0.1"
    return host, int(port)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _note(text: str) -> None:
    print(f"zfsmon: note: {text}", file=sys.stderr, flush=True)


def serve(latest: LatestValues, host: str, port: int, note: Callable[[str], None] = _note):
    """Start the HTTP server (bounded threads, timeouts: views/prometheus_http.py); returns (server, bound port).
    ``note`` is told once about each statistic left out of the scrape."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(ZfsmonCollector(latest, note=note))
    try:
        # a rendering is reused until the sampler adds values (or 5 s pass: stale entities still go)
        server = start_server(host, port, registry, version=latest.version)
    except OSError as exc:
        raise UserError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    return server, server.server_port


def live_values(interval: float, leaf_histograms: bool = False, histograms: str = "wait") -> LatestValues:
    """The sink a live exporter serves from (`exporter`, `top --listen`): this host's meta, and entities dropped
    once they miss three intervals (:class:`LatestValues`: or three of their own gaps, for a slow source)."""
    return LatestValues(stale_after=stale_after(interval), leaf_histograms=leaf_histograms, host=recording_meta(),
                        histogram_queues=queues(histograms))


def recording_values(rec: Recording, leaf_histograms: bool = False, histograms: str = "wait") -> LatestValues:
    """The sink `exporter --from-recording` serves from: the recording's last values."""
    return latest_from_recording(rec, leaf_histograms=leaf_histograms, histogram_queues=queues(histograms))


def address(host: str, port: int) -> str:
    """``HOST:PORT``, an IPv6 address in brackets."""
    return f"{f'[{host}]' if ':' in host else host}:{port}"


def url(host: str, port: int) -> str:
    """``http://HOST:PORT/metrics``."""
    return f"http://{address(host, port)}/metrics"


def exposure_note(host: str) -> Optional[str]:
    """What to tell the user about listening on ``host`` (None for loopback)."""
    if is_loopback(host):
        return None
    return f"listening on {host}, not loopback: anyone who can reach it can read the metrics"


def queues(choice: str) -> Optional[Tuple[str, ...]]:
    """--histograms: the queues whose latency histograms are exposed (None: all)."""
    return {"wait": DEFAULT_QUEUES, "all": None, "none": ()}[choice]
