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
 *           Private/Unstable; b_flags bit values differ between releases:
 *           ARC_FLAG_PREFETCH is 1 << 2 everywhere, ARC_FLAG_BUFC_METADATA is
 *           1 << 15 on illumos since 2015 (1 << 17 in OpenZFS 2.x, 1 << 16 in
 *           FreeBSD 11) - set ARC_METADATA below to match arc_impl.h / arc.h.
 *           "Prefetch" here means the buffer was read by prefetch (a header
 *           flag), which is close to but not exactly arcstats' request flag.
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

inline uint64_t ARC_PREFETCH = 1 << 2;
inline uint64_t ARC_METADATA = 1 << 15;

dtrace:::BEGIN
{
	printf("zfsmon-trace 1 arc entity=name interval=%d\n", $1);
}

sdt:zfs::arc-hit,
sdt:zfs::arc-miss
{
	this->hdr = (arc_buf_hdr_t *)arg0;
	this->kind = strjoin(this->hdr->b_flags & ARC_PREFETCH ? "prefetch_" : "demand_",
	    this->hdr->b_flags & ARC_METADATA ? "metadata_" : "data_");
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
	trunc(@count);
	trunc(@bytes);
}

dtrace:::END
{
	trunc(@count);
	trunc(@bytes);
}
