"""The suite on a user's machine: a clone without the reference corpus beside it, and only the
`dev` extra installed, still collects and passes; CI can demand the corpus and gets failures
instead of skips when it is missing."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from conftest import REPO
from helpers.shared import REQUIRE

# One test of each kind that reads the corpus: a plain one, one with an empty parameter list when
# the corpus is absent, one through the `shared` fixture, one fuzz replay of the perl reference.
CORPUS_TESTS = (
    "tests/test_fold_peer.py::test_the_whole_corpus_is_here",
    "tests/test_render_peer.py",
    "tests/test_fold_names.py::test_text_from_another_machine_keeps_its_dso_names",
    "tests/test_bench_tools.py::test_shifted_copies_fold_to_n_times_the_counts_with_new_frame_lines",
    "tests/test_fuzz.py::test_corpus_input_that_once_found_a_bug[compat_reference-arrows-with-empty-names]",
)
TESTS_RUN = 1 + 3 + 1 + 1 + 1  # test_render_peer: two tests and the empty peer-input list


def pytest_without_corpus(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if k not in (REQUIRE, "FLAMEGRAPH_PL")}
    environment.update(FLAMEGRAPH_SHARED=str(tmp_path / "no-such-corpus"), **env)  # as `make test` sets it
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rsf", "-p", "no:cacheprovider", "-p", "no:xdist", *CORPUS_TESTS],
        cwd=REPO, env=environment, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def test_without_the_corpus_its_tests_skip_with_one_reason(tmp_path: Path) -> None:
    run = pytest_without_corpus(tmp_path)
    assert run.returncode == 0, run.stdout[-3000:]
    assert re.search(rf"\b{TESTS_RUN} skipped in ", run.stdout), run.stdout[-3000:]
    reasons = set(re.findall(r"^SKIPPED \[\d+\] [^:]+:\d+: (.*)$", run.stdout, re.MULTILINE))
    missing = tmp_path / "no-such-corpus"
    assert reasons == {f"needs the reference corpus (FLAMEGRAPH_SHARED, default ../shared): "
                       f"no peer-tests/flamegraph-pl in {missing}"}, run.stdout[-3000:]  # fmt: skip


def test_ci_turns_the_skip_into_a_failure(tmp_path: Path) -> None:
    run = pytest_without_corpus(tmp_path, **{REQUIRE: "1"})
    assert run.returncode == 1, run.stdout[-3000:]
    assert re.search(rf"\b{TESTS_RUN} errors in ", run.stdout), run.stdout[-3000:]  # each fails in its set-up
    assert run.stdout.count(f"({REQUIRE}=1: it must be there)") >= TESTS_RUN, run.stdout[-3000:]


def test_ci_entry_point_requires_the_corpus() -> None:
    lines = (REPO / ".ci" / "run").read_text().splitlines()
    assert f"{REQUIRE}=1 make test" in lines
