"""A real OpenZFS kernel module for zfsmon's live tests: a Debian guest under QEMU (TCG, no KVM needed).

``build`` makes the image from Debian packages only (and pinned PyPI wheels
for zfsmon's Python dependencies) and caches it under a key of its inputs;
``boot`` starts it with a pool of 2 mirrors + SLOG + L2ARC on virtio disks,
the project tree shared read-only and an output directory shared writable,
runs a command there and brings back its exit code and output.
"""
