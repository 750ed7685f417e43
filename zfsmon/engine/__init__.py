"""The engine: what samples the sources and where the records go.

:mod:`~zfsmon.engine.sampler` polls every collector once per interval and hands
the records to sinks; :mod:`~zfsmon.engine.session` is the one run loop around
it (the recording, signals, a duration, a full disk, cleanup) that `record`,
`top`, `soak`, `attach` and `exporter` share; :mod:`~zfsmon.engine.collectors`
chooses what they sample. The engine imports no view: a screen or an exporter
passes its sink in.
"""

from zfsmon.engine.collectors import KEY_SOURCES, pick_collectors, zfs_collectors, zfs_collectors_or_warn
from zfsmon.engine.sampler import Sampler, Sink
from zfsmon.engine.session import Outcome, Session, check_output_path, tty_progress

__all__ = ["KEY_SOURCES", "Outcome", "Sampler", "Session", "Sink", "check_output_path", "pick_collectors",
           "tty_progress", "zfs_collectors", "zfs_collectors_or_warn"]
