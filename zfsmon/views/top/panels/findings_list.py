"""The findings of the window (``zfsmon analyze``'s), one line each, and the cache's verdict in the heading."""

from __future__ import annotations

from typing import List

from rich.text import Text

from zfsmon.analysis.findings import DRIVERS
from zfsmon.model import Kind
from zfsmon.views import thresholds
from zfsmon.views.top import fmt
from zfsmon.views.top.panels.base import Frame, Panel, ViewOptions, _lines, error_lines, heading, register
from zfsmon.views.top.state import TopState

DRIVER_WORDS = dict(DRIVERS)


def findings(report, state: TopState, opts: ViewOptions, width: int, compact: bool) -> Text:
    """``report``: a :class:`zfsmon.analysis.findings.Report` (computed by the app every few seconds) or None."""
    verdict = cache_verdict(report, state)
    parts: List[Text] = [heading("findings", width, verdict)]
    errors = error_lines(state, "findings", opts)
    parts.extend(errors)
    eggs = state.goose_eggs()
    if eggs:
        parts.append(Text(f"goose eggs: {', '.join(sorted(v.leaf for v in eggs))}", style=thresholds.GOOSE_STYLE,
                          no_wrap=True, overflow="ellipsis"))
    if report is None:
        parts.append(Text("collecting...", style="dim"))
        return _lines(parts, width)
    for f in report.findings:
        if f.topic == "data":
            continue
        if f.topic == "correlation":
            n = f.numbers
            r, lag = n.get("spearman"), n.get("best_lag_s")
            words = DRIVER_WORDS.get(str(n.get("with")), str(n.get("with")))
            text = f"TPS~{words}: r {r:+.2f}" if isinstance(r, float) else f"TPS~{words}: {n.get('note', '-')}"
            if isinstance(lag, (int, float)) and round(lag):  # whole seconds: the step is a measured ~1.001 s
                text += f" lag {'-' if lag < 0 else '+'}{fmt.age(abs(round(lag)))}"
            parts.append(Text(text, no_wrap=True, overflow="ellipsis"))
        elif f.topic == "warmup_correlation":
            per = f.numbers.get("with") or {}
            rs = sorted(((d["spearman"], w) for w, d in per.items() if isinstance(d, dict)
                         and isinstance(d.get("spearman"), float)), key=lambda x: -abs(x[0]))
            parts.append(Text("warm-up: TPS~" + ", ".join(f"{DRIVER_WORDS.get(w, w)} {r:+.2f}" for r, w in rs),
                              no_wrap=True, overflow="ellipsis"))
        else:
            parts.append(Text(f.text, no_wrap=compact, overflow="ellipsis"))
    if len(parts) == 1 + len(errors) + bool(eggs):
        parts.append(Text("nothing to say yet", style="dim"))
    return _lines(parts, width)


def cache_verdict(report, state: TopState) -> str:
    """decaying (the findings say TPS fell), warming up (TPS still climbing at the end), warm (a warm-up that
    reached its plateau), steady (TPS without a warm-up); "" without a workload."""
    if report is None:
        return ""
    if report.topic("decay"):
        return "decaying"
    tps = [v for _, v in state.spark("workload", "tps")] or [v for _, v in state.spark("workload", "run_tps")]
    k = max(2, len(tps) // 10)
    if len(tps) >= 2 * k + 2:
        late, before = sorted(tps[-k:])[k // 2], sorted(tps[-2 * k:-k])[k // 2]
        if before > 0 and late > before * 1.05:
            return "warming up"
    warm = report.topic("warmup")
    if warm and "tps_plateau" in warm[0].numbers:
        return "warm"
    if tps:
        return "steady"
    return ""


def _render(f: Frame) -> Text:
    return findings(f.report, f.state, f.opts, f.width, f.compact)


#: the window's analysis, which reads the datasets' activity and the traced distributions too: the only panel
#: showing those kinds, so their sources' errors are here
PANEL = register(Panel("findings", "Findings", (Kind.DATASET, Kind.TRACE), _render, span=2))
