"""The fuzz targets (tests/fuzz/targets.py) on a short budget, and every input that ever found a bug.

Each target gets inputs shaped like real ones (tests/fuzz/strategies.py) and raw bytes. The budget
scales with $FUZZ_EXAMPLES (examples per target and strategy; `make fuzz` runs the long campaign
with atheris as well). A file in tests/fuzz/corpus/<target>/ is an input that once broke that
target: it is replayed here on every run.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable

import pytest
from helpers.extras import need
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.fuzz import strategies as gen
from tests.fuzz.targets import NEEDS_MODULE, NEEDS_SHARED, TARGETS, corpus_dir

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "400"))  # ~20 s of CPU for all targets
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
)


REPLAY_SECONDS = 60
# fold_text with --jobs 2 starts a process pool: fewer of those in the short run.
SHARE = {  # perl, typer, the CLI in process
    "fold_text": 0.5, "fold_file": 0.5, "compat_reference": 0.25, "command_line": 0.5, "convert_input": 0.25,
}  # fmt: skip


def marked(name: str, *rest: str) -> object:
    """A parameter of target `name`, marked `shared` when it needs the peer-test corpus."""
    return pytest.param(name, *rest, marks=pytest.mark.shared if name in NEEDS_SHARED else ())


NAMES = [marked(name) for name in sorted(TARGETS)]


def target(name: str) -> Callable[[bytes], None]:
    """Target `name`; the test skips when the target needs a module of an extra that is not installed."""
    if name in NEEDS_MODULE:
        need(NEEDS_MODULE[name])
    return TARGETS[name]


@pytest.mark.parametrize("name", NAMES)
def test_structured_inputs(name: str) -> None:
    fuzzed = target(name)

    @settings(FUZZ, max_examples=max(10, int(EXAMPLES * SHARE.get(name, 1))))
    @given(gen.INPUTS[name])
    def run(data: bytes) -> None:
        fuzzed(data)

    run()


@pytest.mark.parametrize("name", NAMES)
def test_raw_bytes(name: str) -> None:
    fuzzed = target(name)

    @settings(FUZZ, max_examples=max(10, EXAMPLES // 4))
    @given(st.binary(max_size=300))
    def run(data: bytes) -> None:
        fuzzed(data)

    run()


def corpus_files() -> list[object]:
    return [
        marked(name, file)
        for name, file in sorted(
            (name, path.name)
            for name in TARGETS
            if corpus_dir(name).is_dir()
            for path in corpus_dir(name).iterdir()
            if path.is_file()
        )
    ]


@pytest.mark.parametrize(("name", "file"), corpus_files())
def test_corpus_input_that_once_found_a_bug(name: str, file: str) -> None:
    """Some of these once hung (regex backtracking): a hang fails here after a minute instead of waiting."""

    def too_slow(signum: int, frame: object) -> None:
        raise TimeoutError(f"{name}/{file} ran for {REPLAY_SECONDS} s")

    previous = signal.signal(signal.SIGALRM, too_slow)
    signal.alarm(REPLAY_SECONDS)
    try:
        target(name)((corpus_dir(name) / file).read_bytes())
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def test_every_corpus_directory_belongs_to_a_target() -> None:
    root = corpus_dir("x").parent
    assert root.is_dir() and {p.name for p in root.iterdir() if p.is_dir()} <= set(TARGETS)
