"""A recording as the scrapes its exporter would have served, in OpenMetrics with their times, for Prometheus.

``promtool tsdb create-blocks-from openmetrics FILE DIR`` turns the text into TSDB blocks a Prometheus serves
(a post-mortem in Grafana, the alert rules evaluated over a real incident). The recording's records are fed, in
time order, to the exporter's own :class:`~zfsmon.views.prometheus.LatestValues` on the recording's clock, and
every ``every`` seconds the exporter's collector renders what a scrape at that moment would have answered: the
same names, labels, histograms, source errors and resets, devices dropped once gone. OpenMetrics wants each
family's samples together, so the scrapes are held and written family by family.
"""

from __future__ import annotations

import math
from typing import Callable, Dict, Iterable, Iterator, List, Mapping, Optional, Tuple

from prometheus_client.metrics_core import Metric
from prometheus_client.utils import floatToGoString

from zfsmon.model import Record
from zfsmon.views.prometheus import LatestValues, ZfsmonCollector, stale_after

#: Prometheus's scrape interval in the examples of docs/exporter.md
DEFAULT_EVERY = 15.0


def scrapes(records: Iterable[Record], host: Mapping[str, str], interval: float, every: float = DEFAULT_EVERY,
            note: Optional[Callable[[str], None]] = None) -> Iterator[Tuple[float, List[Metric]]]:
    """(time, families) of each scrape, every ``every`` s from the first record's time on, and one at the last.

    ``records`` in time order; ``interval``: the recording's nominal one (an entity silent for three of them and
    5 s more is dropped, as the live exporter drops it)."""
    now = [0.0]
    latest = LatestValues(stale_after=stale_after(interval), host=host, clock=lambda: now[0])
    collector = ZfsmonCollector(latest, note=note)
    due: Optional[float] = None
    last = None
    for r in records:
        if not math.isfinite(r.ts):
            continue
        if due is None:
            due = r.ts + every
        while r.ts >= due:
            now[0] = due
            yield due, list(collector.collect())
            due += every
        now[0] = r.ts
        latest.add([r])
        last = r.ts
    if last is not None and due is not None and last > due - every:
        now[0] = last
        yield last, list(collector.collect())


def _escape(s: str) -> str:
    return s.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def openmetrics(scraped: Iterable[Tuple[float, List[Metric]]], labels: Mapping[str, str]) -> Iterator[str]:
    """The scrapes as OpenMetrics lines (``# EOF`` last), ``labels`` added to every series (the ``job`` and
    ``instance`` a scrape would add). Counters' ``_created`` samples are left out; an info family is the gauge
    ``NAME_info`` the text format serves."""
    #: family name -> (type, help, {series key (labels but le): [(sample name and labels as written, value,
    #: time)]}); each sample's name and labels are written once and shared by all its points
    fams: Dict[str, Tuple[str, str, Dict[Tuple[Tuple[str, str], ...], List[Tuple[str, float, float]]]]] = {}
    written: Dict[Tuple[str, Tuple[Tuple[str, str], ...]], str] = {}
    for ts, families in scraped:
        for fam in families:
            mtype, name = fam.type, fam.name
            if mtype == "info":
                mtype, name = "gauge", f"{fam.name}_info"
            elif mtype not in ("counter", "gauge", "histogram", "summary"):
                mtype = "unknown"
            entry = fams.setdefault(name, (mtype, fam.documentation, {}))
            for s in fam.samples:
                if s.name.endswith("_created"):
                    continue
                own = tuple(sorted(s.labels.items()))
                head = written.get((s.name, own))
                if head is None:
                    text = ",".join(f'{k}="{_escape(v)}"' for k, v in sorted({**s.labels, **labels}.items()))
                    head = written[(s.name, own)] = f"{s.name}{{{text}}}"
                key = tuple((k, v) for k, v in own if k != "le")
                entry[2].setdefault(key, []).append((head, float(s.value), ts))
    for name, (mtype, doc, series) in fams.items():
        yield f"# HELP {name} {_escape(doc)}"
        yield f"# TYPE {name} {mtype}"
        for points in series.values():
            for head, value, ts in points:
                yield f"{head} {floatToGoString(value)} {ts:.3f}"
    yield "# EOF"
