"""The OpenZFS guest tier: ONE QEMU guest boot per pytest session, shared by every test of the tier.

Off unless asked for (``ZFSMON_GUEST=1``, which scripts/run-tests.sh sets unless told ``ZFSMON_GUEST=0``):
a cached image costs ~15 min, a cold build ~18 min more, so plain ``pytest`` does not pay it. When asked for,
a missing capability (root, QEMU, debootstrap) or a failed build fails in CI and skips elsewhere (``need``).
The live tests run after every other test of the session: scripts/run-tests.sh builds the image in the
background meanwhile, and the fixture waits for that build's lock and then finds the image cached. The
guest runs tests/guest/scenario.sh; the tests assert on what it left in the output directory.

Environment: ``ZFSMON_GUEST_ZFS`` (2.3, 2.1 or 2.4), ``ZFSMON_GUEST_OUT`` (keep the results there, e.g. for
tests/guest/save_captures.py), ``ZFSMON_GUEST_RESULTS`` (assert on an earlier run's output directory
without booting), ``ZFSMON_GUEST_SRC`` (the tree shared into the guest; default this checkout).
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest

from tests.conftest import REPO, need
from zfsmon.lab import flock
from zfsmon.lab.guest import boot, build
from zfsmon.lab.guest.spec import CACHE_ROOT, LOCK_DIR, GuestSpec

ENABLE = "ZFSMON_GUEST"
SCENARIO = "tests/guest/scenario.sh"
#: how long the fixture waits for a build or guest already running on the machine (scripts/run-tests.sh's
#: background build: ~18 min cold, a little more on a busy host; another guest run: up to its 45 min)
WAIT_FOR_LOCKS = 50 * 60


def guest_enabled() -> bool:
    return os.environ.get(ENABLE, "").lower() in ("1", "true", "yes")


# The live tests are not collected while the tier is off: an opt-in tier that is not run is not a skipped
# capability (in CI nothing that needs a capability may be skipped). The plan and capture tests need no guest.
collect_ignore = [] if guest_enabled() or os.environ.get("ZFSMON_GUEST_RESULTS") else ["test_live.py", "test_top_soak.py",
                                                                                  "test_faults_live.py"]


def pytest_collection_modifyitems(config, items) -> None:
    """Tests that boot the guest go last (stable order otherwise), so the image build started in the
    background by scripts/run-tests.sh overlaps every other tier."""
    items.sort(key=lambda item: "guest_out" in getattr(item, "fixturenames", ()))


def _why_not() -> str:
    if os.geteuid() != 0:
        return "the guest tier needs root"
    if shutil.which("qemu-system-x86_64") is None:
        return "QEMU is not installed (qemu-system-x86)"
    return ""


@pytest.fixture(scope="session")
def guest_zfs() -> str:
    """The OpenZFS version under test (an earlier run's, when its results are given)."""
    given = os.environ.get("ZFSMON_GUEST_RESULTS")
    if given and (Path(given) / "timings.json").is_file():
        return json.loads((Path(given) / "timings.json").read_text())["zfs"]
    return os.environ.get("ZFSMON_GUEST_ZFS", "2.3")


@pytest.fixture(scope="session")
def guest_out(tmp_path_factory, guest_zfs: str) -> Path:
    """The output directory of the session's one guest run (booted here, or an earlier one given)."""
    given = os.environ.get("ZFSMON_GUEST_RESULTS")
    if given:
        return Path(given)
    if not guest_enabled():
        pytest.skip(f"the OpenZFS guest tier is off: set {ENABLE}=1 (boots a QEMU guest: ~10 min with a cached "
                    "image, ~30 min cold)")
    why = _why_not()
    need(not why, why)
    spec = GuestSpec(zfs=guest_zfs)
    t0 = time.monotonic()
    # the zfsmon guest commands refuse at once when the machine's build or guest lock is taken: wait here
    for lock in (CACHE_ROOT / "build.lock", LOCK_DIR / "guest.lock"):
        with flock.held(lock, WAIT_FOR_LOCKS, 5.0, lambda fd, lock=lock: TimeoutError(f"{lock} still held")):
            pass
    waited = time.monotonic() - t0
    was_cached = build.cached(spec) is not None
    image = build.build(spec)
    built = time.monotonic() - t0
    out = Path(os.environ.get("ZFSMON_GUEST_OUT") or tmp_path_factory.mktemp("guest-out"))
    src = Path(os.environ.get("ZFSMON_GUEST_SRC") or REPO)
    res = boot.run(image, f"bash /mnt/zfsmon/{SCENARIO}", out, src=src, timeout=45 * 60)
    (out / "timings.json").write_text(json.dumps({
        "zfs": guest_zfs, "image": image.directory.name, "image_was_cached": was_cached,
        "waited_for_locks_seconds": round(waited), "build_seconds": round(built - waited),
        "run_seconds": round(res.seconds)}, indent=2) + "\n")
    assert res.exit_code == 0, f"the guest scenario failed (exit {res.exit_code}); see {res.output}"
    return out
