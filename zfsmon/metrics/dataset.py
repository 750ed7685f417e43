"""Per-dataset (file-level) activity and the pool-wide kstats read beside it.

Linux OpenZFS >= 0.8 keeps a named kstat per dataset
(``/proc/spl/kstat/zfs/POOL/objset-0xID``, 7 fields, 27 with the per-dataset
ZIL counters of 2.2+, 28 in 2.4); illumos reports the same file-level operations per
filesystem type or mount point through ``fsstat``. Both are cumulative, so
counters (fsstat's interval rows are summed onto its first, since-boot row).

The per-pool ``iostats`` and ``txgs`` kstats are sources of their own
(families ``iostats`` and ``txg``).
"""

from __future__ import annotations

from typing import List

from zfsmon.metrics.spec import COUNTER, MetricSpec
from zfsmon.model import Kind

_OBJSET = "/proc/spl/kstat/zfs/POOL/objset-0xID"
_FS = "fsstat"


def _ds(name: str, unit: str, help: str, linux: str = "", illumos: str = "") -> MetricSpec:
    src = {k: v for k, v in (("linux", linux), ("illumos", illumos)) if v}
    return MetricSpec(name, unit, COUNTER, help, (Kind.DATASET,), src)


def _zil(name: str, unit: str, help: str) -> MetricSpec:
    return _ds(name, unit, help, linux=f"{_OBJSET} {name} (OpenZFS >= 2.2)")



SPECS: List[MetricSpec] = [
    _ds("reads", "ops", "read calls on the dataset's files", f"{_OBJSET} reads", f"{_FS} read ops"),
    _ds("writes", "ops", "write calls on the dataset's files", f"{_OBJSET} writes", f"{_FS} write ops"),
    _ds("read_bytes", "B", "bytes read by those calls (served from ARC or disk alike)", f"{_OBJSET} nread",
        f"{_FS} read bytes"),
    _ds("write_bytes", "B", "bytes written by those calls", f"{_OBJSET} nwritten", f"{_FS} write bytes"),
    _ds("unlinks", "count", "files queued for removal", f"{_OBJSET} nunlinks"),
    _ds("unlinked", "count", "files whose removal completed", f"{_OBJSET} nunlinked"),
    # fsstat default columns
    _ds("files_created", "ops", "creations of files, directories, symlinks", illumos=f"{_FS} new file"),
    _ds("names_removed", "ops", "name removals", illumos=f"{_FS} name remov"),
    _ds("names_changed", "ops", "name changes (rename, link)", illumos=f"{_FS} name chng"),
    _ds("attr_gets", "ops", "attribute retrievals", illumos=f"{_FS} attr get"),
    _ds("attr_sets", "ops", "attribute changes", illumos=f"{_FS} attr set"),
    _ds("lookups", "ops", "name lookups", illumos=f"{_FS} lookup ops / -n lookup"),
    _ds("readdirs", "ops", "directory reads", illumos=f"{_FS} rddir ops / -n rddir"),
    # fsstat -a
    _ds("getattr_calls", "ops", "file attribute retrieval calls", illumos=f"{_FS} -a getattr"),
    _ds("setattr_calls", "ops", "file attribute modification calls", illumos=f"{_FS} -a setattr"),
    _ds("getsec_calls", "ops", "security attribute (ACL) retrieval calls", illumos=f"{_FS} -a getsec"),
    _ds("setsec_calls", "ops", "security attribute (ACL) modification calls", illumos=f"{_FS} -a setsec"),
    # fsstat -n
    _ds("creates", "ops", "file creation calls", illumos=f"{_FS} -n creat"),
    _ds("removes", "ops", "file remove calls", illumos=f"{_FS} -n remov"),
    _ds("links", "ops", "link calls", illumos=f"{_FS} -n link"),
    _ds("renames", "ops", "rename calls", illumos=f"{_FS} -n renam"),
    _ds("mkdirs", "ops", "directory creation calls", illumos=f"{_FS} -n mkdir"),
    _ds("rmdirs", "ops", "directory removal calls", illumos=f"{_FS} -n rmdir"),
    _ds("symlinks", "ops", "symlink creation calls", illumos=f"{_FS} -n symlnk"),
    _ds("readlinks", "ops", "symlink read calls", illumos=f"{_FS} -n rdlnk"),
    # per-dataset ZIL (objset kstat, 27-field version; 2.4's 28th: zil_commit_crash_count)
    _zil("zil_commit_count", "count", "zil_commit() calls (fsync, O_DSYNC, sync=always)"),
    _zil("zil_commit_writer_count", "count", "commits that wrote the log themselves (not piggy-backed)"),
    _zil("zil_commit_error_count", "count", "commits that failed and fell back to a txg sync"),
    _zil("zil_commit_stall_count", "count", "commits that waited for a txg sync"),
    _zil("zil_commit_suspend_count", "count", "commits made while the ZIL was suspended"),
    _zil("zil_commit_crash_count", "count", "commits that bypassed a crashed ZIL and waited for a txg sync (2.4+)"),
    _zil("zil_itx_count", "count", "intent-log transactions created"),
    _zil("zil_itx_indirect_count", "count", "transactions logged indirectly (data written in place)"),
    _zil("zil_itx_indirect_bytes", "B", "bytes of indirectly logged data"),
    _zil("zil_itx_copied_count", "count", "transactions whose data was copied into the log record"),
    _zil("zil_itx_copied_bytes", "B", "bytes copied into log records"),
    _zil("zil_itx_needcopy_count", "count", "transactions whose data is copied when the log is written"),
    _zil("zil_itx_needcopy_bytes", "B", "bytes copied at log write time"),
    _zil("zil_itx_metaslab_normal_count", "count", "log blocks written to the main pool"),
    _zil("zil_itx_metaslab_normal_bytes", "B", "log record bytes in main-pool log blocks"),
    _zil("zil_itx_metaslab_normal_write", "B", "bytes written for main-pool log blocks"),
    _zil("zil_itx_metaslab_normal_alloc", "B", "bytes allocated for main-pool log blocks"),
    _zil("zil_itx_metaslab_slog_count", "count", "log blocks written to a SLOG"),
    _zil("zil_itx_metaslab_slog_bytes", "B", "log record bytes in SLOG blocks"),
    _zil("zil_itx_metaslab_slog_write", "B", "bytes written to the SLOG"),
    _zil("zil_itx_metaslab_slog_alloc", "B", "bytes allocated on the SLOG"),
]
