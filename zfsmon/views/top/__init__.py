"""The live dashboard (``zfsmon top``) and replay (``zfsmon replay``): Textual widgets over :mod:`zfsmon.views.top.state`."""
