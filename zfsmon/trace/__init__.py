"""Tracing: run the D/bpftrace scripts of ``dtrace/`` and ``bpftrace/`` and read their one protocol.

``TraceCollector(name, interval)`` is the collector for ``top --trace`` and ``record --trace``;
``zfsmon.trace.protocol`` parses the output; ``docs/tracing.md`` describes it.
"""

from zfsmon.trace.catalog import SCRIPTS
from zfsmon.trace.collector import TraceCollector, trace_collectors

__all__ = ["SCRIPTS", "TraceCollector", "trace_collectors"]
