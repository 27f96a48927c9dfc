"""Views as transforms of folded stacks (flamegraph/analysis/views.py): one table per view, and properties:
hide, collapse-recursion, strip-root and merge-pids keep every sample; focus and ignore only drop
whole stacks, and split the total between them; callers and callees keep what focus keeps."""

from __future__ import annotations

import re
from itertools import groupby, pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flamegraph.analysis.views import Applied, ViewOptions, apply_views, roots_advice
from flamegraph.io.diagnostics import BadOption, NoSamples
from flamegraph.model import FoldedProfile

COUNTS = {
    "python-11;main;compute;gemm": 50,
    "python-11;main;compute;compute;compute;relu": 10,
    "python-11;main;io;read": 20,
    "python-11;main;io;gemm": 5,
    "python-11;idle": 15,
}


def view(counts: dict[str, float], **options: object) -> dict[str, float]:
    profile, _ = apply_views(FoldedProfile(dict(counts)), ViewOptions(**options).compile())  # type: ignore[arg-type]
    return profile.counts


TABLE = [
    ({"focus": "compute"}, {"python-11;main;compute;gemm": 50, "python-11;main;compute;compute;compute;relu": 10}),
    ({"focus": "compute", "focus_root": True}, {"compute;gemm": 50, "compute;compute;compute;relu": 10}),
    ({"ignore": "^io$|idle"}, {"python-11;main;compute;gemm": 50, "python-11;main;compute;compute;compute;relu": 10}),
    ({"hide": "^(main|compute)$"}, {"python-11;gemm": 50, "python-11;relu": 10, "python-11;io;read": 20,
                                     "python-11;io;gemm": 5, "python-11;idle": 15}),  # fmt: skip
    ({"collapse_recursion": True}, {"python-11;main;compute;gemm": 50, "python-11;main;compute;relu": 10,
                                    "python-11;main;io;read": 20, "python-11;main;io;gemm": 5, "python-11;idle": 15}),
    ({"callers": "^gemm$"}, {"gemm;compute;main;python-11": 50, "gemm;io;main;python-11": 5}),
    ({"callees": "^compute$"}, {"compute;gemm": 50, "compute;compute;compute;relu": 10}),
    ({"strip_root": True}, {text.partition(";")[2]: weight for text, weight in COUNTS.items()}),
    ({"merge_pids": True}, {"python" + text.removeprefix("python-11"): weight for text, weight in COUNTS.items()}),
    # several at once, in the one order: ignore, focus, hide, collapse, callers
    ({"ignore": "read", "focus": "main", "hide": "^main$", "collapse_recursion": True, "callers": "relu|gemm"},
     {"gemm;compute;python-11": 50, "relu;compute;python-11": 10, "gemm;io;python-11": 5}),  # fmt: skip
]


@pytest.mark.parametrize(("options", "expected"), TABLE, ids=[str(options) for options, _ in TABLE])
def test_each_view_gives_the_known_stacks(options: dict[str, object], expected: dict[str, float]) -> None:
    assert view(COUNTS, **options) == expected


def test_recursion_is_counted_once_rooted_at_the_outermost_call() -> None:
    counts = {"a;f;g;f;h": 3, "a;f": 2, "b;g": 1}
    assert view(counts, callers="^f$") == {"f;a": 5}  # speedscope's sandwich: the outermost f
    assert view(counts, callees="^f$") == {"f;g;f;h": 3, "f": 2}


def test_stacks_that_meet_add_up_and_facts_are_kept() -> None:
    profile = FoldedProfile({"p-1;a": 2, "p-2;a": 3, "p-3/4;b": 1}, "microseconds", "sched:sched_switch",
                            {"host": "vm"}, 5e6)  # fmt: skip
    result, applied = apply_views(profile, ViewOptions(merge_pids=True).compile())
    assert result.counts == {"p;a": 5, "p;b": 1}
    assert (result.unit, result.event, result.metadata, result.window_us) == (
        "microseconds", "sched:sched_switch", {"host": "vm"}, 5e6)  # fmt: skip
    assert applied.total_before == applied.total_after == 6 and applied.kept == 1


def test_nothing_is_lost_where_a_stack_would_become_empty() -> None:
    assert view({"a;b": 2, "c": 1}, hide=".") == {"a": 2, "c": 1}  # every frame hidden: the root stays
    assert view({"a;b": 2, "c": 1}, strip_root=True) == {"b": 2, "c": 1}  # the root alone stays


def test_the_share_that_remains() -> None:
    _, applied = apply_views(FoldedProfile(dict(COUNTS)), ViewOptions(focus="compute").compile())
    assert applied == Applied(applied.steps, 100, 60) and applied.kept == 0.6
    assert [(s.kind, s.pattern) for s in applied.steps] == [("focus", "compute")]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"focus": "("}, "--focus '(': bad regular expression: missing ), unterminated subpattern at position 0"),
        ({"ignore": "[a"}, "--ignore '[a': bad regular expression"),
        ({"hide": "*"}, "--hide '*': bad regular expression: nothing to repeat"),
        ({"callers": "a{4294967296}"}, "--callers 'a{4294967296}': bad regular expression"),
        ({"callees": "(?P<"}, "--callees '(?P<': bad regular expression"),
        ({"focus_root": True}, "--focus-root re-roots at the --focus frame: give --focus REGEX too"),
        ({"callers": "a", "callees": "b"}, "--callers and --callees are two views: draw one at a time"),
    ],
)
def test_bad_options_are_one_usage_error(options: dict[str, object], message: str) -> None:
    with pytest.raises(BadOption) as caught:
        ViewOptions(**options).compile()  # type: ignore[arg-type]
    assert str(caught.value).startswith(message) and "\n" not in str(caught.value)
    assert caught.value.exit_code == 2


def test_a_view_that_leaves_nothing_says_which() -> None:
    with pytest.raises(NoSamples, match=r"nothing left to draw: no stack passes --focus 'nomatch'"):
        view(COUNTS, focus="nomatch")
    empty, _ = apply_views(FoldedProfile({"a": 1}), ViewOptions(focus="b").compile(), allow_empty=True)
    assert empty.counts == {}


def test_flame_chart_stacks_keep_their_time_order() -> None:
    views = ViewOptions(collapse_recursion=True, ignore="^x$").compile()
    assert views.map_stacks([("a;a;b", 1), ("x;y", 2), ("a;b", 3), ("a;a", 4)]) == [("a;b", 1), ("a;b", 3), ("a", 4)]


def test_roots_advice() -> None:
    def side(*stacks: str) -> FoldedProfile:
        return FoldedProfile(dict.fromkeys(stacks, 1))

    assert roots_advice(side("burn-1;main"), side("burn-2/3;main")) is not None
    assert "--merge-pids" in (roots_advice(side("burn-1;main"), side("burn-2;main")) or "")
    assert "--strip-root" in (roots_advice(side("burn1-1;main"), side("burn2-2;main;x")) or "")
    assert roots_advice(side("burn1-1;a"), side("burn2-2;b")) is None  # nothing below would meet either
    assert roots_advice(side("p-1;a"), side("p-1;b", "q-2;a")) is None  # they share a root


# --- properties -----------------------------------------------------------------------------------

NAMES = ["a", "b", "c", "main", "gemm", "p-1", "p-22/23", "q-5", "[unknown]", "caf\udce9"]
PATTERNS = ["a", "^b$", "gemm|main", "^p", "\\[", "x"]
profiles = st.dictionaries(
    st.lists(st.sampled_from(NAMES), min_size=1, max_size=7).map(";".join),
    st.integers(min_value=1, max_value=1000),
    min_size=1,
    max_size=30,
)


def total(counts: dict[str, float]) -> float:
    return sum(counts.values())


def through(counts: dict[str, float], pattern: str) -> float:
    """The independent answer: the weight of the stacks with a frame the pattern finds."""
    regex = re.compile(pattern)
    return sum(w for text, w in counts.items() if any(regex.search(name) for name in text.split(";")))


@settings(max_examples=150, deadline=None)
@given(profiles, st.sampled_from(PATTERNS))
def test_hide_keeps_every_sample_and_no_matching_frame(counts: dict[str, float], pattern: str) -> None:
    hidden = view(counts, hide=pattern)
    assert total(hidden) == total(counts)
    regex = re.compile(pattern)
    for text in hidden:
        frames = text.split(";")
        assert len(frames) == 1 or not any(regex.search(name) for name in frames)


@settings(max_examples=150, deadline=None)
@given(profiles)
def test_collapse_recursion_keeps_every_sample_and_no_repeat(counts: dict[str, float]) -> None:
    collapsed = view(counts, collapse_recursion=True)
    assert total(collapsed) == total(counts)
    assert all(a != b for text in collapsed for a, b in pairwise(text.split(";")))
    expected: dict[str, float] = {}
    for text, weight in counts.items():
        key = ";".join(name for name, _ in groupby(text.split(";")))
        expected[key] = expected.get(key, 0) + weight
    assert collapsed == expected
    assert view(collapsed, collapse_recursion=True) == collapsed  # idempotent


@settings(max_examples=150, deadline=None)
@given(profiles)
def test_root_views_keep_every_sample(counts: dict[str, float]) -> None:
    assert total(view(counts, strip_root=True)) == total(counts)
    assert total(view(counts, merge_pids=True)) == total(counts)
    assert all(not re.search(r"-\d", text.partition(";")[0]) for text in view(counts, merge_pids=True))


@settings(max_examples=150, deadline=None)
@given(profiles, st.sampled_from(PATTERNS))
def test_focus_and_ignore_drop_whole_stacks_and_split_the_total(counts: dict[str, float], pattern: str) -> None:
    kept = through(counts, pattern)
    results = []
    for options in ({"focus": pattern}, {"ignore": pattern}, {"focus": pattern, "focus_root": True},
                    {"callers": pattern}, {"callees": pattern}):  # fmt: skip
        try:
            results.append(view(counts, **options))
        except NoSamples:
            results.append({})
    focus, ignore, rooted, callers, callees = results
    assert total(focus) == kept and total(ignore) == total(counts) - kept
    assert set(focus) | set(ignore) <= set(counts) and not set(focus) & set(ignore)  # whole stacks, unchanged
    assert all(focus[text] == counts[text] for text in focus)
    regex = re.compile(pattern)
    for result in (rooted, callers, callees):
        assert total(result) == kept
        assert all(regex.search(text.split(";")[0]) for text in result)  # rooted at a matching frame
    assert rooted == callees
