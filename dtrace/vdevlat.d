#!/usr/sbin/dtrace -s
/*
 * vdevlat.d - per-device (and, through zfsmon, per-vdev) I/O latency
 *             histograms and outliers, read vs write.
 *
 * PURPOSE   Averages hide the tail: this keeps the whole latency distribution
 *           of every disk ZFS uses, per interval, plus every I/O slower than
 *           SLOW_MS on its own line. zfsmon maps each device to its vdev and
 *           role (data, log/SLOG, cache/L2ARC, special) with `zpool status`
 *           and the /dev/dsk links. Twin of bpftrace/blklat.bt.
 *
 * USAGE     dtrace -s vdevlat.d INTERVAL_S [SLOW_MS]
 *             INTERVAL_S  seconds per report (integer >= 1)
 *             SLOW_MS     also print every I/O slower than this (0 = off)
 *           zfsmon trace vdevlat 1 --slow 50
 *
 * PLATFORM  illumos (OmniOS, SmartOS, OpenIndiana), Solaris; Linux under
 *           Oracle's DTrace for Linux 2.0 (its io provider translates a struct
 *           bio into the same bufinfo_t/devinfo_t; ran on OpenZFS 2.3.2,
 *           Debian 12 kernel 6.1: tests/data/openzfs-2.3/dtrace). FreeBSD's io
 *           provider passes struct bio / devstat instead of buf / devinfo:
 *           there use bpftrace-like fields (args[1]->device_name) - not
 *           supported by this script yet.
 *
 * PROBES    io:::start, io:::done (Stable; args[0] bufinfo_t: b_edev,
 *           b_blkno, b_flags, b_bcount; args[1] devinfo_t: dev_pathname,
 *           Stable), profile:::tick-$1s, dtrace:::BEGIN, dtrace:::END.
 *           The device is named by dev_pathname (/devices/...:a), which is
 *           the target of its /dev/dsk/cXtYdZsN link; on Linux, where a
 *           bio's dev_pathname is "<unknown>", by dev_statname (vdb1: the
 *           partition's kernel name, as /proc/diskstats has it).
 *
 * CONSTANTS No number is written here. Read vs write is b_flags & B_READ,
 *           the io provider library's own inline: illumos-gate
 *           usr/src/lib/libdtrace/common/io.d.in 38f1dde9a66e has
 *           "inline int B_READ = @B_READ@;", filled in from <sys/buf.h> when
 *           illumos is built, so it follows the platform. bufinfo_t and
 *           devinfo_t members are the io provider's Stable translated
 *           interface (same file), not kernel layout.
 *
 * OVERHEAD  Two aggregations and one associative-array update per I/O: ~1-3
 *           us of CPU per I/O; at 50k IOPS a few % of one CPU. Slow lines
 *           only above SLOW_MS.
 *
 * OUTPUT    zfsmon trace protocol v1 (docs/tracing.md), entity = device path;
 *           @count[DEV, issued_reads | issued_writes]: the I/Os io:::start
 *           saw, which the latency histograms (timed at io:::done) may fall
 *           short of where the io provider reports fewer completions.
 *           Example: dtrace/vdevlat_example.txt
 */

#pragma D option quiet
#pragma D option defaultargs
#pragma D option switchrate=10hz
#pragma D option dynvarsize=16m

dtrace:::BEGIN
{
	printf("zfsmon-trace 1 vdevlat entity=name interval=%d slow_ms=%d totals=1\n", $1, $2);
}

io:::start
{
	start_ts[args[0]->b_edev, args[0]->b_blkno] = timestamp;
	/* every I/O issued, counted where it starts: io:::done fires for fewer (DTrace for Linux, docs/tracing.md) */
	@count[args[1]->dev_pathname == "<unknown>" ? args[1]->dev_statname : args[1]->dev_pathname,
	    args[0]->b_flags & B_READ ? "issued_reads" : "issued_writes"] = count();
}

io:::done
{
	this->v = 0;
}

io:::done
/start_ts[args[0]->b_edev, args[0]->b_blkno] && timestamp < start_ts[args[0]->b_edev, args[0]->b_blkno]/
{
	/*
	 * A completion timed before its start: the start and the completion ran on different CPUs whose clocks
	 * disagree (seen in the QEMU guest: a write "done" 0.49 s before it began). No latency; forgotten.
	 */
	start_ts[args[0]->b_edev, args[0]->b_blkno] = 0;
}
io:::done
/start_ts[args[0]->b_edev, args[0]->b_blkno]/
{
	this->v = timestamp - start_ts[args[0]->b_edev, args[0]->b_blkno];
	start_ts[args[0]->b_edev, args[0]->b_blkno] = 0;
	this->op = args[0]->b_flags & B_READ ? "read" : "write";
	/* Linux (Oracle's DTrace): a bio's dev_pathname is "<unknown>", its disk's name (vdb) is dev_statname */
	this->dev = args[1]->dev_pathname == "<unknown>" ? args[1]->dev_statname : args[1]->dev_pathname;

	/* log-linear bucket: highest power of two p, then quarters of p */
	this->p = this->v | (this->v >> 1);
	this->p = this->p | (this->p >> 2);
	this->p = this->p | (this->p >> 4);
	this->p = this->p | (this->p >> 8);
	this->p = this->p | (this->p >> 16);
	this->p = this->p | (this->p >> 32);
	this->p = this->p - (this->p >> 1);
	this->q = this->p >> 2;
	this->b = this->q > 0 ? this->p + (this->v - this->p) / this->q * this->q : this->v;

	@lat[this->dev, this->op, this->b] = count();
	@max[this->dev, this->op] = max(this->v);
	@sum[this->dev, this->op] = sum(this->v);
	@bytes[this->dev, this->op] = sum(args[0]->b_bcount);
}

io:::done
/$2 > 0 && this->v > $2 * 1000000/
{
	printf("slow %d.%06d %s %s %d %d blkno=%d\n", walltimestamp / 1000000000,
	    (walltimestamp % 1000000000) / 1000, this->dev, this->op, this->v, args[0]->b_bcount,
	    args[0]->b_blkno);
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
