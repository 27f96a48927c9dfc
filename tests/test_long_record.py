"""The long-recording goals, in `make test`'s short version: `bench/long_record.py` for 60 s
(`make long-bench` runs the 10 minutes) of a busy program at `--call-graph dwarf,65528 -F 499`, against
a plain `perf record` of the same program."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.long_record import GOAL_DISK, GOAL_KEPT, GOAL_RSS, measure, report

SECONDS = 60.0
PLAIN_SECONDS = 20.0  # plain perf's samples per CPU second are steady: a third of the time is enough to compare


@pytest.mark.perf
@pytest.mark.slow
@pytest.mark.parallel  # per CPU second of the program, both runs alike: proven beside two busy loops
def test_sixty_seconds_at_dwarf_65528_keep_the_disk_and_memory_bounded_and_the_samples(tmp_path: Path) -> None:
    # no unrecorded run (5 s): it only gives the overhead figures, which a timed test cannot judge (make long-bench)
    result = measure(SECONDS, 20.0, "256M", "dwarf,65528", tmp_path, plain_seconds=PLAIN_SECONDS, with_overhead=False)
    said = "\n".join(report(result, 20.0, "256M", "dwarf,65528"))
    facts = result.ours.facts
    assert facts["exit"] == 0, said
    assert facts["intervals"] == 3 and facts["trend"], said
    peak = int(facts["peak disk"])  # type: ignore[call-overload]
    assert 0 < peak <= GOAL_DISK, said
    assert result.ours.samples * 65_000 > 3 * peak, said  # unbounded: ~65 KB per sample (1.9 GB for a whole core)
    assert 0 < int(facts["peak rss"]) <= GOAL_RSS, said  # type: ignore[call-overload]
    # per CPU second of the program: the samples we lost, not the CPU a shared machine gave each run
    assert result.kept_per_cpu >= GOAL_KEPT, said
    assert "dropped" not in str(facts["stderr"]), said
