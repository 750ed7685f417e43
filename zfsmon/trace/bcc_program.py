"""The bcc backend's BPF C program, generated from data: which probes serve which trace.

bcc compiles its C program with clang when it starts: seconds on a real machine, about a minute under
the OpenZFS guest's emulation (docs/tracing.md). So one run puts every probe of every selected trace into ONE program
(:func:`generate`), and the Python side (:mod:`zfsmon.trace.bcc_format`) prints each trace's part of
the maps in exactly the protocol of its bpftrace twin (``bpftrace/<name>.bt``, docs/tracing.md).

Everything here is pure (no bcc, no kernel): the program text is a function of the selection, the
slow-op threshold and the tracepoint formats read from tracefs (passed in), so the unit tests check it
on this host. Tracepoint fields are read at the offsets the running kernel's ``format`` files give,
not through bcc's ``TRACEPOINT_PROBE``: bcc splits ``tracepoint__zfs__zfs_arc__hit`` at the LAST
``__`` (category ``zfs__zfs_arc``, event ``hit``; src/cc/frontends/clang/tp_frontend_action.cc), so it
cannot name OpenZFS's ``zfs_arc__hit``, and it reads formats only under /sys/kernel/debug/tracing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

from zfsmon.errors import UserError

# ---------------------------------------------------------------------------------------------------------
# names: one string table for ops and count names, shared by the C program (as N_* indices) and the printer
NAMES: Tuple[str, ...] = (
    "read", "write", "flush", "discard", "other",  # block ops, zfsslower ops
    "commit", "commits",  # zil
    "op_read", "op_write", "op_open", "op_fsync", "op_readdir", "op_lookup",  # zfsslower counts
    "demand_data_hits", "demand_metadata_hits", "prefetch_data_hits", "prefetch_metadata_hits",
    "demand_data_misses", "demand_metadata_misses", "prefetch_data_misses", "prefetch_metadata_misses",
    "hits", "misses", "feed_writes", "feed",  # l2arc
)
NAME_INDEX: Dict[str, int] = {n: i for i, n in enumerate(NAMES)}

# ARC header flags: the same two values, with the same provenance, as bpftrace/arc.bt's CONSTANTS header
# (tests/unit/trace/test_bcc_program.py checks that they equal arc.bt's #defines). The catalog refuses `arc` on an
# OpenZFS module older than 0.8, whose flags are elsewhere (arc.bt's header lists them).
# provenance: openzfs/zfs include/sys/arc.h zfs-2.1.16,zfs-2.2.11,zfs-2.3.9,zfs-2.4.4: ARC_FLAG_PREFETCH = 1 << 2
ARC_FLAG_PREFETCH = 1 << 2
# provenance: openzfs/zfs include/sys/arc.h zfs-2.1.16,zfs-2.2.11,zfs-2.3.9,zfs-2.4.4: ARC_FLAG_BUFC_METADATA = 1 << 17
ARC_FLAG_BUFC_METADATA = 1 << 17
# provenance: torvalds/linux include/trace/events/block.h 4981f05faf36: SECTOR_SIZE = 512 (as blklat.bt)
SECTOR_SIZE = 512

# The kprobe ARC variant (a module without zfs tracepoints): the numbers of bpftrace/arc_kprobe.bt, with the same
# provenance (tests/unit/trace/test_bcc_program.py checks that they equal its #defines).
# provenance: openzfs/zfs include/sys/arc.h zfs-2.1.11,zfs-2.1.16,zfs-2.3.2,zfs-2.3.9,zfs-2.4.4: ARC_FLAG_CACHED = 1 << 3
ARC_FLAG_CACHED = 1 << 3
# provenance: openzfs/zfs include/sys/arc.h zfs-2.1.11,zfs-2.1.16,zfs-2.3.2,zfs-2.3.9,zfs-2.4.4: ARC_FLAG_CACHED_ONLY = 1 << 22
ARC_FLAG_CACHED_ONLY = 1 << 22
# arc_read's 8th argument (arc_flags) on x86_64: return address at sp, 7th argument at sp + 8, 8th at sp + 16
# provenance: openzfs/zfs module/zfs/arc.c zfs-2.1.11,zfs-2.1.16,zfs-2.3.2,zfs-2.3.9,zfs-2.4.4: ARC_FLAGS_STACK_OFFSET = 16
ARC_FLAGS_STACK_OFFSET = 16
# arc_buf_hdr_t's b_flags after b_dva (16), b_birth (8), b_type (4), b_complevel/reserved (4), b_hash_next (8)
# provenance: openzfs/zfs include/sys/arc_impl.h zfs-2.1.11,zfs-2.1.16,zfs-2.3.2,zfs-2.3.9,zfs-2.4.4: HDR_FLAGS_OFFSET = 40
HDR_FLAGS_OFFSET = 40
# provenance: openzfs/zfs include/sys/spa.h zfs-2.1.11,zfs-2.1.16,zfs-2.3.2,zfs-2.3.9,zfs-2.4.4: BLK_PROP_OFFSET = 48
BLK_PROP_OFFSET = 48
# provenance: openzfs/zfs include/sys/spa.h zfs-2.1.11,zfs-2.1.16,zfs-2.3.2,zfs-2.3.9,zfs-2.4.4: BP_EMBEDDED_SHIFT = 39
BP_EMBEDDED_SHIFT = 39
# provenance: openzfs/zfs include/sys/spa.h zfs-2.1.11,zfs-2.1.16,zfs-2.3.2,zfs-2.3.9,zfs-2.4.4: BP_EMBEDDED_MASK = 1
BP_EMBEDDED_MASK = 1
# provenance: openzfs/zfs include/sys/spa.h zfs-2.1.11,zfs-2.1.16,zfs-2.3.2,zfs-2.3.9,zfs-2.4.4: BP_TYPE_SHIFT = 48
BP_TYPE_SHIFT = 48
# provenance: openzfs/zfs include/sys/spa.h zfs-2.1.11,zfs-2.1.16,zfs-2.3.2,zfs-2.3.9,zfs-2.4.4: BP_TYPE_MASK = 0xff
BP_TYPE_MASK = 0xFF
# provenance: openzfs/zfs include/sys/spa.h zfs-2.1.11,zfs-2.1.16,zfs-2.3.2,zfs-2.3.9,zfs-2.4.4: BP_LEVEL_SHIFT = 56
BP_LEVEL_SHIFT = 56
# provenance: openzfs/zfs include/sys/spa.h zfs-2.1.11,zfs-2.1.16,zfs-2.3.2,zfs-2.3.9,zfs-2.4.4: BP_LEVEL_MASK = 0x1f
BP_LEVEL_MASK = 0x1F
# provenance: openzfs/zfs include/sys/dmu.h zfs-2.1.11,zfs-2.1.16,zfs-2.3.2,zfs-2.3.9,zfs-2.4.4: DMU_OT_NEWTYPE = 0x80
DMU_OT_NEWTYPE = 0x80
# provenance: openzfs/zfs include/sys/dmu.h zfs-2.1.11,zfs-2.1.16,zfs-2.3.2,zfs-2.3.9,zfs-2.4.4: DMU_OT_METADATA = 0x40
DMU_OT_METADATA = 0x40
# the legacy object types whose dmu_ot[] entry (module/zfs/dmu.c) has ot_metadata FALSE; all others are metadata
# provenance: openzfs/zfs include/sys/dmu.h zfs-2.1.11,zfs-2.1.16,zfs-2.3.2,zfs-2.3.9,zfs-2.4.4: DMU_OT_PLAIN_FILE_CONTENTS = 19
DMU_OT_PLAIN_FILE_CONTENTS = 19
# provenance: openzfs/zfs include/sys/dmu.h zfs-2.1.11,zfs-2.1.16,zfs-2.3.2,zfs-2.3.9,zfs-2.4.4: DMU_OT_ZVOL = 23
DMU_OT_ZVOL = 23
# provenance: openzfs/zfs include/sys/dmu.h zfs-2.1.11,zfs-2.1.16,zfs-2.3.2,zfs-2.3.9,zfs-2.4.4: DMU_OT_PLAIN_OTHER = 25
DMU_OT_PLAIN_OTHER = 25
# provenance: openzfs/zfs include/sys/dmu.h zfs-2.1.11,zfs-2.1.16,zfs-2.3.2,zfs-2.3.9,zfs-2.4.4: DMU_OT_UINT64_OTHER = 26
DMU_OT_UINT64_OTHER = 26
# provenance: openzfs/zfs include/sys/dmu.h zfs-2.1.11,zfs-2.1.16,zfs-2.3.2,zfs-2.3.9,zfs-2.4.4: DMU_OT_DEDUP = 49
DMU_OT_DEDUP = 49
#: the #defines of the kprobe ARC variant's C code, by name (the same names as arc_kprobe.bt's)
ARC_KPROBE_DEFINES: Dict[str, int] = {n: globals()[n] for n in (
    "ARC_FLAG_CACHED", "ARC_FLAG_CACHED_ONLY", "HDR_FLAGS_OFFSET", "ARC_FLAGS_STACK_OFFSET", "BLK_PROP_OFFSET", "BP_EMBEDDED_SHIFT",
    "BP_EMBEDDED_MASK", "BP_TYPE_SHIFT", "BP_TYPE_MASK", "BP_LEVEL_SHIFT", "BP_LEVEL_MASK", "DMU_OT_NEWTYPE",
    "DMU_OT_METADATA", "DMU_OT_PLAIN_FILE_CONTENTS", "DMU_OT_ZVOL", "DMU_OT_PLAIN_OTHER", "DMU_OT_UINT64_OTHER",
    "DMU_OT_DEDUP")}


@dataclass(frozen=True)
class Probe:
    """One attachment: ``kind`` kprobe | kretprobe | tracepoint; ``event`` the function or ``cat:event``."""

    kind: str
    event: str
    fn: str  # the C function of the program that runs there
    maxactive: int = 0  # kretprobe: instances that may be pending at once (0: the kernel's default)

    def label(self) -> str:
        return f"{self.kind}:{self.event}"


@dataclass(frozen=True)
class BccTrace:
    """One trace of the bcc backend: the bpftrace script it mirrors and the probes and C code it needs."""

    name: str  # as the bpftrace script's header names it (file stem)
    tid: int  # its number in the program's map keys
    entity: str  # the header's entity= (devt | name)
    header_opts: Tuple[str, ...]  # header options after entity=, in bpftrace's order ("interval", "slow_ms")
    maps: Tuple[str, ...]  # the maps it prints, in its bpftrace twin's order
    probes: Tuple[Probe, ...]
    tracepoint_fields: Tuple[Tuple[str, str], ...]  # ("cat:event", field) read through tracefs offsets
    code: str  # its C functions
    entities: Tuple[str, ...] = ()  # entity=name: index -> name (the C code uses the index)
    needs_zfs_module: bool = False
    needs_kprobes: bool = False

    def entity_token(self, ent: int) -> str:
        if self.entity == "devt":
            return str(ent)
        return self.entities[ent] if 0 <= ent < len(self.entities) else str(ent)


_BLKLAT_C = r"""
/* blklat: block_rq_issue -> block_rq_complete per (dev, sector), as bpftrace/blklat.bt */
struct blk_key { u64 dev; u64 sector; };
BPF_HASH(blk_start, struct blk_key, u64, 65536);

int blk_issue(void *ctx)
{
    struct blk_key k = {};
    k.dev = TPF(ctx, block_rq_issue, dev);
    k.sector = TPF(ctx, block_rq_issue, sector);
    u64 ts = bpf_ktime_get_ns();
    blk_start.update(&k, &ts);
    return 0;
}

int blk_complete(void *ctx)
{
    struct blk_key k = {};
    k.dev = TPF(ctx, block_rq_complete, dev);
    k.sector = TPF(ctx, block_rq_complete, sector);
    u64 *tsp = blk_start.lookup(&k);
    if (tsp == 0)
        return 0;
    u64 v = bpf_ktime_get_ns() - *tsp;
    blk_start.delete(&k);
    char rw[2] = {};
    bpf_probe_read_kernel(&rw, sizeof(rw), (char *)ctx + OFF_block_rq_complete_rwbs);
    /* rwbs: R read, W write, F flush (FW = flush then write), D discard; as blklat.bt */
    u32 op = N_other;
    if (rw[0] == 'R') op = N_read;
    if (rw[0] == 'W') op = N_write;
    if (rw[0] == 'F') op = rw[1] == 'W' ? N_write : N_flush;
    if (rw[0] == 'D') op = N_discard;
    u64 nbytes = TPF(ctx, block_rq_complete, nr_sector) * SECTOR_SIZE;
    record_lat(T_blklat, op, k.dev, v);
    add_bytes(T_blklat, op, k.dev, nbytes);
    if (SLOW_NS > 0 && v > SLOW_NS) {
        struct slow_t e = {};
        e.ts = bpf_ktime_get_ns(); e.ent = k.dev; e.lat = v; e.bytes = nbytes; e.extra = k.sector;
        e.trace = T_blklat; e.op = op;
        slow.perf_submit(ctx, &e, sizeof(e));
    }
    return 0;
}
"""

_ZFSSLOWER_C = r"""
/* zfsslower: zpl_iter_read/zpl_iter_write entry -> return, and ZPL op counts, as bpftrace/zfsslower.bt;
 * the filesystem is its superblock's s_dev (kernel dev_t), read through the kernel headers' layout */
struct zs_val { u64 ts; u64 iocb; u32 op; };
BPF_HASH(zs_start, u32, struct zs_val, 65536);

static __always_inline u64 zs_inode_dev(struct inode *ino)
{
    struct super_block *sb = 0;
    dev_t dev = 0;
    bpf_probe_read_kernel(&sb, sizeof(sb), &ino->i_sb);
    bpf_probe_read_kernel(&dev, sizeof(dev), &sb->s_dev);
    return dev;
}

static __always_inline u64 zs_file_dev(struct file *fp)
{
    struct inode *ino = 0;
    bpf_probe_read_kernel(&ino, sizeof(ino), &fp->f_inode);
    return zs_inode_dev(ino);
}

static __always_inline struct file *zs_iocb_file(u64 iocb)
{
    struct file *fp = 0;
    bpf_probe_read_kernel(&fp, sizeof(fp), &((struct kiocb *)iocb)->ki_filp);
    return fp;
}

static __always_inline int zs_entry(struct pt_regs *ctx, u32 op, u32 counted)
{
    u64 iocb = PT_REGS_PARM1(ctx);
    add_count(T_zfsslower, counted, zs_file_dev(zs_iocb_file(iocb)), 1);
    u32 tid = bpf_get_current_pid_tgid();
    struct zs_val val = {};
    val.ts = bpf_ktime_get_ns(); val.iocb = iocb; val.op = op;
    zs_start.update(&tid, &val);
    return 0;
}

int zs_read_entry(struct pt_regs *ctx) { return zs_entry(ctx, N_read, N_op_read); }
int zs_write_entry(struct pt_regs *ctx) { return zs_entry(ctx, N_write, N_op_write); }

int zs_return(struct pt_regs *ctx)
{
    u32 tid = bpf_get_current_pid_tgid();
    struct zs_val *valp = zs_start.lookup(&tid);
    if (valp == 0)
        return 0;
    u64 v = bpf_ktime_get_ns() - valp->ts;
    u64 iocb = valp->iocb;
    u32 op = valp->op;
    zs_start.delete(&tid);
    struct file *fp = zs_iocb_file(iocb);
    u64 dev = zs_file_dev(fp);
    s64 ret = PT_REGS_RC(ctx);
    record_lat(T_zfsslower, op, dev, v);
    if (ret > 0)
        add_bytes(T_zfsslower, op, dev, ret);
    if (SLOW_NS > 0 && v > SLOW_NS) {
        struct slow_t e = {};
        e.ts = bpf_ktime_get_ns(); e.ent = dev; e.lat = v; e.bytes = ret > 0 ? ret : 0;
        e.trace = T_zfsslower; e.op = op; e.pid = bpf_get_current_pid_tgid() >> 32;
        bpf_get_current_comm(&e.comm, sizeof(e.comm));
        struct dentry *de = 0;
        const unsigned char *name = 0;
        bpf_probe_read_kernel(&de, sizeof(de), &fp->f_path.dentry);
        bpf_probe_read_kernel(&name, sizeof(name), &de->d_name.name);
        bpf_probe_read_kernel_str(&e.file, sizeof(e.file), name);
        slow.perf_submit(ctx, &e, sizeof(e));
    }
    return 0;
}

int zs_open(struct pt_regs *ctx)
{ add_count(T_zfsslower, N_op_open, zs_inode_dev((struct inode *)PT_REGS_PARM1(ctx)), 1); return 0; }
int zs_fsync(struct pt_regs *ctx)
{ add_count(T_zfsslower, N_op_fsync, zs_file_dev((struct file *)PT_REGS_PARM1(ctx)), 1); return 0; }
int zs_iterate(struct pt_regs *ctx)
{ add_count(T_zfsslower, N_op_readdir, zs_file_dev((struct file *)PT_REGS_PARM1(ctx)), 1); return 0; }
int zs_lookup(struct pt_regs *ctx)
{ add_count(T_zfsslower, N_op_lookup, zs_inode_dev((struct inode *)PT_REGS_PARM1(ctx)), 1); return 0; }
"""

_ARC_C = r"""
/* arc: OpenZFS's zfs:zfs_arc__hit/miss and zfs:zfs_l2arc__* tracepoints, as bpftrace/arc.bt */
static __always_inline u32 arc_kind(u64 flags, u32 dd, u32 dm, u32 pd, u32 pm)
{
    if (flags & ARC_FLAG_PREFETCH)
        return (flags & ARC_FLAG_BUFC_METADATA) ? pm : pd;
    return (flags & ARC_FLAG_BUFC_METADATA) ? dm : dd;
}

int arc_hit(void *ctx)
{
    u64 flags = TPF(ctx, zfs_arc__hit, hdr_flags);
    add_count(T_arc, arc_kind(flags, N_demand_data_hits, N_demand_metadata_hits, N_prefetch_data_hits,
                              N_prefetch_metadata_hits), E_arc_arc, 1);
    return 0;
}

int arc_miss(void *ctx)
{
    u64 flags = TPF(ctx, zfs_arc__miss, hdr_flags);
    add_count(T_arc, arc_kind(flags, N_demand_data_misses, N_demand_metadata_misses, N_prefetch_data_misses,
                              N_prefetch_metadata_misses), E_arc_arc, 1);
    return 0;
}

int l2arc_hit(void *ctx) { add_count(T_arc, N_hits, E_arc_l2arc, 1); return 0; }
int l2arc_miss(void *ctx) { add_count(T_arc, N_misses, E_arc_l2arc, 1); return 0; }

int l2arc_write(void *ctx)
{
    add_count(T_arc, N_feed_writes, E_arc_l2arc, 1);
    add_bytes(T_arc, N_feed, E_arc_l2arc, TPF(ctx, zfs_l2arc__write, zio_size));
    return 0;
}
"""

_ARC_KPROBE_C = r"""
/* arc without tracepoints: kprobe/kretprobe arc_read, as bpftrace/arc_kprobe.bt. At entry the caller's flags
 * (through the 8th argument, on the stack on x86_64) and the block pointer's blk_prop; at return the flags
 * again: ARC_FLAG_CACHED = a hit. Per-thread depth keeps a nested arc_read (from a done callback) apart. */
struct arck_val { u64 flp; u64 prop; u64 fin; };
BPF_HASH(arck_depth, u32, u32, 65536);
BPF_HASH(arck_start, u64, struct arck_val, 65536);
BPF_HASH(arck_inbuf, u32, u32, 65536);

/* a hit on a dbuf's cached buffer: arc_buf_access() counts it (demand, metadata by the header's flag) only when it
 * goes on to arc_access() */
int arck_buf_access(struct pt_regs *ctx)
{
    u32 tid = bpf_get_current_pid_tgid();
    u32 one = 1;
    arck_inbuf.update(&tid, &one);
    return 0;
}

int arck_access(struct pt_regs *ctx)
{
    u32 tid = bpf_get_current_pid_tgid();
    if (arck_inbuf.lookup(&tid) == 0)
        return 0;
    arck_inbuf.delete(&tid);
    u32 hflags = 0;
    bpf_probe_read_kernel(&hflags, sizeof(hflags), (char *)PT_REGS_PARM1(ctx) + HDR_FLAGS_OFFSET);
    add_count(T_arc, (hflags & ARC_FLAG_BUFC_METADATA) ? N_demand_metadata_hits : N_demand_data_hits, E_arc_arc, 1);
    return 0;
}

int arck_entry(struct pt_regs *ctx)
{
    u32 tid = bpf_get_current_pid_tgid();
    arck_inbuf.delete(&tid);
    u32 zero = 0;
    u32 *dp = arck_depth.lookup_or_try_init(&tid, &zero);
    if (dp == 0)
        return 0;
    u32 d = *dp;
    struct arck_val v = {};
    u32 fin = 0;
    bpf_probe_read_kernel(&v.flp, sizeof(v.flp), (void *)(PT_REGS_SP(ctx) + ARC_FLAGS_STACK_OFFSET));
    bpf_probe_read_kernel(&fin, sizeof(fin), (void *)v.flp);
    v.fin = fin;
    bpf_probe_read_kernel(&v.prop, sizeof(v.prop), (char *)PT_REGS_PARM3(ctx) + BLK_PROP_OFFSET);
    u64 key = ((u64)tid << 8) | (d & 255);
    arck_start.update(&key, &v);
    *dp = d + 1;
    return 0;
}

int arck_return(struct pt_regs *ctx)
{
    u32 tid = bpf_get_current_pid_tgid();
    u32 *dp = arck_depth.lookup(&tid);
    if (dp == 0 || *dp == 0)
        return 0;
    u32 d = *dp - 1;
    *dp = d;
    u64 key = ((u64)tid << 8) | (d & 255);
    struct arck_val *vp = arck_start.lookup(&key);
    if (vp == 0)
        return 0;
    u64 flp = vp->flp, prop = vp->prop, fin = vp->fin;
    arck_start.delete(&key);
    u32 fout = 0;
    bpf_probe_read_kernel(&fout, sizeof(fout), (void *)flp);
    if ((prop >> BP_EMBEDDED_SHIFT) & BP_EMBEDDED_MASK)
        return 0;  /* embedded: arcstats does not count it */
    if ((fin & ARC_FLAG_CACHED_ONLY) && !(fout & ARC_FLAG_CACHED))
        return 0;  /* cached-only request that found nothing: ENOENT, not counted */
    u64 type = (prop >> BP_TYPE_SHIFT) & BP_TYPE_MASK;
    u32 meta = 1;
    if (((prop >> BP_LEVEL_SHIFT) & BP_LEVEL_MASK) > 0)
        meta = 1;
    else if (type & DMU_OT_NEWTYPE)
        meta = (type & DMU_OT_METADATA) ? 1 : 0;
    else if (type == DMU_OT_PLAIN_FILE_CONTENTS || type == DMU_OT_ZVOL || type == DMU_OT_PLAIN_OTHER ||
             type == DMU_OT_UINT64_OTHER || type == DMU_OT_DEDUP)
        meta = 0;
    u32 name;
    if (fout & ARC_FLAG_CACHED) {
        if (fin & ARC_FLAG_PREFETCH)
            name = meta ? N_prefetch_metadata_hits : N_prefetch_data_hits;
        else
            name = meta ? N_demand_metadata_hits : N_demand_data_hits;
    } else {
        if (fin & ARC_FLAG_PREFETCH)
            name = meta ? N_prefetch_metadata_misses : N_prefetch_data_misses;
        else
            name = meta ? N_demand_metadata_misses : N_demand_data_misses;
    }
    add_count(T_arc, name, E_arc_arc, 1);
    return 0;
}
"""

_ZIL_C = r"""
/* zil: zil_commit entry -> return, as bpftrace/zil.bt */
BPF_HASH(zil_start, u32, u64, 65536);

int zil_entry(struct pt_regs *ctx)
{
    u32 tid = bpf_get_current_pid_tgid();
    u64 ts = bpf_ktime_get_ns();
    zil_start.update(&tid, &ts);
    return 0;
}

int zil_return(struct pt_regs *ctx)
{
    u32 tid = bpf_get_current_pid_tgid();
    u64 *tsp = zil_start.lookup(&tid);
    if (tsp == 0)
        return 0;
    u64 v = bpf_ktime_get_ns() - *tsp;
    zil_start.delete(&tid);
    record_lat(T_zil, N_commit, E_zil_zil, v);
    add_count(T_zil, N_commits, E_zil_zil, 1);
    if (SLOW_NS > 0 && v > SLOW_NS) {
        struct slow_t e = {};
        e.ts = bpf_ktime_get_ns(); e.ent = E_zil_zil; e.lat = v; e.trace = T_zil; e.op = N_commit;
        e.pid = bpf_get_current_pid_tgid() >> 32;
        bpf_get_current_comm(&e.comm, sizeof(e.comm));
        slow.perf_submit(ctx, &e, sizeof(e));
    }
    return 0;
}
"""

TRACES: Dict[str, BccTrace] = {t.name: t for t in (
    BccTrace("blklat", 0, "devt", ("interval", "slow_ms"), ("lat", "max", "sum", "bytes"),
             (Probe("tracepoint", "block:block_rq_issue", "blk_issue"),
              Probe("tracepoint", "block:block_rq_complete", "blk_complete")),
             (("block:block_rq_issue", "dev"), ("block:block_rq_issue", "sector"),
              ("block:block_rq_complete", "dev"), ("block:block_rq_complete", "sector"),
              ("block:block_rq_complete", "nr_sector"), ("block:block_rq_complete", "rwbs")),
             _BLKLAT_C),
    BccTrace("zfsslower", 1, "devt", ("interval", "slow_ms"), ("lat", "max", "sum", "bytes", "count"),
             (Probe("kprobe", "zpl_iter_read", "zs_read_entry"), Probe("kprobe", "zpl_iter_write", "zs_write_entry"),
              Probe("kretprobe", "zpl_iter_read", "zs_return"), Probe("kretprobe", "zpl_iter_write", "zs_return"),
              Probe("kprobe", "zpl_open", "zs_open"), Probe("kprobe", "zpl_fsync", "zs_fsync"),
              Probe("kprobe", "zpl_iterate", "zs_iterate"), Probe("kprobe", "zpl_lookup", "zs_lookup")),
             (), _ZFSSLOWER_C, needs_zfs_module=True, needs_kprobes=True),
    BccTrace("arc", 2, "name", ("interval",), ("count", "bytes"),
             (Probe("tracepoint", "zfs:zfs_arc__hit", "arc_hit"), Probe("tracepoint", "zfs:zfs_arc__miss", "arc_miss"),
              Probe("tracepoint", "zfs:zfs_l2arc__hit", "l2arc_hit"),
              Probe("tracepoint", "zfs:zfs_l2arc__miss", "l2arc_miss"),
              Probe("tracepoint", "zfs:zfs_l2arc__write", "l2arc_write")),
             (("zfs:zfs_arc__hit", "hdr_flags"), ("zfs:zfs_arc__miss", "hdr_flags"),
              ("zfs:zfs_l2arc__write", "zio_size")),
             _ARC_C, entities=("arc", "l2arc"), needs_zfs_module=True),
    BccTrace("zil", 3, "name", ("interval", "slow_ms"), ("lat", "max", "sum", "count"),
             (Probe("kprobe", "zil_commit", "zil_entry"), Probe("kretprobe", "zil_commit", "zil_return")),
             (), _ZIL_C, entities=("zil",), needs_zfs_module=True, needs_kprobes=True),
)}

#: ``arc`` on an OpenZFS module without its tracepoints (Debian's zfs-dkms): kprobes on arc_read instead, the same
#: trace number, name and output (bpftrace's twin: arc_kprobe.bt). :func:`variant` picks it.
ARC_KPROBE = BccTrace("arc", 2, "name", ("interval",), ("count", "bytes"),
                      (Probe("kprobe", "arc_read", "arck_entry"),
                       Probe("kretprobe", "arc_read", "arck_return", maxactive=256),
                       Probe("kprobe", "arc_buf_access", "arck_buf_access"),
                       Probe("kprobe", "arc_access", "arck_access")),
                      (), _ARC_KPROBE_C, entities=("arc", "l2arc"), needs_zfs_module=True, needs_kprobes=True)
#: the tracepoint whose absence selects the kprobe variant
ARC_TRACEPOINT = "zfs:zfs_arc__hit"


def variant(name: str, formats: Dict[str, Dict[str, Tuple[int, int]]]) -> BccTrace:
    """The implementation of trace ``name`` for this kernel: ``arc`` without OpenZFS's tracepoints (no format
    file for zfs:zfs_arc__hit) is :data:`ARC_KPROBE`; anything else is ``TRACES[name]``."""
    if name == "arc" and ARC_TRACEPOINT not in formats:
        return ARC_KPROBE
    return TRACES[name]


#: names `zfsmon trace --backend bcc` also takes: vdevlat is blklat on kernel OpenZFS (as with bpftrace,
#: whose vdevlat runs blklat.bt there); `all` is every trace of the backend
ALIASES: Dict[str, Tuple[str, ...]] = {"vdevlat": ("blklat",), "all": tuple(TRACES)}

_PRELUDE = r"""
#include <uapi/linux/ptrace.h>
#include <linux/fs.h>
#include <linux/sched.h>
#include <linux/dcache.h>

/* zfsmon's bcc program (zfsmon/trace/bcc_program.py): traces %(traces)s in one program */
#define SLOW_NS %(slow_ns)dULL
#define SECTOR_SIZE %(sector_size)d
#define ARC_FLAG_PREFETCH %(prefetch)d
#define ARC_FLAG_BUFC_METADATA %(metadata)d
%(defines)s

/* the maps every trace shares, keyed by trace number: what bpftrace's @lat/@max/@sum/@bytes/@count hold */
struct lat_key { u32 trace; u32 op; u64 ent; u64 lo; };
struct op_key { u32 trace; u32 op; u64 ent; };
BPF_HASH(lat, struct lat_key, u64, 65536);
BPF_HASH(maxv, struct op_key, u64, 16384);
BPF_HASH(sumv, struct op_key, u64, 16384);
BPF_HASH(bytesv, struct op_key, u64, 16384);
BPF_HASH(countv, struct op_key, u64, 16384);

struct slow_t { u64 ts; u64 ent; u64 lat; u64 bytes; u64 extra; u32 trace; u32 op; u32 pid; char comm[16];
                char file[32]; };
BPF_PERF_OUTPUT(slow);

/* a tracepoint field at the offset the kernel's format file gives (read, zero-extended) */
static __always_inline u64 tp_field(void *ctx, int off, int size)
{
    u64 v = 0;
    bpf_probe_read_kernel(&v, size, (char *)ctx + off);
    return v;
}
#define TPF(ctx, event, field) tp_field(ctx, OFF_##event##_##field, SIZE_##event##_##field)

/* the log-linear bucket of docs/tracing.md: highest power of two p, then quarters of p (the same nine
 * integer lines as the D and bpftrace scripts) */
static __always_inline u64 bucket_of(u64 v)
{
    u64 p = v | (v >> 1);
    p = p | (p >> 2);
    p = p | (p >> 4);
    p = p | (p >> 8);
    p = p | (p >> 16);
    p = p | (p >> 32);
    p = p - (p >> 1);
    u64 q = p >> 2;
    return q > 0 ? p + (v - p) / q * q : v;
}

static __always_inline void record_lat(u32 trace, u32 op, u64 ent, u64 v)
{
    struct lat_key lk = {};
    lk.trace = trace; lk.op = op; lk.ent = ent; lk.lo = bucket_of(v);
    lat.atomic_increment(lk);
    struct op_key k = {};
    k.trace = trace; k.op = op; k.ent = ent;
    sumv.atomic_increment(k, v);
    u64 zero = 0;
    u64 *m = maxv.lookup_or_try_init(&k, &zero);
    if (m && v > *m)
        *m = v;
}

static __always_inline void add_bytes(u32 trace, u32 op, u64 ent, u64 n)
{
    struct op_key k = {};
    k.trace = trace; k.op = op; k.ent = ent;
    bytesv.atomic_increment(k, n);
}

static __always_inline void add_count(u32 trace, u32 name, u64 ent, u64 n)
{
    struct op_key k = {};
    k.trace = trace; k.op = name; k.ent = ent;
    countv.atomic_increment(k, n);
}
"""


def select(names: Sequence[str]) -> Tuple[str, ...]:
    """The traces of ``zfsmon trace --backend bcc NAME[,NAME...]``, deduplicated, in the program's order."""
    wanted: List[str] = []
    for raw in names:
        for name in (n.strip() for n in raw.split(",")):
            if not name:
                continue
            if name in ALIASES:
                wanted.extend(ALIASES[name])
            elif name in TRACES:
                wanted.append(name)
            else:
                known = ", ".join([*TRACES, *ALIASES])
                raise UserError(f"the bcc backend has no trace {name!r} (it has: {known})")
    if not wanted:
        raise UserError("which traces? give NAME[,NAME...] (or `all`)")
    return tuple(t for t in TRACES if t in wanted)


_FIELD = re.compile(r"field:(?P<decl>[^;]*);\s*offset:(?P<off>\d+);\s*size:(?P<size>\d+);")


def parse_format(text: str) -> Dict[str, Tuple[int, int]]:
    """A tracefs ``events/CAT/EVENT/format`` file: field name -> (offset, size), common_* fields included."""
    out: Dict[str, Tuple[int, int]] = {}
    for m in _FIELD.finditer(text):
        decl = m.group("decl").strip()
        name = decl.split()[-1]
        name = name.split("[", 1)[0]
        out[name] = (int(m.group("off")), int(m.group("size")))
    return out


def tracepoints(selection: Sequence[str]) -> List[str]:
    """The ``cat:event`` tracepoints whose format files the program needs (for their field offsets; for
    ``arc`` also whether the module has its tracepoints at all, which picks its :func:`variant`)."""
    seen: List[str] = []
    for name in selection:
        for tp, _field in TRACES[name].tracepoint_fields:
            if tp not in seen:
                seen.append(tp)
    return seen


def probes(selection: Sequence[str], formats: Optional[Dict[str, Dict[str, Tuple[int, int]]]] = None) -> List[Probe]:
    """The attachments of the program (``formats`` None: as if every tracepoint were there)."""
    if formats is None:
        return [p for name in selection for p in TRACES[name].probes]
    return [p for name in selection for p in variant(name, formats).probes]


def unavailable(selection: Sequence[str], formats: Dict[str, Dict[str, Tuple[int, int]]], kprobes: bool = True,
                zfs_module: bool = True) -> Dict[str, str]:
    """Traces of the selection this kernel cannot serve, with the reason (the others still run).

    Debian's zfs-dkms builds OpenZFS without its tracepoints (they need GPL-only kernel symbols that a
    CDDL module may not use), so on such a module ``arc`` (and ``arc.bt``) has nothing to attach to.
    """
    out: Dict[str, str] = {}
    for name in selection:
        t = TRACES[name]
        if zfs_module and kprobes:
            t = variant(name, formats)  # arc without zfs tracepoints: kprobes on arc_read
        if t.needs_zfs_module and not zfs_module:
            out[name] = "needs the OpenZFS kernel module, and none is loaded"
            continue
        if t.needs_kprobes and not kprobes:
            out[name] = "needs kprobes, and this kernel has none"
            continue
        missing = sorted({tp for tp, _f in t.tracepoint_fields if tp not in formats})
        if missing:
            why = (" (the OpenZFS module is loaded but has no tracepoints: built without them, as Debian's "
                   "zfs-dkms is)" if zfs_module and all(m.startswith("zfs:") for m in missing) else "")
            out[name] = f"tracepoint {missing[0]} is absent on this kernel{why}"
    return out


def _field_defines(selection: Sequence[str], formats: Dict[str, Dict[str, Tuple[int, int]]]) -> List[str]:
    lines: List[str] = []
    for name in selection:
        if variant(name, formats) is ARC_KPROBE:
            lines += [f"#define {n} {v}" for n, v in ARC_KPROBE_DEFINES.items()]
            continue
        for tp, field in TRACES[name].tracepoint_fields:
            fields = formats.get(tp)
            if fields is None:
                raise UserError(f"tracepoint {tp} is absent on this kernel (no format file)"
                                + (" (the OpenZFS kernel module is not loaded)" if tp.startswith("zfs:") else ""))
            if field not in fields:
                raise UserError(f"tracepoint {tp} has no field {field!r} on this kernel "
                                f"(it has: {', '.join(sorted(f for f in fields if not f.startswith('common_')))})")
            off, size = fields[field]
            if field != "rwbs" and size not in (1, 2, 4, 8):
                raise UserError(f"tracepoint {tp} field {field} is {size} bytes wide; expected an integer")
            event = tp.split(":", 1)[1]
            define = f"#define OFF_{event}_{field} {off}"
            if define not in lines:
                lines += [f"/* {tp} field {field}: offset {off}, size {size} (from its tracefs format file) */",
                          define, f"#define SIZE_{event}_{field} {size}"]
    return lines


def generate(selection: Sequence[str], formats: Dict[str, Dict[str, Tuple[int, int]]], slow_ms: int = 0) -> str:
    """The whole C program for the selected traces (``formats``: ``cat:event`` -> :func:`parse_format`)."""
    defines = [f"#define N_{n} {i}" for i, n in enumerate(NAMES)]
    for name in selection:
        t = TRACES[name]
        defines.append(f"#define T_{t.name} {t.tid}")
        defines += [f"#define E_{t.name}_{e} {i}" for i, e in enumerate(t.entities)]
    defines += _field_defines(selection, formats)
    text = _PRELUDE % {"traces": ", ".join(selection), "slow_ns": max(0, int(slow_ms)) * 1000000,
                       "sector_size": SECTOR_SIZE, "prefetch": ARC_FLAG_PREFETCH,
                       "metadata": ARC_FLAG_BUFC_METADATA, "defines": "\n".join(defines)}
    return text + "".join(variant(name, formats).code for name in selection)
