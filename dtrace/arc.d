#!/usr/sbin/dtrace -s
/*
 * arc.d - ARC and L2ARC hits and misses by kind (demand/prefetch x
 *         data/metadata), and the L2ARC feed, per interval.
 *
 * PURPOSE   The arcstats kstat counts hits and misses since boot; this counts
 *           them from the events, per interval, split the way the read path
 *           splits them, with L2ARC hits/misses and how much the L2ARC feed
 *           thread wrote. Twin of bpftrace/arc.bt.
 *
 * USAGE     dtrace -s arc.d INTERVAL_S
 *           zfsmon trace arc 5
 *
 * PLATFORM  illumos (OmniOS, SmartOS, OpenIndiana); FreeBSD with ZFS (the
 *           same sdt probes exist as sdt:zfs::arc-hit etc. on FreeBSD 9+ and
 *           as sdt:::arc-hit under OpenZFS 2.x).
 *
 * PROBES    sdt:zfs::arc-hit, sdt:zfs::arc-miss (arg0 = arc_buf_hdr_t *),
 *           sdt:zfs::l2arc-hit, sdt:zfs::l2arc-miss, sdt:zfs::l2arc-write
 *           (arg1 = the write zio_t *), profile:::tick-$1s, dtrace:::BEGIN,
 *           dtrace:::END. Stability: sdt probes of the zfs module are
 *           Private/Unstable. "Prefetch" here means the buffer was read by
 *           prefetch (a header flag), which is close to but not exactly
 *           arcstats' request flag.
 *
 * CONSTANTS No number of the kernel is written here: the script uses the
 *           kernel's own names, resolved from its CTF, so the values follow
 *           the running kernel. Metadata is hdr->b_type == ARC_BUFC_METADATA
 *           (enum arc_buf_contents). Prefetch is the bit ARC_FLAG_PREFETCH of
 *           hdr->b_flags (enum arc_flags); D shows a kernel enumerator only
 *           as the right operand of a comparison with a value of its enum
 *           type (Dynamic Tracing Guide, "Enumerations"), so BEGIN finds the
 *           bit by five such comparisons, checks it, and prints an error
 *           line if the kernel has no such single bit. Why names: the
 *           metadata bit moved. illumos-gate arc.h 356e1b4941ba (after "8727
 *           Native data and metadata encryption", 2019) has
 *           ARC_FLAG_BUFC_METADATA = 1 << 17, ARC_FLAG_PROTECTED = 1 << 15,
 *           ARC_FLAG_PREFETCH = 1 << 2; before 8727 the metadata bit was
 *           1 << 15, the number this script once wrote. Checked against
 *           illumos-gate arc.h 356e1b4941ba and arc_impl.h 21f5cb707d80
 *           (b_type is arc_buf_contents_t, b_flags is arc_flags_t) and
 *           OpenZFS include/sys/arc.h zfs-2.1.16, zfs-2.2.11, zfs-2.3.9
 *           (FreeBSD 13+): the same names. l2arc-write's arg1 is the zio_t *
 *           (io_size): OpenZFS module/zfs/arc.c zfs-2.3.9,
 *           DTRACE_PROBE2(l2arc__write, vdev_t *, zio_t *).
 *
 * OVERHEAD  One aggregation per ARC access: at 1M ARC hits/s roughly 5-10 %
 *           of one CPU. For long recordings prefer the arcstats counters.
 *
 * OUTPUT    zfsmon trace protocol v1 (docs/tracing.md): @count[arc, NAME],
 *           @count[l2arc, NAME], @bytes[l2arc, feed].
 *           Example: dtrace/arc_example.txt
 */

#pragma D option quiet
#pragma D option defaultargs
#pragma D option switchrate=10hz

dtrace:::BEGIN
{
	printf("zfsmon-trace 1 arc entity=name interval=%d totals=1\n", $1);

	/*
	 * arc_prefetch = the running kernel's ARC_FLAG_PREFETCH: a binary
	 * search over bit numbers 0-31 by comparing with the enumerator, then
	 * an exact check.
	 */
	this->bit = 0;
	this->f = (arc_flags_t)(1 << (this->bit + 16));
	this->bit += this->f <= ARC_FLAG_PREFETCH ? 16 : 0;
	this->f = (arc_flags_t)(1 << (this->bit + 8));
	this->bit += this->f <= ARC_FLAG_PREFETCH ? 8 : 0;
	this->f = (arc_flags_t)(1 << (this->bit + 4));
	this->bit += this->f <= ARC_FLAG_PREFETCH ? 4 : 0;
	this->f = (arc_flags_t)(1 << (this->bit + 2));
	this->bit += this->f <= ARC_FLAG_PREFETCH ? 2 : 0;
	this->f = (arc_flags_t)(1 << (this->bit + 1));
	this->bit += this->f <= ARC_FLAG_PREFETCH ? 1 : 0;
	arc_prefetch = 1 << this->bit;
	this->f = (arc_flags_t)arc_prefetch;
	arc_flags_known = this->f == ARC_FLAG_PREFETCH;
}

dtrace:::BEGIN
/!arc_flags_known/
{
	printf("error ARC_FLAG_PREFETCH of this kernel is not one bit: demand and prefetch cannot be told apart\n");
	exit(1);
}

sdt:zfs::arc-hit,
sdt:zfs::arc-miss
{
	this->hdr = (arc_buf_hdr_t *)arg0;
	this->kind = strjoin(this->hdr->b_flags & arc_prefetch ? "prefetch_" : "demand_",
	    this->hdr->b_type == ARC_BUFC_METADATA ? "metadata_" : "data_");
	@count["arc", strjoin(this->kind, probename == "arc-hit" ? "hits" : "misses")] = count();
}

sdt:zfs::l2arc-hit
{
	@count["l2arc", "hits"] = count();
}

sdt:zfs::l2arc-miss
{
	@count["l2arc", "misses"] = count();
}

sdt:zfs::l2arc-write
{
	@count["l2arc", "feed_writes"] = count();
	@bytes["l2arc", "feed"] = sum(((zio_t *)arg1)->io_size);
}

profile:::tick-$1s
{
	printf("interval %d.%06d %d\n", walltimestamp / 1000000000, (walltimestamp % 1000000000) / 1000, $1);
	printa("@count[%s, %s]: %@d\n", @count);
	printa("@bytes[%s, %s]: %@d\n", @bytes);
	printf("end\n");
}

dtrace:::END
{
	trunc(@count);
	trunc(@bytes);
}
