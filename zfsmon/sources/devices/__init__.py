"""The block-device and file-system views set beside ZFS's own numbers (diskstats, iostat, fsstat)."""
