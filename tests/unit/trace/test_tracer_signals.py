"""The tracer gets SIGINT's default disposition, whatever zfsmon inherited.

A zfsmon started in the background by a shell script (``zfsmon record --trace zil &``) has SIGINT ignored, and
an ignored signal stays ignored across fork and exec. dtrace installs its SIGINT handler only for a signal not
ignored, so it then ignored the SIGINT zfsmon stops it with (seen in the OpenZFS guest, where a script's
background ``dtrace`` ran on after ``kill -INT``). The child's preexec hook resets it.
"""

from __future__ import annotations

import signal
import subprocess

from zfsmon.trace.collector import _die_with_parent


def _ignored_mask(preexec) -> int:
    """SigIgn of a child started with SIGINT ignored in the parent, as /proc/self/status shows it."""
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        out = subprocess.run(["grep", "^SigIgn:", "/proc/self/status"], capture_output=True, text=True,
                             preexec_fn=preexec, check=True).stdout
    finally:
        signal.signal(signal.SIGINT, old)
    return int(out.split()[1], 16)


def test_an_ignored_sigint_is_inherited_without_the_hook():
    assert _ignored_mask(None) & (1 << (signal.SIGINT - 1))


def test_the_tracer_gets_sigint_s_default_with_it():
    assert not _ignored_mask(_die_with_parent) & (1 << (signal.SIGINT - 1))
