"""intervals.py: spans and executions kept compactly and sorted as they come, whatever order they come in."""

from __future__ import annotations

import random

import pytest

from flamegraph.frameworks.mxnet.dnnl import Primitive, VerboseLog
from flamegraph.frameworks.mxnet.intervals import NEAR_END, Intervals
from flamegraph.frameworks.mxnet.profile import Span, SpanIndex


def expected(triples: list[tuple[float, float, str]], longest_first: bool) -> list[tuple[float, float, str]]:
    return sorted(triples, key=lambda t: (t[0], -t[1] if longest_first else t[1]))


@pytest.mark.parametrize("longest_first", [True, False])
@pytest.mark.parametrize("shuffle", ["in order", "near the end", "far back"])
def test_intervals_come_out_sorted_whatever_the_order_they_came_in(longest_first: bool, shuffle: str) -> None:
    rng = random.Random(7)
    triples = [(float(rng.randrange(0, 5000)), 0.0, f"op{rng.randrange(5)}") for _ in range(2000)]
    triples = [(start, start + rng.randrange(0, 40), name) for start, _, name in triples]
    order = expected(triples, longest_first)
    if shuffle == "near the end":  # each out of place by a few: inserted, never marked unsorted
        order = [order[i ^ 1] for i in range(len(order) - len(order) % 2)]
    elif shuffle == "far back":
        rng.shuffle(order)
    intervals = Intervals(longest_first)
    for start, end, name in order:
        intervals.add(start, end, name)
    assert intervals.in_order == (shuffle != "far back")
    intervals.seal()
    assert list(intervals) == expected(order, longest_first) and len(intervals.labels) == 5
    assert list(intervals.reach) == [max(intervals.ends[: i + 1]) for i in range(len(intervals))][: len(intervals)]


def test_one_out_of_order_further_back_than_near_end_is_sorted_at_seal() -> None:
    intervals = Intervals(longest_first=True)
    for i in range(NEAR_END + 10):
        intervals.add(float(10 + i), float(10 + i), "a")
    intervals.add(1.0, 2.0, "b")
    assert not intervals.in_order
    intervals.seal()
    assert intervals.triple(0) == (1.0, 2.0, "b") and list(intervals.starts) == sorted(intervals.starts)


def test_span_index_and_verbose_log_answer_with_objects_as_before() -> None:
    index = SpanIndex([Span(0, 100, "Outer"), Span(10, 20, "Inner"), Span(0, 50, "Mid"), Span(200, 300, "Late")])
    assert index.spans == [Span(0, 100, "Outer"), Span(0, 50, "Mid"), Span(10, 20, "Inner"), Span(200, 300, "Late")]
    assert SpanIndex([Span(0, 10, "A"), Span(20, 30, "B")]).ended_before(25) == Span(0, 10, "A")
    assert index.at(15) == Span(10, 20, "Inner") and index.at(60) == Span(0, 100, "Outer") and index.at(150) is None
    assert index.ended_before(5) is None and index.first == 0 and index.last == 300
    executions = [Primitive(5, 9, "eltwise", "jit", "forward_training", "64x128"),
                  Primitive(1, 4, "inner_product", "gemm", "forward_training", "mb64ic784oc128")]  # fmt: skip
    log = VerboseLog(executions)
    log.index()
    assert log.primitives == executions[::-1] and len(log) == 2
    assert log.at(6) == [executions[0]] and log.at(6, (0, 4)) == [] and log.at(4.5) == []
