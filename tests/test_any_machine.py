"""The suite on a user's machine: a clone without the peer-test corpus beside it, and only the
`dev` extra installed, still collects and passes; CI can demand the corpus and gets failures
instead of skips when it is missing."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

from conftest import REPO
from helpers.extras import EXTRA
from helpers.shared import REQUIRE
from hypothesis import given, settings
from hypothesis import strategies as st

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
    assert reasons == {f"needs the peer-test corpus (FLAMEGRAPH_SHARED, default ../shared): "
                       f"no peer-tests/flamegraph-pl in {missing}"}, run.stdout[-3000:]  # fmt: skip


def test_ci_turns_the_skip_into_a_failure(tmp_path: Path) -> None:
    run = pytest_without_corpus(tmp_path, **{REQUIRE: "1"})
    assert run.returncode == 1, run.stdout[-3000:]
    assert re.search(rf"\b{TESTS_RUN} errors in ", run.stdout), run.stdout[-3000:]  # each fails in its set-up
    assert run.stdout.count(f"({REQUIRE}=1: it must be there)") >= TESTS_RUN, run.stdout[-3000:]


def test_ci_entry_point_requires_the_corpus() -> None:
    lines = (REPO / ".ci" / "run").read_text().splitlines()
    assert f"{REQUIRE}=1 make test" in lines


# -- only `pip install -e '.[dev]'`: every extra's modules absent -------------------------------------------
ABSENT = (*EXTRA, "dask", "atheris")  # and the fuzz extra, which not even `make venv` installs
HIDE_EXTRAS = f"""
import importlib.abc, importlib.machinery, sys
class Absent(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in {ABSENT!r}:
            return importlib.machinery.ModuleSpec(name, self)
    def create_module(self, spec):
        raise ModuleNotFoundError(f"No module named {{spec.name!r}}", name=spec.name)
    def exec_module(self, module):
        pass
sys.meta_path.insert(0, Absent())
import pytest
sys.exit(pytest.main(["--collect-only", "-q", "-p", "no:cacheprovider"]))
"""


def test_the_dev_extra_alone_collects_the_whole_suite() -> None:
    """numpy (collect), capstone (jit), dask (fleet), cairosvg (png) missing: no collection error."""
    run = subprocess.run([sys.executable, "-c", HIDE_EXTRAS], cwd=REPO, capture_output=True, text=True, timeout=300)
    summary = run.stdout.strip().splitlines()[-1]
    assert run.returncode == 0 and re.fullmatch(r"\d+ tests collected in [\d.]+s", summary), run.stdout[-3000:]


# -- the machine's speed --------------------------------------------------------------------------------------
@settings(max_examples=2)
@given(st.integers())
def test_a_property_is_not_timed(n: int) -> None:
    """Hypothesis' 200 ms deadline failed properties on a loaded machine (test_fold_properties,
    "Unreliable test timings"): tests/conftest.py's profile turns it off."""
    time.sleep(0.25)  # one example on a loaded two-core machine
