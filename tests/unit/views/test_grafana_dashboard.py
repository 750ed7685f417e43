"""The Grafana dashboard: generated from the metrics table, shipped as package data and in docs/ (both equal to
the generator's output), in Grafana's classic dashboard JSON model, and every query names only series the
exporter serves. (Each panel's PromQL is evaluated against a real Prometheus in tests/lab/test_prometheus_lab.py.)"""

from __future__ import annotations

import json
import re

import pytest

from tests.conftest import REPO
from tests.unit.views.test_prometheus_rules import exposed_names
from zfsmon.model import Kind
from zfsmon.views import grafana

SHIPPED = [REPO / "zfsmon" / "share" / "grafana" / "zfsmon.json", REPO / "docs" / "grafana" / "zfsmon.json"]


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: str(p.relative_to(REPO)))
def test_shipped_dashboard_is_the_generated_one(path) -> None:
    assert path.read_text() == grafana.render(), f"regenerate: python3 -m zfsmon.views.grafana > {path}"


def test_classic_dashboard_model() -> None:
    """The fields Grafana's dashboard JSON model documents (classic model, as Import dashboard takes it)."""
    d = json.loads(grafana.render())
    for key, typ in (("uid", str), ("title", str), ("tags", list), ("panels", list), ("time", dict),
                     ("templating", dict), ("annotations", dict), ("schemaVersion", int), ("refresh", str)):
        assert isinstance(d[key], typ), key
    assert d["id"] is None and re.fullmatch(r"[a-zA-Z0-9_-]{1,40}", d["uid"])
    ids = [p["id"] for p in d["panels"]]
    assert len(ids) == len(set(ids))
    cells = set()
    for p in d["panels"]:
        assert p["type"] == "timeseries" and p["title"] and p["datasource"]["type"] == "prometheus"
        g = p["gridPos"]
        assert set(g) == {"h", "w", "x", "y"} and 0 <= g["x"] and g["x"] + g["w"] <= 24 and g["h"] > 0
        mine = {(g["x"] + i, g["y"] + j) for i in range(g["w"]) for j in range(g["h"])}
        assert not cells & mine, f"panel {p['title']!r} overlaps another"
        cells |= mine
        refs = [t["refId"] for t in p["targets"]]
        assert p["targets"] and len(refs) == len(set(refs))
        assert all(t["expr"] and t["datasource"]["uid"] == "${datasource}" for t in p["targets"])
        assert isinstance(p["fieldConfig"]["defaults"]["unit"], str)
    names = {v["name"]: v for v in d["templating"]["list"]}
    assert names["datasource"]["type"] == "datasource" and names["datasource"]["query"] == "prometheus"
    assert names["host"]["type"] == names["pool"]["type"] == "query"


def test_what_storage_teams_ask_for_is_on_it() -> None:
    titles = " | ".join(p.title for p in grafana.panels()).lower()
    for words in ("by vdev role", "latency", "arc and l2arc hit ratio", "arc and l2arc size", "slog",
                  "goose egg", "workload tps beside the l2arc hit ratio"):
        assert words in titles, words
    queries = " ".join(q for _t, q in grafana.panel_queries())
    # every variable filled in; "$1" is label_replace's capture group (the goose egg's leaf join), no variable
    assert "$" not in queries.replace('"device", "$1", "leaf"', "")
    assert queries.count('label_replace(') == queries.count('"device", "$1", "leaf", "(.+)")') == 1


def test_queries_name_only_served_series() -> None:
    text = grafana.render()
    used = set(re.findall(r"\bzfsmon_[a-z0-9_]+", text))
    assert used <= exposed_names(), sorted(used - exposed_names())
    assert '$host' in text and '$pool' in text


def test_a_renamed_table_row_breaks_generation_not_the_dashboard() -> None:
    with pytest.raises(KeyError):
        grafana.m(Kind.ARC, "no_such_metric")
