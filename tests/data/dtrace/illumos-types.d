/*
 * illumos-types.d - the illumos kernel types that the scripts in dtrace/ use,
 * declared for a compile check with Oracle's DTrace on Linux (`dtrace -e -Z`), where
 * no ZFS module (and no illumos CTF) exists.
 *
 * Compile check only: each struct holds just the members the scripts read,
 * with the member types of illumos-gate (usr/src/uts/common/fs/zfs/sys/,
 * sys/vnode.h, sys/vfs.h, sys/uio.h, sys/refstr_impl.h), but NOT their
 * offsets. Never prepend this to a script that is to run: on illumos the
 * kernel's own types (CTF) are the right ones.
 *
 * tests/unit/test_dtrace_compile.py puts this in front of each script.
 *
 * Enumerations: only the enumerators the scripts name, with illumos-gate's
 * values (provenance beside each). Declared here they are global D names;
 * on illumos they come from the kernel's CTF and D shows them only as the
 * right operand of a comparison with a value of their enum type, so this
 * compile check alone would not catch a script that used one elsewhere:
 * tests/unit/test_script_constants.py holds the scripts to that rule.
 */

/* provenance: illumos/illumos-gate usr/src/uts/common/sys/fs/zfs.h db860a9da66f: ZIO_TYPE_NULL = 0, ZIO_TYPE_READ = 1, ZIO_TYPE_WRITE = 2 */
typedef enum zio_type {
	ZIO_TYPE_NULL = 0,
	ZIO_TYPE_READ = 1,
	ZIO_TYPE_WRITE = 2
} zio_type_t;

/* provenance: illumos/illumos-gate usr/src/uts/common/fs/zfs/sys/arc.h 356e1b4941ba: ARC_BUFC_INVALID = 0, ARC_BUFC_DATA = 1, ARC_BUFC_METADATA = 2 */
typedef enum arc_buf_contents {
	ARC_BUFC_INVALID = 0,
	ARC_BUFC_DATA = 1,
	ARC_BUFC_METADATA = 2
} arc_buf_contents_t;

/* provenance: illumos/illumos-gate usr/src/uts/common/fs/zfs/sys/arc.h 356e1b4941ba: ARC_FLAG_PREFETCH = 1 << 2, ARC_FLAG_PROTECTED = 1 << 15, ARC_FLAG_BUFC_METADATA = 1 << 17 */
typedef enum arc_flags {
	ARC_FLAG_PREFETCH = 1 << 2,
	ARC_FLAG_PROTECTED = 1 << 15,
	ARC_FLAG_BUFC_METADATA = 1 << 17
} arc_flags_t;

typedef struct spa {
	char spa_name[256];		/* ZFS_MAX_DATASET_NAME_LEN */
} spa_t;

typedef struct zilog {
	spa_t *zl_spa;
} zilog_t;

typedef struct vdev vdev_t;
struct vdev {
	vdev_t *vdev_top;
	char *vdev_path;
	int vdev_islog;			/* boolean_t */
};

typedef struct zio {
	zio_type_t io_type;
	uint64_t io_size;
	vdev_t *io_vd;
} zio_t;

typedef struct arc_buf_hdr {
	arc_buf_contents_t b_type;
	arc_flags_t b_flags;
} arc_buf_hdr_t;

typedef struct refstr {
	char rs_string[1];
} refstr_t;

typedef struct vfs {
	refstr_t *vfs_mntpt;
} vfs_t;

typedef struct vnode {
	vfs_t *v_vfsp;
	char *v_path;
} vnode_t;

typedef struct uio {
	ssize_t uio_resid;
} uio_t;

/* illumos /usr/lib/dtrace/io.d translates the fsinfo provider's vnode_t * */
translator fileinfo_t < vnode_t *V > {
	fi_name = "";
	fi_dirname = "";
	fi_pathname = V->v_path != NULL ? stringof(V->v_path) : "<unknown>";
	fi_offset = 0;
	fi_fs = "zfs";
	fi_mount = stringof(V->v_vfsp->vfs_mntpt->rs_string);
	fi_oflags = 0;
};
