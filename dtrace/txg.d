#!/usr/sbin/dtrace -s
/*
 * txg.d - txg sync (spa_sync) duration per pool.
 *
 * PURPOSE   Every few seconds ZFS writes out a transaction group in
 *           spa_sync(). Syncs longer than the txg interval throttle writers;
 *           the distribution of sync times per pool, and each sync slower
 *           than SLOW_MS with its txg number, show it first. Twin of
 *           bpftrace/txg.bt.
 *
 * USAGE     dtrace -s txg.d INTERVAL_S [SLOW_MS]
 *           zfsmon trace txg 10
 *
 * PLATFORM  illumos (OmniOS, SmartOS, OpenIndiana); FreeBSD with ZFS
 *           (same function and arguments); Linux under Oracle's DTrace for
 *           Linux 2.0 with the OpenZFS module's BTF loaded (ran on OpenZFS
 *           2.3.2, Debian 12 kernel 6.1: tests/data/openzfs-2.3/dtrace).
 *
 * PROBES    fbt::spa_sync:entry (arg0 spa_t *, arg1 txg),
 *           fbt::spa_sync:return, profile:::tick-$1s, dtrace:::BEGIN,
 *           dtrace:::END. Stability: fbt is Unstable, but spa_sync(spa_t *,
 *           uint64_t) has not changed since the first ZFS release. The
 *           arguments are cast from arg0/arg1 rather than read as typed
 *           args[]: the same on illumos, and compile-checkable where the
 *           probe does not exist (docs/tracing.md, "Compile check").
 *
 * CONSTANTS None: no number of the kernel is used. Probe arguments checked:
 *           spa_sync(spa_t *spa, uint64_t txg) in OpenZFS module/zfs/spa.c
 *           zfs-2.1.16, zfs-2.2.11, zfs-2.3.9 and in illumos-gate; the pool
 *           name is the spa_name member, read through the kernel's CTF.
 *
 * OVERHEAD  Negligible: one sync per pool every few seconds.
 *
 * OUTPUT    zfsmon trace protocol v1 (docs/tracing.md): @lat/@max/@sum[POOL,
 *           sync, ..], @count[POOL, txgs]; slow lines carry txg=N.
 *           Example: dtrace/txg_example.txt
 */

#pragma D option quiet
#pragma D option defaultargs
#pragma D option switchrate=10hz

dtrace:::BEGIN
{
	printf("zfsmon-trace 1 txg entity=name interval=%d slow_ms=%d totals=1\n", $1, $2);
}

fbt::spa_sync:entry
{
	self->ss_ts = timestamp;
	self->ss_pool = stringof(((spa_t *)arg0)->spa_name);
	self->ss_txg = arg1;
}

fbt::spa_sync:return
/self->ss_ts/
{
	this->v = timestamp - self->ss_ts;
	this->p = this->v | (this->v >> 1);
	this->p = this->p | (this->p >> 2);
	this->p = this->p | (this->p >> 4);
	this->p = this->p | (this->p >> 8);
	this->p = this->p | (this->p >> 16);
	this->p = this->p | (this->p >> 32);
	this->p = this->p - (this->p >> 1);
	this->q = this->p >> 2;
	this->b = this->q > 0 ? this->p + (this->v - this->p) / this->q * this->q : this->v;

	@lat[self->ss_pool, "sync", this->b] = count();
	@max[self->ss_pool, "sync"] = max(this->v);
	@sum[self->ss_pool, "sync"] = sum(this->v);
	@count[self->ss_pool, "txgs"] = count();
}

fbt::spa_sync:return
/self->ss_ts && $2 > 0 && this->v > $2 * 1000000/
{
	printf("slow %d.%06d %s sync %d 0 txg=%d\n", walltimestamp / 1000000000,
	    (walltimestamp % 1000000000) / 1000, self->ss_pool, this->v, self->ss_txg);
}

fbt::spa_sync:return
{
	self->ss_ts = 0;
	self->ss_pool = 0;
	self->ss_txg = 0;
}

profile:::tick-$1s
{
	printf("interval %d.%06d %d\n", walltimestamp / 1000000000, (walltimestamp % 1000000000) / 1000, $1);
	printa("@lat[%s, %s, %d]: %@d\n", @lat);
	printa("@max[%s, %s]: %@d\n", @max);
	printa("@sum[%s, %s]: %@d\n", @sum);
	printa("@count[%s, %s]: %@d\n", @count);
	printf("end\n");
	trunc(@max);
}

dtrace:::END
{
	trunc(@lat);
	trunc(@max);
	trunc(@sum);
	trunc(@count);
}
