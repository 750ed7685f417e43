"""Text from the input is shown, never interpreted, by every view (issue 41, items 7-9).

Names and texts come from genuine captures with their device names replaced by hostile ones: a terminal escape
sequence (an OSC that sets the terminal's title, a CSI that clears the screen), Textual/rich markup (``[/]``,
``[link=...]``, ``[bold]``), matplotlib mathtext (``$\\foo$``) and a spreadsheet formula (``=1+1``). Each view
must show them as text: no escape byte on the terminal, no markup parsed (nor a MarkupError), no mathtext (nor a
ValueError), no formula in a CSV cell.
"""

from __future__ import annotations

import asyncio
import csv
import io
import os

import pytest
from matplotlib.cbook import is_math_text
from matplotlib.text import Text as MplText
from rich.text import Text

from tests.conftest import TEST_DATA, wait_until_async
from tests.unit.bad_input import answer
from zfsmon.errors import printable
from zfsmon.model import Event, EventKind, Sample
from zfsmon.sources.zpool import iostat as zpool_iostat
from zfsmon.sources.zpool.status import parse_status
from zfsmon.store import Recorder, Recording
from zfsmon.views import report_pdf
from zfsmon.views.iostat_text import IostatTable, csv_columns, csv_header, csv_rows
from zfsmon.views.top import panels
from zfsmon.views.top.app import LiveFeed, TopApp
from zfsmon.views.top.fmt import inert
from zfsmon.views.top.replay import ReplayCursor
from zfsmon.views.top.state import TopState

FUSE = TEST_DATA / "zfsfuse"
IOSTAT = FUSE / "zpool_iostat_-v_ziocap_1_8_cache-removed-readded.txt"  # loop6 (cache) removed, then re-added
STATUS = FUSE / "zpool_status_ziocap.txt"
OSC = "\x1b]0;pwned\x07"  # sets the terminal's title
CSI = "\x1b[2J"  # clears the screen
#: the capture's device names and what they become (whitespace-free: the parsers split on blanks)
HOSTILE = {"loop6": f"{OSC}[/]", "loop1": "[link=http://x]a[/link]", "loop2": "$\\foo$", "loop3": "=1+1",
           "loop4": f"{CSI}[bold]b", "loop5": "$\\log$"}
MARK = "[/] [link=http://x]m[/link] $\\foo$"
T0 = 1_800_000_000.0


def hostile(text: str) -> str:
    for name, bad in HOSTILE.items():
        text = text.replace(name, bad)
    return text


def hostile_records():
    """The capture's readings through the real parsers, under hostile names, and a mark of the same kind."""
    topo = parse_status(hostile(STATUS.read_text()))
    recs = zpool_iostat.parse_text(hostile(IOSTAT.read_text()), interval=1.0, start_ts=T0, topology=topo)
    recs.append(Event(T0 + 2.5, EventKind.MARK, MARK, source="user"))
    return recs


@pytest.fixture
def recording(tmp_path) -> str:
    path = str(tmp_path / "hostile.zfsmon")
    with Recorder(path, {"host": f"host{OSC}", "interval": "1"}) as rec:
        rec.write(hostile_records())
    return path


def test_the_capture_keeps_the_hostile_names():
    recs = hostile_records()
    names = {r.entity.name for r in recs if isinstance(r, Sample)}
    assert set(HOSTILE.values()) <= names
    assert any(isinstance(r, Event) and r.kind == EventKind.TOPOLOGY and OSC in r.text for r in recs)


# ------------------------------------------------------------------------------------------------ top / replay
def screen_text(app) -> str:
    update = app.screen._compositor.render_update(full=True)
    return "\n".join("".join(seg.text for seg in strip) for strip in update.strips)


def _inert_on_screen(text: str) -> None:
    assert "\x1b" not in text and "\x07" not in text
    for seg in ("\\x1b]0;pwned", "\\x1b[2J[bold]b", "[link=http://x]a[/link]", "$\\foo$", "=1+1"):
        assert seg in text, seg


def test_replay_shows_hostile_names_and_event_texts_as_text(recording):
    """The tree shows every name as text (escapes shown as ``\\x1b``, markup as brackets); jumping to the
    topology event whose text holds ``[/]`` and an OSC shows it in a notification, as text, and the app runs on."""
    async def go():
        rec = Recording.open(recording)
        cur = ReplayCursor(rec, 300.0)
        info = panels.HeaderInfo(f"host{OSC}", "Linux", "captures", recording, "replay")
        app = TopApp(cur.state, info, cur.interval, replay=cur, export_dir=os.path.dirname(recording))
        async with app.run_test(size=(200, 50), notifications=True) as pilot:
            await pilot.press("left_square_bracket")  # the cache device re-added: the topology event
            text = await wait_until_async(lambda: "added" in screen_text(app) and screen_text(app), 30.0,
                                          lambda: f"the event's notification; screen:\n{screen_text(app)}",
                                          pilot.pause)
            assert "topology: pool ziocap: added \\x1b]0;pwned\\x07[/]" in text
            _inert_on_screen(text)
            assert "host\\x1b]0;pwned" in text  # the header
            await pilot.press("left_square_bracket")  # the mark, then the removal
            await pilot.press("left_square_bracket")
            await wait_until_async(lambda: "removed" in screen_text(app), 30.0, "the removal's notification",
                                   pilot.pause)
            assert "\x1b" not in screen_text(app)
        rec.close()
        assert app.return_code in (None, 0)
    asyncio.run(go())


def test_a_mark_typed_in_top_with_markup_is_shown_as_text(tmp_path):
    written = []

    async def go():
        feed = LiveFeed()
        info = panels.HeaderInfo("h", "Linux", "captures", str(tmp_path / "live.zfsmon"), "live")
        app = TopApp(TopState(300), info, 1.0, feed=feed, on_mark=written.append, export_dir=str(tmp_path),
                     clock=lambda: T0 + 8)
        async with app.run_test(size=(200, 50), notifications=True) as pilot:
            feed.sink(hostile_records())
            await wait_until_async(lambda: app.state.fed > 0, 30.0, "the records to be fed", pilot.pause)
            await pilot.press("m")
            await pilot.pause()
            await pilot.press(*"[/]x[link=http://x]a[/link]", "enter")
            text = await wait_until_async(lambda: "marked:" in screen_text(app) and screen_text(app), 30.0,
                                          lambda: f"the mark's notification; screen:\n{screen_text(app)}",
                                          pilot.pause)
            assert "marked: [/]x[link=http://x]a[/link]" in text
            _inert_on_screen(text)
        assert app.return_code in (None, 0)
    asyncio.run(go())
    assert written == ["[/]x[link=http://x]a[/link]"]


def test_inert_keeps_the_styles_on_their_characters():
    t = Text("a")
    t.append(f"b{CSI}c", style="bold")
    t.append("d", style="red")
    out = inert(t)
    assert out.plain == printable(f"ab{CSI}cd")
    assert [(out.plain[s.start:s.end], s.style) for s in out.spans] == [(printable(f"b{CSI}c"), "bold"),
                                                                         ("d", "red")]
    plain = Text("plain")
    assert inert(plain) is plain


# ------------------------------------------------------------------------------------------------ trace --from
VDEVLAT = TEST_DATA / "trace" / "vdevlat.d.out"  # illumos DTrace, vdevs by /devices path
TRACE_NAME = f"=1+1{OSC}$\\foo$[/]"


def _trace_capture(tmp_path) -> str:
    f = tmp_path / "vdevlat.out"
    f.write_text(VDEVLAT.read_text().replace("/devices/pci@0,0/pci15ad,1976@10/sd@0,0:a", TRACE_NAME))
    return str(f)


def test_trace_from_shows_names_as_text_in_the_table_and_histograms(tmp_path):
    a = answer(["trace", "--from", _trace_capture(tmp_path)])
    assert a.code == 0, a.err
    assert "\x1b" not in a.out + "".join(a.err) and "\x07" not in a.out + "".join(a.err)
    shown = printable(TRACE_NAME)
    rows = [ln for ln in a.out.splitlines() if ln.startswith(shown[:22] + " ")]
    assert rows and all(ln.split()[2] in ("read", "write") for ln in rows)  # the table's rows
    assert f"{shown} read: 39 ops" in a.out  # the closing histogram's heading


def test_trace_from_csv_cells_hold_no_formula_and_no_escape(tmp_path):
    a = answer(["trace", "--from", _trace_capture(tmp_path), "--csv"])
    assert a.code == 0, a.err
    assert "\x1b" not in a.out and "\x07" not in a.out
    cells = [row["entity"] for row in csv.DictReader(io.StringIO(a.out))]
    assert "'" + printable(TRACE_NAME) in cells
    assert not any(c.startswith(("=", "+", "-", "@")) for c in cells)


# ------------------------------------------------------------------------------------------------ report
def _shown_by_matplotlib(fig) -> list:
    """What each text of ``fig`` shows: none read as mathtext (that raised ValueError on ``$\\foo$``), so each
    shows its text with ``\\$`` as ``$``."""
    fig.canvas.draw()
    texts = [t.get_text() for t in fig.findobj(MplText) if t.get_text()]
    maths = [t for t in texts if is_math_text(t) and ("foo" in t or "log" in t or "bar" in t)]
    assert not maths, maths
    return [t.replace("\\$", "$") for t in texts]


def test_report_draws_mathtext_in_names_and_file_name_as_text(tmp_path):
    path = str(tmp_path / "$\\foo$.zfsmon")  # the recording's (an imported file's) name, on the summary page
    with Recorder(path, {"host": "h$\\bar$", "interval": "1"}) as rec:
        rec.write(hostile_records())
    out = tmp_path / "post.pdf"
    a = answer(["report", path, "--out", str(out)])
    assert a.code == 0 and out.stat().st_size > 10_000, a.err
    with Recording.open(path) as rec:
        data = report_pdf.build(rec)
    page = " ".join(_shown_by_matplotlib(report_pdf._text_figure(data)))
    assert "report: $\\foo$.zfsmon" in page and "host h$\\bar$" in page
    shown = [t for s in data.sections for t in _shown_by_matplotlib(report_pdf.section_figure(s, data))]
    assert "ziocap/$\\log$" in shown  # the log vdev's line in a legend
    assert "ziocap/" + printable(HOSTILE["loop6"]) in shown  # the cache vdev's
    assert any(t.strip() == MARK for t in shown)  # the mark's label


def test_the_html_report_holds_names_marks_and_the_file_name_as_text(tmp_path):
    """HTML in the host and the recording's name is escaped in the HTML report, and a mark's (drawn in the plots)
    leaves no element in it: no tag, no script."""
    path = str(tmp_path / "<i onmouseover=alert(1)>x.zfsmon")
    recs = hostile_records() + [Event(T0 + 3.5, EventKind.MARK, "<img src=x onerror=alert(1)>", source="user")]
    with Recorder(path, {"host": "<script>alert(1)</script>", "interval": "1"}) as rec:
        rec.write(recs)
    out = tmp_path / "post.html"
    a = answer(["report", path, "--out", str(out)])
    assert a.code == 0, a.err
    page = out.read_text()
    assert "<script>" not in page and "<img src=x" not in page and "<i onmouseover" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "&lt;i onmouseover=alert(1)&gt;x.zfsmon" in page
    assert "\x1b" not in page


# ------------------------------------------------------------------------------------------------ iostat
def test_iostat_table_and_csv_show_names_as_text():
    topo = parse_status(hostile(STATUS.read_text()))
    samples = [r for r in zpool_iostat.parse_text(hostile(IOSTAT.read_text()), interval=1.0, topology=topo)
               if isinstance(r, Sample)]
    table = "\n".join(IostatTable().render(samples))
    assert "\x1b" not in table and printable(HOSTILE["loop6"]) in table
    assert len({len(ln) for ln in table.splitlines()[3:-1] if ln.strip()}) == 1  # the columns stay aligned
    cols = csv_columns(samples)
    names = [row["name"] for row in csv.DictReader(io.StringIO("\n".join([csv_header(cols)] +
                                                                         csv_rows(samples, cols))))]
    assert "'=1+1" in names and printable(HOSTILE["loop6"]) in names and "\x1b" not in "".join(names)
