#!/usr/sbin/dtrace -s
/*
 * arc_linux.d - ARC hits, I/O hits and misses by kind (demand/prefetch x
 *               data/metadata), and L2ARC hits, per interval: OpenZFS on Linux.
 *
 * PURPOSE   arc.d's variant for the OpenZFS 2.2+ kernel module on Linux, run by
 *           Oracle's DTrace for Linux. arc.d's sdt probes are kernel
 *           tracepoints there, which Debian's zfs-dkms builds without
 *           (sdt:zfs:: matches nothing); and its fbt attaches with fentry,
 *           which cannot probe arc_read() on kernel 6.1 (its done callback is
 *           a function pointer, and the verifier refuses a program that reads
 *           it: "arg3 type FUNC_PROTO is not a struct"). Every count arcstats
 *           makes on the read path goes with one call of arc_access(hdr,
 *           arc_flags, hit), so this counts those calls. zfsmon runs it for
 *           `zfsmon trace arc --backend dtrace` on Linux.
 *
 * USAGE     dtrace -s arc_linux.d INTERVAL_S
 *           zfsmon trace arc 5 --backend dtrace
 *
 * PLATFORM  Linux, OpenZFS 2.2 - 2.4 kernel module with its BTF loaded
 *           (/sys/kernel/btf/zfs: docs/tracing.md, "D on kernel OpenZFS"),
 *           Oracle DTrace for Linux 2.0; root. Ran on OpenZFS 2.3.2, Debian
 *           12 kernel 6.1 (tests/data/openzfs-2.3/dtrace). OpenZFS 2.1's
 *           arc_access(hdr, hash_lock) has no hit argument: zfsmon refuses the
 *           script there.
 *
 * PROBES    fbt::arc_access:entry (arg0 = arc_buf_hdr_t *, arg1 = the
 *           caller's arc_flags_t, arg2 = hit), fbt::arc_write_done:entry and
 *           :return (a written block's first access is no read),
 *           fbt::l2arc_read_done:entry (one per L2ARC read: arcstats counts an
 *           L2ARC hit when it issues that read), profile:::tick-$1s,
 *           dtrace:::BEGIN, dtrace:::END. fbt probes of a module are not a
 *           stable interface (Unstable). The callers of arc_access in
 *           module/zfs/arc.c, and what arcstats counts beside each:
 *           arc_read's hit (hit true: hits), its read that joins an I/O in
 *           flight (hit false, the header's ARC_FLAG_IO_IN_PROGRESS already
 *           set: iohits), its miss (hit false, that flag set only after the
 *           call: misses; embedded block pointers make no call and no
 *           count); arc_buf_access (flags 0, hit true: a demand hit); and
 *           arc_write_done (no count). Demand or prefetch is the caller's
 *           ARC_FLAG_PREFETCH, data or metadata the header's
 *           ARC_FLAG_BUFC_METADATA (HDR_ISTYPE_METADATA), as arcstats splits
 *           them. Not seen here: L2ARC misses and the feed (counted inside
 *           arc_read and l2arc_write_buffers, which is inlined).
 *
 * CONSTANTS No number of the kernel is written here: the three flags are the
 *           kernel's own enumerators (enum arc_flags, from the module's BTF),
 *           each bit found in BEGIN by comparisons with the enumerator, as
 *           arc.d finds ARC_FLAG_PREFETCH (D shows a kernel enumerator only
 *           as the right operand of a comparison with a value of its enum
 *           type); BEGIN prints an error line if one is not a single bit.
 *           Checked against openzfs/zfs module/zfs/arc.c zfs-2.3.2 and
 *           zfs-2.4.0 (the five calls of arc_access above, arc_access(
 *           arc_buf_hdr_t *hdr, arc_flags_t arc_flags, boolean_t hit)) and
 *           zfs-2.1.11 (arc_access(hdr, hash_lock)); include/sys/arc.h (the
 *           flags), include/sys/arc_impl.h (b_flags is arc_flags_t).
 *
 * OVERHEAD  One probe per ARC access (every DMU buffer hold): at 100k
 *           accesses/s a few % of a core.
 *
 * OUTPUT    zfsmon trace protocol v1 (docs/tracing.md): @count[arc, NAME],
 *           NAME as in arcstats (demand_data_hits ... prefetch_metadata_iohits),
 *           @count[l2arc, hits].
 *           Example: dtrace/arc_linux_example.txt
 */

#pragma D option quiet
#pragma D option defaultargs
#pragma D option switchrate=10hz

dtrace:::BEGIN
{
	printf("zfsmon-trace 1 arc entity=name interval=%d totals=1\n", $1);

	/* the running kernel's ARC_FLAG_PREFETCH: a binary search over bit numbers 0-31, then an exact check */
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

	/* ARC_FLAG_IO_IN_PROGRESS, the same way */
	this->bit = 0;
	this->f = (arc_flags_t)(1 << (this->bit + 16));
	this->bit += this->f <= ARC_FLAG_IO_IN_PROGRESS ? 16 : 0;
	this->f = (arc_flags_t)(1 << (this->bit + 8));
	this->bit += this->f <= ARC_FLAG_IO_IN_PROGRESS ? 8 : 0;
	this->f = (arc_flags_t)(1 << (this->bit + 4));
	this->bit += this->f <= ARC_FLAG_IO_IN_PROGRESS ? 4 : 0;
	this->f = (arc_flags_t)(1 << (this->bit + 2));
	this->bit += this->f <= ARC_FLAG_IO_IN_PROGRESS ? 2 : 0;
	this->f = (arc_flags_t)(1 << (this->bit + 1));
	this->bit += this->f <= ARC_FLAG_IO_IN_PROGRESS ? 1 : 0;
	arc_in_progress = 1 << this->bit;
	this->f = (arc_flags_t)arc_in_progress;
	arc_flags_known = arc_flags_known && this->f == ARC_FLAG_IO_IN_PROGRESS;

	/* ARC_FLAG_BUFC_METADATA, the same way */
	this->bit = 0;
	this->f = (arc_flags_t)(1 << (this->bit + 16));
	this->bit += this->f <= ARC_FLAG_BUFC_METADATA ? 16 : 0;
	this->f = (arc_flags_t)(1 << (this->bit + 8));
	this->bit += this->f <= ARC_FLAG_BUFC_METADATA ? 8 : 0;
	this->f = (arc_flags_t)(1 << (this->bit + 4));
	this->bit += this->f <= ARC_FLAG_BUFC_METADATA ? 4 : 0;
	this->f = (arc_flags_t)(1 << (this->bit + 2));
	this->bit += this->f <= ARC_FLAG_BUFC_METADATA ? 2 : 0;
	this->f = (arc_flags_t)(1 << (this->bit + 1));
	this->bit += this->f <= ARC_FLAG_BUFC_METADATA ? 1 : 0;
	arc_metadata = 1 << this->bit;
	this->f = (arc_flags_t)arc_metadata;
	arc_flags_known = arc_flags_known && this->f == ARC_FLAG_BUFC_METADATA;
}

dtrace:::BEGIN
/!arc_flags_known/
{
	printf("error ARC_FLAG_PREFETCH, _IO_IN_PROGRESS or _BUFC_METADATA of this kernel is not one bit: the kinds cannot be told apart\n");
	exit(1);
}

fbt::arc_write_done:entry
{
	self->aw_writing = 1;
}

fbt::arc_write_done:return
{
	self->aw_writing = 0;
}

fbt::arc_access:entry
/!self->aw_writing/
{
	this->hdr = (arc_buf_hdr_t *)arg0;
	this->kind = strjoin((uint32_t)arg1 & arc_prefetch ? "prefetch_" : "demand_",
	    this->hdr->b_flags & arc_metadata ? "metadata_" : "data_");
	this->what = (uint32_t)arg2 ? "hits" :
	    this->hdr->b_flags & arc_in_progress ? "iohits" : "misses";
	@count["arc", strjoin(this->kind, this->what)] = count();
}

fbt::l2arc_read_done:entry
{
	@count["l2arc", "hits"] = count();
}

profile:::tick-$1s
{
	printf("interval %d.%06d %d\n", walltimestamp / 1000000000, (walltimestamp % 1000000000) / 1000, $1);
	printa("@count[%s, %s]: %@d\n", @count);
	printf("end\n");
}

dtrace:::END
{
	trunc(@count);
}
