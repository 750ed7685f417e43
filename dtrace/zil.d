#!/usr/sbin/dtrace -s
/*
 * zil.d - ZIL: zil_commit latency per pool, commits per second, and SLOG
 *         write latency per log device.
 *
 * PURPOSE   A database's commit waits in zil_commit() until its log records
 *           are on stable storage. This shows the distribution of that wait
 *           per pool, how many commits there were, and the latency of the
 *           writes that reach the separate log devices (SLOG), which is where
 *           a slow or missing SLOG shows. Twin of bpftrace/zil.bt.
 *
 * USAGE     dtrace -s zil.d INTERVAL_S [SLOW_MS]
 *           zfsmon trace zil 1
 *
 * PLATFORM  illumos (OmniOS, SmartOS, OpenIndiana); FreeBSD with ZFS, where
 *           the SLOG part needs vdev_geom_io_start/vdev_geom_io_done in
 *           place of vdev_disk_*; Linux under Oracle's DTrace for Linux 2.0
 *           with the OpenZFS module's BTF loaded (its vdev_disk_io_start/
 *           done are the same functions; ran on OpenZFS 2.3.2, Debian 12
 *           kernel 6.1: tests/data/openzfs-2.3/dtrace).
 *
 * PROBES    fbt::zil_commit:entry/return (zilog_t *: zl_spa->spa_name),
 *           fbt::vdev_disk_io_start:entry, fbt::vdev_disk_io_done:entry
 *           (zio_t *: io_type, io_size, io_vd->vdev_path,
 *           io_vd->vdev_top->vdev_islog), profile:::tick-$1s,
 *           dtrace:::BEGIN, dtrace:::END. Stability: fbt is Unstable - these
 *           are kernel functions whose signatures have held since 2008 but
 *           may change.
 *
 * CONSTANTS No number of the kernel is written here: a SLOG write is
 *           io_type == ZIO_TYPE_WRITE, the kernel's own enumerator (enum
 *           zio_type, from its CTF; D resolves it as the right operand of a
 *           comparison with a zio_type_t). Checked: illumos-gate
 *           usr/src/uts/common/sys/fs/zfs.h db860a9da66f has ZIO_TYPE_WRITE
 *           = 2 (NULL, READ, WRITE, FREE, CLAIM, IOCTL; TRIM appended later),
 *           zio.h 6e1f5caa9321 declares io_type as zio_type_t; OpenZFS
 *           include/sys/fs/zfs.h zfs-2.1.16, zfs-2.2.11, zfs-2.3.9: WRITE = 2
 *           too (2.3 renamed IOCTL to FLUSH, same value 5). zil_commit(zilog_t
 *           *, uint64_t) and vdev_disk_io_start/done(zio_t *) take the
 *           pointer as arg0 in all of them.
 *
 * OVERHEAD  Commits: two probes per commit, negligible below 100k/s. SLOG:
 *           vdev_disk_io_start fires for every disk I/O (predicate filters
 *           log writes early), about 1 us per I/O.
 *
 * OUTPUT    zfsmon trace protocol v1 (docs/tracing.md): @lat[POOL, commit, ..]
 *           and @count[POOL, commits]; @lat[VDEV_PATH, slog_write, ..].
 *           Example: dtrace/zil_example.txt
 */

#pragma D option quiet
#pragma D option defaultargs
#pragma D option switchrate=10hz
#pragma D option dynvarsize=16m

dtrace:::BEGIN
{
	printf("zfsmon-trace 1 zil entity=name interval=%d slow_ms=%d totals=1\n", $1, $2);
}

fbt::zil_commit:entry
{
	self->zc_ts = timestamp;
	self->zc_pool = stringof(((zilog_t *)arg0)->zl_spa->spa_name);
}

fbt::zil_commit:return
/self->zc_ts/
{
	this->v = timestamp - self->zc_ts;
	this->p = this->v | (this->v >> 1);
	this->p = this->p | (this->p >> 2);
	this->p = this->p | (this->p >> 4);
	this->p = this->p | (this->p >> 8);
	this->p = this->p | (this->p >> 16);
	this->p = this->p | (this->p >> 32);
	this->p = this->p - (this->p >> 1);
	this->q = this->p >> 2;
	this->b = this->q > 0 ? this->p + (this->v - this->p) / this->q * this->q : this->v;

	@lat[self->zc_pool, "commit", this->b] = count();
	@max[self->zc_pool, "commit"] = max(this->v);
	@sum[self->zc_pool, "commit"] = sum(this->v);
	@count[self->zc_pool, "commits"] = count();
}

fbt::zil_commit:return
/self->zc_ts && $2 > 0 && this->v > $2 * 1000000/
{
	printf("slow %d.%06d %s commit %d 0 pid=%d execname=%s\n", walltimestamp / 1000000000,
	    (walltimestamp % 1000000000) / 1000, self->zc_pool, this->v, pid, execname);
}

fbt::zil_commit:return
{
	self->zc_ts = 0;
	self->zc_pool = 0;
}

fbt::vdev_disk_io_start:entry
/((zio_t *)arg0)->io_type == ZIO_TYPE_WRITE && ((zio_t *)arg0)->io_vd->vdev_top->vdev_islog/
{
	slog_ts[arg0] = timestamp;
}

fbt::vdev_disk_io_done:entry
/slog_ts[arg0]/
{
	this->v = timestamp - slog_ts[arg0];
	slog_ts[arg0] = 0;
	this->dev = stringof(((zio_t *)arg0)->io_vd->vdev_path);
	this->p = this->v | (this->v >> 1);
	this->p = this->p | (this->p >> 2);
	this->p = this->p | (this->p >> 4);
	this->p = this->p | (this->p >> 8);
	this->p = this->p | (this->p >> 16);
	this->p = this->p | (this->p >> 32);
	this->p = this->p - (this->p >> 1);
	this->q = this->p >> 2;
	this->b = this->q > 0 ? this->p + (this->v - this->p) / this->q * this->q : this->v;

	@lat[this->dev, "slog_write", this->b] = count();
	@max[this->dev, "slog_write"] = max(this->v);
	@sum[this->dev, "slog_write"] = sum(this->v);
	@bytes[this->dev, "slog_write"] = sum(((zio_t *)arg0)->io_size);
}

profile:::tick-$1s
{
	printf("interval %d.%06d %d\n", walltimestamp / 1000000000, (walltimestamp % 1000000000) / 1000, $1);
	printa("@lat[%s, %s, %d]: %@d\n", @lat);
	printa("@max[%s, %s]: %@d\n", @max);
	printa("@sum[%s, %s]: %@d\n", @sum);
	printa("@bytes[%s, %s]: %@d\n", @bytes);
	printa("@count[%s, %s]: %@d\n", @count);
	printf("end\n");
	trunc(@max);
}

dtrace:::END
{
	trunc(@lat);
	trunc(@max);
	trunc(@sum);
	trunc(@bytes);
	trunc(@count);
}
