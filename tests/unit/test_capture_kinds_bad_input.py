"""Bad input for the capture kinds of issue 12 items 6-11: every real capture of them, truncated, with junk or
byte flips, in CRLF, and forced through every one of these kinds, gives records or a ParseError, nothing else."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import TEST_DATA
from tests.unit.mangle import variants
from zfsmon.model import Event, ParseError, Sample
from zfsmon.sources import detect

#: kind -> its real captures (tests/data/*/PROVENANCE.md)
CAPTURES = {
    "arcstat": ["openzfs-2.3/arc_summary.txt", "openzfs-2.1/arc_summary.txt", "openzfs-2.3/arcstat.txt",
                "openzfs-2.3/arcstat-a.txt", "openzfs-2.1/arcstat-a.txt"],
    "zilstat": ["openzfs-2.3/zilstat.txt"],
    "arcstats": ["openzfs-2.3/arcstats.after", "openzfs-2.1/arcstats.before"],
    "zil-kstat": ["openzfs-2.3/zil.after", "openzfs-2.1/zil.before"],
    "objset-kstat": ["openzfs-2.3/kstat/zguest.objset-0x98", "openzfs-2.1/kstat/zguest.objset-0x5d"],
    "diskstats": ["linux-host/diskstats-loop.txt"],
    "iostat-x": ["linux-host/iostat-x.txt", "linux-host/iostat-x-t.txt", "linux-host/iostat-dx-t-iso.txt"],
    "bpftrace-hist": ["linux-host/bpftrace-hist-nr_sector.txt", "linux-host/bpftrace-hist-usecs-by-rwbs.txt",
                      "linux-host/bpftrace-hist-usecs-interval.txt"],
    "bcc-hist": ["bcc-examples/zfsdist.txt", "bcc-examples/zfsdist-1-5.txt", "bcc-examples/biolatency-D.txt",
                 "bcc-examples/biolatency-Fm.txt", "bcc-examples/biolatency-mT-1-5.txt"],
    "bcc-slower": ["bcc-examples/zfsslower.txt", "bcc-examples/zfsslower-j-1.txt"],
}
FILES = [(k, f) for k, fs in CAPTURES.items() for f in fs]


@pytest.mark.parametrize("kind,name", FILES, ids=[f for _k, f in FILES])
def test_capture_is_detected_and_read(kind, name):
    text = (TEST_DATA / name).read_text()
    assert detect.detect(text).name == kind
    recs = detect.get(kind).parse(text, name, None)
    assert any(isinstance(r, Sample) for r in recs)
    # CRLF line ends read the same
    crlf = detect.get(kind).parse(text.replace("\n", "\r\n"), name, None)
    assert [r for r in crlf if isinstance(r, Sample)] == [r for r in recs if isinstance(r, Sample)]


def _try(kind: str, text: str) -> None:
    try:
        recs = detect.get(kind).parse(text, "mangled", None)
    except ParseError as exc:
        assert str(exc).startswith("mangled")
        return
    assert all(isinstance(r, (Sample, Event)) for r in recs)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(FILES), st.data())
def test_mangled_captures_raise_only_parse_error(file, data):
    kind, name = file
    text = (TEST_DATA / name).read_text()
    flip = data.draw(st.integers(0, len(text) - 1))
    texts = variants(text, data) + [text[:flip] + data.draw(st.sampled_from(["-", "x", "\n", "%", "9" * 50, "\t"]))
                                    + text[flip + 1:]]
    forced = data.draw(st.sampled_from(sorted(CAPTURES)))
    for t in texts:
        _try(kind, t)
        _try(forced, t)  # a kind that does not fit: refused with a ParseError, never a traceback
        found = detect.detect(t)
        if found is not None:
            _try(found.name, t)
