#!/usr/sbin/dtrace -s
/*
 * zfsslower_linux.d - ZFS read/write latency per filesystem, slow operations,
 *                     and op counts: OpenZFS on Linux.
 *
 * PURPOSE   zfsslower.d's variant for the OpenZFS kernel module on Linux, run
 *           by Oracle's DTrace for Linux: zfsslower.d reads illumos's vnode_t
 *           (v_vfsp, v_path) at zfs_read/zfs_write and counts ops with the
 *           fsinfo provider, and Linux has neither (its znode_t embeds a
 *           struct inode: "z_zfsvfs is not a member of struct znode"; fsinfo:::
 *           matches nothing). This times the ZPL's read and write entry points
 *           as bpftrace/zfsslower.bt does and prints the same lines: per
 *           interval a log-linear latency histogram, max, sum and bytes per
 *           filesystem and op, op counts, and each op slower than SLOW_MS on
 *           its own line with the process and file name.
 *
 * USAGE     dtrace -s zfsslower_linux.d INTERVAL_S [SLOW_MS]
 *           zfsmon trace zfsslower 1 --slow 10 --backend dtrace
 *
 * PLATFORM  Linux, OpenZFS 0.8 - 2.4 kernel module with its BTF loaded
 *           (/sys/kernel/btf/zfs: docs/tracing.md, "D on kernel OpenZFS"),
 *           Oracle DTrace for Linux 2.0; root. Ran on OpenZFS 2.3.2, Debian
 *           12 kernel 6.1 (tests/data/openzfs-2.3/dtrace).
 *
 * PROBES    fbt::zpl_iter_read, fbt::zpl_iter_write :entry and :return (arg1
 *           at return is the byte count or a negative errno); fbt::zpl_open,
 *           zpl_fsync, zpl_iterate, zpl_lookup :entry (counts only);
 *           profile:::tick-$1s, dtrace:::BEGIN, dtrace:::END. fbt probes of a
 *           module are not a stable interface (Unstable). The filesystem is
 *           its superblock's anonymous device number (s_dev); zfsmon maps it
 *           to the dataset through /proc/self/mountinfo.
 *
 * CONSTANTS None: no number of the kernel or of OpenZFS is used; struct
 *           kiocb/file/inode/super_block/dentry members are read by name
 *           through the kernel's BTF. Probe arguments checked in openzfs/zfs
 *           module/os/linux/zfs/zpl_file.c and zpl_inode.c at zfs-2.1.16,
 *           zfs-2.2.11, zfs-2.3.9 (as zfsslower.bt): zpl_iter_read and
 *           zpl_iter_write(struct kiocb *, struct iov_iter *), zpl_open(struct
 *           inode *, struct file *), zpl_fsync(struct file *, loff_t, loff_t,
 *           int), zpl_iterate(struct file *, struct dir_context *),
 *           zpl_lookup(struct inode *, struct dentry *, unsigned int).
 *
 * OVERHEAD  Two probes and a few aggregation updates per read/write; a slow
 *           line only above SLOW_MS.
 *
 * OUTPUT    zfsmon trace protocol v1 (docs/tracing.md): entity = dev_t of the
 *           filesystem, ops read | write, @count[DEV, op_NAME].
 *           Example: dtrace/zfsslower_linux_example.txt
 */

#pragma D option quiet
#pragma D option defaultargs
#pragma D option switchrate=10hz

dtrace:::BEGIN
{
	printf("zfsmon-trace 1 zfsslower entity=devt interval=%d slow_ms=%d totals=1\n", $1, $2);
}

fbt::zpl_iter_read:entry,
fbt::zpl_iter_write:entry
{
	self->zs_ts = timestamp;
	self->zs_file = ((struct kiocb *)arg0)->ki_filp;
	self->zs_op = probefunc == "zpl_iter_read" ? "read" : "write";
	@count[self->zs_file->f_inode->i_sb->s_dev, strjoin("op_", self->zs_op)] = count();
}

fbt::zpl_iter_read:return,
fbt::zpl_iter_write:return
/self->zs_ts/
{
	this->v = timestamp - self->zs_ts;
	this->dev = self->zs_file->f_inode->i_sb->s_dev;
	this->bytes = (int64_t)arg1 > 0 ? (int64_t)arg1 : 0;
	this->p = this->v | (this->v >> 1);
	this->p = this->p | (this->p >> 2);
	this->p = this->p | (this->p >> 4);
	this->p = this->p | (this->p >> 8);
	this->p = this->p | (this->p >> 16);
	this->p = this->p | (this->p >> 32);
	this->p = this->p - (this->p >> 1);
	this->q = this->p >> 2;
	this->b = this->q > 0 ? this->p + (this->v - this->p) / this->q * this->q : this->v;
	@lat[this->dev, self->zs_op, this->b] = count();
	@max[this->dev, self->zs_op] = max(this->v);
	@sum[this->dev, self->zs_op] = sum(this->v);
	@bytes[this->dev, self->zs_op] = sum(this->bytes);
}

fbt::zpl_iter_read:return,
fbt::zpl_iter_write:return
/self->zs_ts && $2 > 0 && this->v > $2 * 1000000/
{
	printf("slow %d.%06d %d %s %d %d pid=%d comm=%s file=%s\n", walltimestamp / 1000000000,
	    (walltimestamp % 1000000000) / 1000, this->dev, self->zs_op, this->v, this->bytes, pid, execname,
	    stringof(self->zs_file->f_path.dentry->d_name.name));
}

fbt::zpl_iter_read:return,
fbt::zpl_iter_write:return
{
	self->zs_ts = 0;
	self->zs_file = 0;
	self->zs_op = 0;
}

fbt::zpl_open:entry
{
	@count[((struct inode *)arg0)->i_sb->s_dev, "op_open"] = count();
}

fbt::zpl_fsync:entry
{
	@count[((struct file *)arg0)->f_inode->i_sb->s_dev, "op_fsync"] = count();
}

fbt::zpl_iterate:entry
{
	@count[((struct file *)arg0)->f_inode->i_sb->s_dev, "op_readdir"] = count();
}

fbt::zpl_lookup:entry
{
	@count[((struct inode *)arg0)->i_sb->s_dev, "op_lookup"] = count();
}

profile:::tick-$1s
{
	printf("interval %d.%06d %d\n", walltimestamp / 1000000000, (walltimestamp % 1000000000) / 1000, $1);
	printa("@lat[%d, %s, %d]: %@d\n", @lat);
	printa("@max[%d, %s]: %@d\n", @max);
	printa("@sum[%d, %s]: %@d\n", @sum);
	printa("@bytes[%d, %s]: %@d\n", @bytes);
	printa("@count[%d, %s]: %@d\n", @count);
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
