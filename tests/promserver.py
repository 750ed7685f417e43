"""A real Prometheus serving OpenMetrics text loaded as blocks: the test's own process, loopback, a free port.

``promtool tsdb create-blocks-from openmetrics`` turns the text (a capture's scrape, or ``zfsmon export
--openmetrics`` of a recording) into blocks, and Debian's ``prometheus`` serves them with the shipped rules
loaded (a rules file it refuses fails the start). Nothing is scraped: the data is what was loaded.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import urllib.error
import urllib.parse
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, List, Optional

import yaml

from tests.conftest import need, wait_until


class Prom:
    """The HTTP API of a Prometheus holding loaded blocks."""

    def __init__(self, port: int, err: Path) -> None:
        self.base, self.err = f"http://127.0.0.1:{port}", err

    def _get(self, path: str, **params: str) -> dict:
        url = f"{self.base}{path}?" + urllib.parse.urlencode(params)
        try:
            with urllib.request.urlopen(url, timeout=60) as resp:
                body = json.loads(resp.read())
        except urllib.error.HTTPError as exc:  # 400/422: does not parse or evaluate
            raise AssertionError(f"{params.get('query')}: {exc.code} "
                                 f"{json.loads(exc.read() or b'{}').get('error')}") from None
        assert body["status"] == "success", body
        return body["data"]

    def query(self, expr: str, at: float) -> List[dict]:
        """The instant vector of ``expr`` at ``at``; AssertionError if Prometheus refuses it."""
        data = self._get("/api/v1/query", query=expr, time=f"{at:.3f}")
        return data["result"] if data["resultType"] == "vector" else [data["result"]]

    def query_range(self, expr: str, start: float, end: float, step: float) -> List[dict]:
        """The range of ``expr``: one ``{"metric": ..., "values": [[t, "v"], ...]}`` per series."""
        return self._get("/api/v1/query_range", query=expr, start=f"{start:.3f}", end=f"{end:.3f}",
                         step=f"{step:g}")["result"]

    def ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.base}/-/ready", timeout=5) as resp:
                return resp.status == 200
        except OSError:
            return False


def rule_blocks(prom: Prom, rules: Path, start: float, end: float, out: Path, step: float = 15.0) -> Path:
    """The recording rules of ``rules`` evaluated over [start, end] against ``prom``'s data, as blocks in ``out``
    (``promtool tsdb create-blocks-from rules``: Prometheus evaluates rules only as it scrapes, never over data
    loaded afterwards). Alerting rules are left out by promtool."""
    res = subprocess.run(["promtool", "tsdb", "create-blocks-from", "rules", f"--start={start:.0f}",
                          f"--end={end:.0f}", f"--url={prom.base}", f"--output-dir={out}",
                          f"--eval-interval={step:g}s", str(rules)], capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    return out


@contextmanager
def serving(tmp: Path, openmetrics: str, rules: Path, port: int, blocks: Optional[Path] = None) -> Iterator[Prom]:
    """Prometheus on 127.0.0.1:``port`` serving ``openmetrics`` (loaded into ``tmp``/data) and the blocks in
    ``blocks`` (:func:`rule_blocks`' output), ``rules`` loaded."""
    need(shutil.which("prometheus") is not None and shutil.which("promtool") is not None,
         "prometheus/promtool not installed (Debian package prometheus: scripts/install-deps.sh)")
    (tmp / "load.om").write_text(openmetrics)
    res = subprocess.run(["promtool", "tsdb", "create-blocks-from", "openmetrics", str(tmp / "load.om"),
                          str(tmp / "data")], capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    for block in sorted(blocks.iterdir()) if blocks is not None else ():
        if block.is_dir() and not block.is_symlink():
            shutil.copytree(block, tmp / "data" / block.name)
    (tmp / "prometheus.yml").write_text(yaml.safe_dump({"global": {"scrape_interval": "15s"},
                                                        "rule_files": [str(rules)], "scrape_configs": []}))
    err = tmp / "prometheus.err"
    with open(err, "w") as errf:
        proc = subprocess.Popen(["prometheus", f"--config.file={tmp / 'prometheus.yml'}",
                                 f"--storage.tsdb.path={tmp / 'data'}", "--storage.tsdb.retention.time=100y",
                                 f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn"],
                                cwd=str(tmp), stdout=subprocess.DEVNULL, stderr=errf)
    p = Prom(port, err)
    try:
        def up() -> bool:
            assert proc.poll() is None, f"prometheus exited: {err.read_text()[-2000:]}"
            return p.ready()

        wait_until(up, 120, lambda: f"prometheus /-/ready on 127.0.0.1:{port}: {err.read_text()[-2000:]}",
                   step=0.2)
        yield p
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
