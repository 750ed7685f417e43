"""The golden tier's own rules (tests/golden/golden.py): what fails, what is written, and where (CI or not)."""

from __future__ import annotations

import pytest

from tests.golden import golden


@pytest.fixture
def golden_dir(tmp_path, monkeypatch):
    """Golden files in a temporary directory, outside CI, no update asked: each test sets what it needs."""
    d = tmp_path / "golden"
    d.mkdir()
    monkeypatch.setattr(golden, "GOLDEN", d)
    monkeypatch.setattr(golden, "IN_CI", False)
    monkeypatch.delenv(golden.UPDATE_ENV, raising=False)
    return d


def test_the_same_text_passes_and_a_difference_fails_with_a_unified_diff(golden_dir, tmp_path):
    (golden_dir / "out.txt").write_text("pool  102M\nlog   1.73M\n")
    golden.check("out.txt", "pool  102M\nlog   1.73M\n", tmp_path)
    with pytest.raises(pytest.fail.Exception) as err:
        golden.check("out.txt", "pool  102M\nlog   1.70M\n", tmp_path)
    msg = str(err.value)
    assert "-log   1.73M" in msg and "+log   1.70M" in msg and golden.REGENERATE in msg
    assert (tmp_path / "out.txt").read_text() == "pool  102M\nlog   1.70M\n"  # the new output, to look at
    assert (golden_dir / "out.txt").read_text() == "pool  102M\nlog   1.73M\n"  # the committed one untouched


def test_a_missing_final_newline_is_a_difference(golden_dir, tmp_path):
    (golden_dir / "out.txt").write_text("a\n")
    with pytest.raises(pytest.fail.Exception, match="line ends or the final newline"):
        golden.check("out.txt", "a", tmp_path)


def test_update_writes_the_output_as_the_golden_file(golden_dir, tmp_path, monkeypatch):
    (golden_dir / "out.txt").write_text("old\n")
    monkeypatch.setenv(golden.UPDATE_ENV, "1")
    golden.check("out.txt", "new\n", tmp_path)
    assert (golden_dir / "out.txt").read_text() == "new\n"


def test_outside_ci_a_missing_golden_file_is_written_and_fails_once(golden_dir, tmp_path):
    with pytest.raises(pytest.fail.Exception, match="written now"):
        golden.check("new.txt", "made\n", tmp_path)
    assert (golden_dir / "new.txt").read_text() == "made\n"
    golden.check("new.txt", "made\n", tmp_path)  # the next run compares


def test_in_ci_a_missing_golden_file_fails_and_nothing_is_written(golden_dir, tmp_path, monkeypatch):
    monkeypatch.setattr(golden, "IN_CI", True)
    with pytest.raises(pytest.fail.Exception, match="no golden file"):
        golden.check("new.txt", "made\n", tmp_path)
    assert not (golden_dir / "new.txt").exists()


def test_in_ci_an_update_is_refused(golden_dir, tmp_path, monkeypatch):
    (golden_dir / "out.txt").write_text("old\n")
    monkeypatch.setattr(golden, "IN_CI", True)
    monkeypatch.setenv(golden.UPDATE_ENV, "1")
    with pytest.raises(pytest.fail.Exception, match="never in CI"):
        golden.check("out.txt", "new\n", tmp_path)
    assert (golden_dir / "out.txt").read_text() == "old\n"


def test_only_the_leading_wall_clock_is_masked():
    table = ("    time   read  size\n"
             "18:38:48      0  109M\n"
             "note: 12:00:00 in the middle stays\n")
    assert golden.wall_clock_masked(table) == ("    time   read  size\n"
                                               "HH:MM:SS      0  109M\n"
                                               "note: 12:00:00 in the middle stays\n")
    csv = "time,read,size\n1796150330.013,0,114471904\n1796150331,1,2\n"
    assert golden.wall_clock_masked(csv, csv=True) == "time,read,size\nEPOCH,0,114471904\nEPOCH,1,2\n"
