"""fio as a source of saved texts: its JSON output (``--output-format=json`` or ``json+``), one run or a stream.

The parser is :mod:`zfsmon.sources.fio.json_output`. Live, fio is run or followed
by the workload layer (``zfsmon soak --fio``, ``zfsmon attach --fio``), not
by a host collector.
"""

from __future__ import annotations

from zfsmon.model import Kind
from zfsmon.names import FIO
from zfsmon.sources.fio.json_output import looks_like, parse_json
from zfsmon.sources.spec import Source, TextKind

SOURCE = Source(
    name=FIO, help="fio's JSON output (json or json+; --status-interval streams)", order=91,
    kinds=(TextKind("fio", "fio --output-format=json/json+ output, one run or a --status-interval stream",
                    looks_like, parse_json,
                    "fio JOBFILE --output-format=json+ --status-interval=5 --output=fio.json"),),
    family="workload",
    feeds=(Kind.WORKLOAD,),
)
