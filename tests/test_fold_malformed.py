"""One test per malformed shape: the exact line number and kind, the record skipped, the rest kept."""

from __future__ import annotations

import pytest

from flamegraph import Diagnostics, FoldOptions, PerfCollapser
from flamegraph.folding.perf_blocks import fold_blocks

GOOD = "python 1 [000] 1.000000: 7 cpu-clock: \n\t    11 main+0x1 (/bin/p)\n\n"


def fold(text: str, **options: object) -> PerfCollapser:
    collapser = PerfCollapser(FoldOptions(**options), Diagnostics(echo=False))  # type: ignore[arg-type]
    fold_blocks(collapser, [text.encode()], "perf.txt")
    return collapser


@pytest.mark.parametrize(
    ("bad", "line", "kind", "summary"),
    [
        ("python 2 [000] 2.0: 5 cpu-clock: \n\tnot a frame\n\t    12 f (/bin/p)\n\n", 5, "bad-frame-line",
         "1 of 3 records"),
        ("python 2 [000] 2.0: 5 cpu-clock: \n\t    12 f (/bin/p)\n???garbage\n\t    13 g (/bin/p)\n\n", 6,
         "bad-header", "1 of 3 records"),
        ("\t    12 orphan (/bin/p)\n\n", 4, "orphan-frame", "0 of 2 records; 1 problem line"),
        ("python 2 [000] 2.0: 5 cpu-clock: \n\t    12\n\n", 5, "bad-frame-line", "1 of 3 records"),
        ("\x00\x01binary\n\t    12 f (/bin/p)\n\n", 4, "bad-header", "1 of 3 records"),
    ],
    ids=["not-a-frame", "garbage-inside-record", "orphan-frame", "frame-without-symbol", "binary-header"],
)
def test_malformed_record_is_reported_at_its_line_and_skipped(bad: str, line: int, kind: str, summary: str) -> None:
    collapser = fold(GOOD + bad + GOOD.replace("main", "after"))
    problems = collapser.diagnostics.problems
    assert [(p.path, p.line, p.kind) for p in problems] == [("perf.txt", line, kind)]
    assert collapser.profile().counts == {"python;main": 7, "python;after": 7}
    assert collapser.diagnostics.summary() == f"skipped {summary}: 1 {kind}"


def test_summary_counts_records_not_problem_lines() -> None:
    """Three bad frame lines in one record: one record skipped, three lines reported."""
    collapser = fold(GOOD + "python 2 [000] 2.0: 5 cpu-clock: \n\tjunk\n\tjunk\n\tjunk\n\n")
    assert collapser.diagnostics.summary() == "skipped 1 of 2 records; 3 problem lines: 3 bad-frame-line"
    assert collapser.profile().counts == {"python;main": 7}


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_whole_sample_followed_by_unreadable_lines_is_kept(jobs: int) -> None:
    """Lines that are neither frames nor headers after a sample's frames end it; it is kept whole,
    and the unreadable lines count as one skipped record (with frames after them, it is not whole)."""
    junk = "python 2 [000] 2.0: 5 cpu-clock: \n\t    12 f (/bin/p)\n???garbage\n???more\n\n"
    collapser = fold(GOOD + junk + GOOD.replace("main", "after"))
    assert collapser.profile().counts == {"python;main": 7, "python;f": 5, "python;after": 7}
    assert [(p.line, p.kind) for p in collapser.diagnostics.problems] == [(6, "bad-header")]
    assert collapser.diagnostics.summary() == "skipped 1 of 4 records: 1 bad-header"


def test_strict_stops_at_the_first_problem() -> None:
    from flamegraph.io.diagnostics import StrictFailure

    collapser = PerfCollapser(FoldOptions(), Diagnostics(strict=True, echo=False))
    with pytest.raises(StrictFailure, match=r"perf.txt:5: bad-frame-line"):
        fold_blocks(collapser, [(GOOD + "python 2 [000] 2.0: 5 cpu-clock: \n\tjunk\n\n").encode()], "perf.txt")


def test_problem_text_is_shortened_and_summary_counts_hidden_ones() -> None:
    bad = "python 2 [000] 2.0: 5 cpu-clock: \n\t" + "x" * 500 + "\n\n"
    collapser = fold(bad * 15)
    diagnostics = collapser.diagnostics
    assert diagnostics.counts["bad-frame-line"] == 15 and len(diagnostics.problems) == 10
    assert len(str(diagnostics.problems[0])) < 200
    assert diagnostics.summary() == "skipped 15 of 15 records: 15 bad-frame-line (5 not shown)"


def test_compat_keeps_the_record_like_the_reference_but_still_reports() -> None:
    collapser = fold(GOOD + "python 2 [000] 2.0: 5 cpu-clock: \n\tjunk\n\t    12 f (/bin/p)\n\n", compat=True)
    assert collapser.profile().counts == {"python;main": 7, "python;f": 5}
    assert [p.kind for p in collapser.diagnostics.problems] == ["bad-frame-line"]


def test_several_events_fold_the_first_and_count_the_others() -> None:
    text = GOOD + GOOD.replace("cpu-clock", "page-faults") * 2
    collapser = fold(text)
    assert collapser.profile().counts == {"python;main": 7}
    assert dict(collapser.skipped_by_event) == {b"page-faults": 2}
    chosen = fold(text, event_filter="page-faults")
    assert chosen.profile().counts == {"python;main": 14}
    per_event = fold(text, per_event=True)
    assert {k: v for k, v in per_event.by_event.items()} == {
        b"cpu-clock": {b"python;main": 7},
        b"page-faults": {b"python;main": 14},
    }
