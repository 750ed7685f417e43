"""zfsmon: ZFS storage observability for the people who run databases on it."""

__version__ = "0.1.0"
