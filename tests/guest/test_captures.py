"""The committed OpenZFS captures (tests/data/openzfs-*, made by the guest tier): zfsmon still reads them right.

No guest needed: these run with the unit tests, so a parser change that breaks real 2.x output shows at once.
"""

from __future__ import annotations

from pathlib import Path
from typing import List

import pytest

from tests.conftest import TEST_DATA
from tests.guest.roles import check_roles, iostat_capture_names
from zfsmon.model import Kind
from zfsmon.sources.kstat.arcstats import parse_linux

CAPTURED = sorted(p for p in TEST_DATA.glob("openzfs-*") if p.is_dir())


def _cases() -> List[tuple]:
    return [(d, n) for d in CAPTURED for n in iostat_capture_names() if (d / n).exists()]


@pytest.mark.parametrize("directory,name", _cases(), ids=[f"{d.name}/{n}" for d, n in _cases()])
def test_committed_iostat_captures_keep_their_roles(directory: Path, name: str) -> None:
    check_roles(directory, name)


#: each version directory's arcstats captures (a directory of other captures alone has none)
ARCSTATS = [(d, n) for d in CAPTURED for n in ("arcstats.before", "arcstats.after", "kstat/arcstats")
            if (d / n).exists()]


@pytest.mark.parametrize("directory,name", ARCSTATS, ids=[f"{d.name}/{n}" for d, n in ARCSTATS])
def test_committed_arcstats_parse(directory: Path, name: str) -> None:
    arc = [s for s in parse_linux((directory / name).read_text(), 0.0) if s.entity.kind == Kind.ARC]
    assert len(arc) == 1 and arc[0].metrics["c_max"] == 256 * 2**20, name
