"""Layout: the frames are exactly the merged stacks (checked against an independent prefix sum)."""

from __future__ import annotations

import itertools
from collections import defaultdict

import pytest
from helpers.oracle import merged_weights
from hypothesis import given, settings
from hypothesis import strategies as st

from flamegraph.model import FoldedProfile
from flamegraph.render.layout import (
    Columns,
    Layout,
    Rect,
    layout_stacks,
    min_weight_for,
    order_stacks,
)

# Names where one is a prefix of another, and characters sorting before and after ';'.
NAMES = ["a", "a+b", "a b", "ab", "a<", "b", "main", "[unknown]", "std::vector<int>", "é", "z"]


def layout_profile(profile: FoldedProfile, min_weight: float = 0.0, reverse: bool = False) -> Layout:
    """A profile laid out as the renderer does it: its stacks ordered, then merged."""
    texts, weights = order_stacks(profile.counts, reverse=reverse)
    return layout_stacks(texts, Columns(weights), min_weight)


def drawn_paths(layout: Layout) -> dict[tuple[str, ...], float]:
    return {path: frame.width for path, frame in drawn_frames(layout).items()}


def drawn_frames(layout: Layout) -> dict[tuple[str, ...], Rect]:
    """Paths of the drawn frames, found by geometry: a frame's parent is the frame one row down containing it."""
    by_depth: dict[int, list] = defaultdict(list)  # type: ignore[type-arg]
    for frame in layout.frames:
        by_depth[frame.depth].append(frame)
    paths: dict[int, tuple[str, ...]] = {}
    result: dict[tuple[str, ...], Rect] = {}
    for depth in sorted(by_depth):
        for frame in by_depth[depth]:
            if depth == 0:
                paths[id(frame)] = ()
                continue
            parents = [
                p
                for p in by_depth[depth - 1]
                if p.start <= frame.start and frame.start + frame.width <= p.start + p.width
            ]
            assert len(parents) == 1, (frame, parents)
            path = paths[id(parents[0])] + (frame.name,)
            paths[id(frame)] = path
            assert path not in result, f"frame drawn twice: {path}"
            result[path] = frame
    return result


profiles = st.dictionaries(
    st.lists(st.sampled_from(NAMES), min_size=1, max_size=6).map(";".join),
    st.integers(min_value=1, max_value=1000),
    min_size=1,
    max_size=40,
)


@settings(max_examples=150, deadline=None)
@given(profiles)
def test_frames_are_the_merged_stacks(counts: dict[str, float]) -> None:
    layout = layout_profile(FoldedProfile(dict(counts)))
    assert drawn_paths(layout) == merged_weights(counts)
    root = layout.frames[0]
    assert (root.depth, root.start, root.width) == (0, 0, sum(counts.values()))
    assert layout.max_depth == max(len(text.split(";")) for text in counts)


@settings(max_examples=100, deadline=None)
@given(profiles, st.integers(min_value=1, max_value=500))
def test_pruning_drops_exactly_the_narrow_frames(counts: dict[str, float], minimum: int) -> None:
    layout = layout_profile(FoldedProfile(dict(counts)), min_weight=minimum)
    wanted = {path: weight for path, weight in merged_weights(counts).items() if weight >= minimum}
    assert drawn_paths(layout) == wanted


@settings(max_examples=100, deadline=None)
@given(profiles)
def test_self_weight_and_children_add_up(counts: dict[str, float]) -> None:
    layout = layout_profile(FoldedProfile(dict(counts)))
    through = merged_weights(counts)
    ends = {tuple(text.split(";")): weight for text, weight in counts.items()}
    for path, frame in drawn_frames(layout).items():
        assert frame.self_width == ends.get(path, 0)
    children: dict[tuple[str, ...], float] = defaultdict(float)
    for path, weight in through.items():
        children[path[:-1]] += weight
    for path, weight in through.items():
        assert weight == pytest.approx(children.get(path, 0) + ends.get(path, 0))


def test_a_name_that_prefixes_another_still_merges() -> None:
    # Sorted as plain lines, "a 5" < "a+b;x 3" < "a;y 2" splits "a" in two (flamegraph.pl draws it twice).
    layout = layout_profile(FoldedProfile({"a": 5, "a+b;x": 3, "a;y": 2, "a b": 1, "a b;z": 4, "a+b": 6}))
    assert [(f.name, f.depth, f.start, f.width, f.self_width) for f in layout.frames] == [
        ("all", 0, 0, 21, 0),
        ("a", 1, 0, 7, 5),
        ("y", 2, 5, 2, 2),
        ("a b", 1, 7, 5, 1),
        ("z", 2, 8, 4, 4),
        ("a+b", 1, 12, 9, 6),
        ("x", 2, 18, 3, 3),
    ]


def test_depth_first_order_with_exact_positions() -> None:
    layout = layout_profile(FoldedProfile({"main;b": 2, "main;a;x": 3, "main;a": 1, "other": 4}))
    assert [(f.name, f.depth, f.start, f.width, f.self_width) for f in layout.frames] == [
        ("all", 0, 0, 10, 0),
        ("main", 1, 0, 6, 0),
        ("a", 2, 0, 4, 1),
        ("x", 3, 1, 3, 3),
        ("b", 2, 4, 2, 2),
        ("other", 1, 6, 4, 4),
    ]


def test_fractional_counts() -> None:
    layout = layout_profile(FoldedProfile({"a;b": 0.25, "a;c": 1.5}))
    assert [(f.name, f.width) for f in layout.frames] == [("all", 1.75), ("a", 1.75), ("b", 0.25), ("c", 1.5)]


def test_reverse_merges_from_the_leaf() -> None:
    texts, weights = order_stacks({"main;f;leaf": 2, "other;g;leaf": 3}, reverse=True)
    layout = layout_stacks(texts, Columns(weights))
    assert [(f.name, f.depth, f.width) for f in layout.frames[:2]] == [("all", 0, 5), ("leaf", 1, 5)]


def test_flame_chart_keeps_time_order_and_repeats() -> None:
    stacks = [("a;b", 1.0), ("a;c", 2.0), ("a;b", 1.0), ("d", 1.0)]
    texts, weights = order_stacks(stacks, keep_order=True)
    layout = layout_stacks(texts, Columns(weights), ordered=False)
    assert [(f.name, f.depth, f.start, f.width) for f in layout.frames] == [
        ("all", 0, 0, 5),
        ("a", 1, 0, 4),
        ("b", 2, 0, 1),
        ("c", 2, 1, 2),
        ("b", 2, 3, 1),
        ("d", 1, 4, 1),
    ]


def test_flame_chart_self_weight_of_a_stack_ending_between_children() -> None:
    """In time order a stack may end at a frame between two of its children: that is its self weight."""
    stacks = [("a;b", 1.0), ("a", 2.0), ("a;c", 4.0), ("a", 8.0), ("a", 16.0)]
    texts, weights = order_stacks(stacks, keep_order=True)
    layout = layout_stacks(texts, Columns(weights), ordered=False)
    assert [(f.name, f.depth, f.start, f.width, f.self_width) for f in layout.frames] == [
        ("all", 0, 0, 31, 0),
        ("a", 1, 0, 31, 26),
        ("b", 2, 0, 1, 1),
        ("c", 2, 3, 4, 4),
    ]
    texts, weights = order_stacks([("a;b", 1.0), ("a", 2.0), ("a;c", 4.0)], keep_order=True)
    one = layout_stacks(texts, Columns(weights), ordered=False)
    assert one.frames[1].self_width == 2  # one stack ends there: its weight


def test_diff_columns_give_before_after_and_self_delta() -> None:
    texts = sorted(["m;a", "m;b", "m"])
    before = {"m": 1.0, "m;a": 4.0, "m;b": 0.0}
    after = {"m": 1.0, "m;a": 1.0, "m;b": 5.0}
    columns = Columns([max(before[t], after[t]) for t in texts], [before[t] for t in texts], [after[t] for t in texts])
    frames = {f.name: f for f in layout_stacks(texts, columns).frames}
    assert (frames["m"].before, frames["m"].after, frames["m"].self_delta) == (5, 7, 0)
    assert (frames["a"].before, frames["a"].after, frames["a"].self_delta) == (4, 1, -3)
    assert (frames["b"].width, frames["b"].self_delta) == (5, 5)


def test_the_stack_strings_are_not_copied() -> None:
    counts = {"a;b": 1.0, "a": 2.0, "a b;x": 3.0}
    texts, _ = order_stacks(counts)
    assert all(any(t is original for original in counts) for t in texts)


def test_min_width_in_pixels_or_percent() -> None:
    assert min_weight_for("0.1", 1180, 1180) == pytest.approx(0.1)
    assert min_weight_for(2, 500, 1000) == pytest.approx(1)
    assert min_weight_for("0.5%", 2000, 1180) == pytest.approx(10)


def test_memory_is_bounded_by_the_frames_drawn() -> None:
    # 20,000 distinct stacks under one heavy frame: with 1 % pruning only a handful are visited.
    counts = {f"main;f{i};g{i}": 1 for i in range(20_000)}
    counts["main;hot"] = 100_000
    layout = layout_profile(FoldedProfile(counts), min_weight=0.01 * 120_000)
    assert [f.name for f in layout.frames] == ["all", "main", "hot"]


def test_order_by_weight_puts_the_widest_sibling_left_and_self_right() -> None:
    texts, weights = order_stacks({"main;b": 2, "main;a;x": 3, "main;a": 1, "main;c": 4, "main": 1, "other": 5})
    layout = layout_stacks(texts, Columns(weights), by_weight=True)
    assert [(f.name, f.depth, f.start, f.width, f.self_width) for f in layout.frames] == [
        ("all", 0, 0, 16, 0),
        ("main", 1, 0, 11, 1),
        ("a", 2, 0, 4, 1),  # 4 = 3 + self 1; ties broken by name: a (4) before c (4)
        ("x", 3, 0, 3, 3),  # the self weight of a is on its right
        ("c", 2, 4, 4, 4),
        ("b", 2, 8, 2, 2),
        ("other", 1, 11, 5, 5),
    ]


@settings(max_examples=150, deadline=None)
@given(profiles, st.integers(min_value=0, max_value=300))
def test_order_by_weight_draws_the_same_frames_widest_first(counts: dict[str, float], minimum: int) -> None:
    texts, weights = order_stacks(counts)
    by_name = layout_stacks(texts, Columns(weights), minimum)
    by_weight = layout_stacks(texts, Columns(weights), minimum, by_weight=True)
    assert drawn_paths(by_weight) == drawn_paths(by_name)
    assert by_weight.total == by_name.total and by_weight.max_depth == by_name.max_depth
    siblings: dict[tuple[str, ...], list[Rect]] = defaultdict(list)
    for path, frame in drawn_frames(by_weight).items():
        siblings[path[:-1]].append(frame)
    parents = drawn_frames(by_weight)
    for parent, children in siblings.items():
        children.sort(key=lambda frame: frame.start)
        left = parents[parent].start if parent else 0
        assert children[0].start == left  # the widest starts at the parent's left edge
        assert [c.width for c in children] == sorted((c.width for c in children), reverse=True)
        for a, b in itertools.pairwise(children):
            assert b.start == pytest.approx(a.start + a.width)  # side by side, no gap between drawn siblings


def test_a_flame_chart_cannot_be_ordered_by_weight() -> None:
    with pytest.raises(ValueError, match="time order"):
        layout_stacks(["a"], Columns([1.0]), ordered=False, by_weight=True)
