"""Durable recordings: one SQLite file per recording, written by a recorder, read by everything else.

Writing (``zfsmon record``, ``zfsmon import``, anything that samples)::

    from zfsmon.store import Recorder
    with Recorder("run.zfsmon", {"host": "db1", "interval": 1, "argv": "zfsmon record"}) as rec:
        rec.write(records)        # one interval's list[Record]; committed before it returns
        rec.mark("VACUUM FULL")   # a user annotation (an Event of kind "mark")
        rec.flush()               # fold the write-ahead log into the file (optional)
    # close() notes the end and leaves a self-contained file

``write`` raises :class:`RecordingFull` when the filesystem is full (the file keeps
everything written before) and :class:`RecordingError` for other write failures.

Reading (replay, export, info; safe while a recorder is still writing)::

    from zfsmon.store import Recording
    with Recording.open("run.zfsmon") as r:
        r.meta                      # {"host": ..., "platform": ..., "zfs_flavour": ..., "zfs_version": ...,
                                    #  "interval": ..., "argv": ...} (strings; older recordings lack some)
        r.time_range()              # (first_ts, last_ts) or None
        r.entities()                # every Entity ever seen, latest role/parent
        r.topology(at=ts)           # Entities present at ts, with roles then
        r.samples(entity_keys=None, kinds=None, start=None, end=None)  # iterator of Sample
        r.blocks(streams, start, end)  # the same samples a block at a time, column-wise (model.SampleBlock)
        arrays.blocks(r, streams, start, end)  # the same, compacted columns as numpy arrays (zfsmon.store.arrays)
        r.events(start, end)        # list of Event (marks, run boundaries, topology, resets, errors)
        r.series("leaf:tank/sda", "read_bytes", start, end)            # [(ts, value), ...]
        r.refresh()                 # pick up entities a live recorder added since open

Timestamps are float epoch seconds (UTC). Opening anything that is not a
readable recording raises :class:`RecordingError`, a UserError.
Downsampling (``every`` seconds; counters summed as deltas, gauges averaged
with min/max) is :func:`zfsmon.analysis.downsample.downsample` (of samples) or
:func:`~zfsmon.analysis.downsample.downsample_blocks` (of ``blocks()``, much cheaper per value).
"""

from zfsmon.store.errors import RecordingError, RecordingFull
from zfsmon.store.reader import NOT_RECORDED, Recording, platform_of, zfs_of
from zfsmon.store.writer import Recorder

__all__ = ["Recorder", "Recording", "RecordingError", "RecordingFull", "zfs_of", "platform_of", "NOT_RECORDED"]
