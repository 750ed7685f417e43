#!/usr/sbin/dtrace -s
/*
 * zfsslower.d - ZFS read/write latency per filesystem, slow operations, and
 *               fsstat-like operation counts.
 *
 * PURPOSE   Latency as applications see it at the ZFS vnode layer (ARC hits
 *           included), per mounted filesystem, with every read or write
 *           slower than SLOW_MS printed on its own line (like zfsslower.d
 *           from the DTrace book and bcc), and per-filesystem operation
 *           counts by type (like fsstat). Twin of bpftrace/zfsslower.bt.
 *
 * USAGE     dtrace -s zfsslower.d INTERVAL_S [SLOW_MS]
 *           zfsmon trace zfsslower 1 --slow 10
 *
 * PLATFORM  illumos (OmniOS, SmartOS, OpenIndiana). FreeBSD has no fsinfo
 *           provider and a different zfs_read signature; not supported.
 *
 * PROBES    fbt::zfs_read:entry/return, fbt::zfs_write:entry/return
 *           (arg0 vnode_t *: v_vfsp->vfs_mntpt, v_path; arg1 uio_t *:
 *           uio_resid) - Unstable; fsinfo::: with fi_fs == "zfs" (fileinfo_t:
 *           fi_mount, as xlate <fileinfo_t *>((vnode_t *)arg0), the native
 *           argument of args[0]; Evolving) for the op counts; profile:::tick-$1s,
 *           dtrace:::BEGIN, dtrace:::END.
 *
 * CONSTANTS None: no number of the kernel is used (the file system is
 *           matched by name, fi_fs == "zfs"). Probe arguments: illumos-gate
 *           usr/src/uts/common/fs/zfs/zfs_vnops.c zfs_read/zfs_write(vnode_t
 *           *vp, uio_t *uio, int ioflag, cred_t *cr, caller_context_t *ct),
 *           so arg0 is the vnode and arg1 the uio (present in illumos-gate
 *           master of early 2025, per issue 17's review); members are read
 *           through the kernel's CTF.
 *
 * OVERHEAD  Two probes per read/write plus one per VFS operation: at 200k
 *           ops/s about 5 % of one CPU. Slow lines only above SLOW_MS.
 *
 * OUTPUT    zfsmon trace protocol v1 (docs/tracing.md): entity = mountpoint,
 *           ops read | write, @count[MOUNT, op_NAME] (NAME = fsinfo probe).
 *           Example: dtrace/zfsslower_example.txt
 */

#pragma D option quiet
#pragma D option defaultargs
#pragma D option switchrate=10hz

dtrace:::BEGIN
{
	printf("zfsmon-trace 1 zfsslower entity=name interval=%d slow_ms=%d totals=1\n", $1, $2);
}

fbt::zfs_read:entry,
fbt::zfs_write:entry
{
	self->zs_ts = timestamp;
	self->zs_mnt = stringof(((vnode_t *)arg0)->v_vfsp->vfs_mntpt->rs_string);
	self->zs_path = ((vnode_t *)arg0)->v_path != NULL ? stringof(((vnode_t *)arg0)->v_path) : "<unknown>";
	self->zs_bytes = ((uio_t *)arg1)->uio_resid;
}

fbt::zfs_read:return,
fbt::zfs_write:return
/self->zs_ts/
{
	this->v = timestamp - self->zs_ts;
	this->op = probefunc == "zfs_read" ? "read" : "write";
	this->p = this->v | (this->v >> 1);
	this->p = this->p | (this->p >> 2);
	this->p = this->p | (this->p >> 4);
	this->p = this->p | (this->p >> 8);
	this->p = this->p | (this->p >> 16);
	this->p = this->p | (this->p >> 32);
	this->p = this->p - (this->p >> 1);
	this->q = this->p >> 2;
	this->b = this->q > 0 ? this->p + (this->v - this->p) / this->q * this->q : this->v;

	@lat[self->zs_mnt, this->op, this->b] = count();
	@max[self->zs_mnt, this->op] = max(this->v);
	@sum[self->zs_mnt, this->op] = sum(this->v);
	@bytes[self->zs_mnt, this->op] = sum(self->zs_bytes);
}

fbt::zfs_read:return,
fbt::zfs_write:return
/self->zs_ts && $2 > 0 && this->v > $2 * 1000000/
{
	printf("slow %d.%06d %s %s %d %d pid=%d execname=%s file=%s\n", walltimestamp / 1000000000,
	    (walltimestamp % 1000000000) / 1000, self->zs_mnt, this->op, this->v, self->zs_bytes, pid,
	    execname, self->zs_path);
}

fbt::zfs_read:return,
fbt::zfs_write:return
{
	self->zs_ts = 0;
	self->zs_mnt = 0;
	self->zs_path = 0;
	self->zs_bytes = 0;
}

fsinfo:::
/xlate <fileinfo_t *>((vnode_t *)arg0)->fi_fs == "zfs"/
{
	@count[xlate <fileinfo_t *>((vnode_t *)arg0)->fi_mount, strjoin("op_", probename)] = count();
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
	trunc(@count);
	trunc(@bytes);
}
