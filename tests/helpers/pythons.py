"""Python interpreters other than the one running the tests (3.12, 3.13: perf trampolines), and py-spy.

`make test` runs on the Makefile's Python 3.11, so the Python-frames tests find 3.12+ in pyenv
($PYENV_ROOT or ~/.pyenv/versions/X.Y.*) or on PATH (pythonX.Y). py-spy 0.4 (PyPI `py-spy`, the peer
we compare with) is installed into a venv of its own under the test cache on first use. Where an
interpreter, py-spy or ptrace is missing the test skips with one reason; $FLAMEGRAPH_REQUIRE_SHARED=1
(CI, as for the peer corpus) turns that skip into a failure.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from .shared import REQUIRE, required

PYSPY_REQUIREMENT = "py-spy>=0.4,<0.5"


def skip_or_fail(reason: str) -> None:
    if required():
        pytest.fail(f"{reason} ({REQUIRE}=1: it must be there)", pytrace=False)
    pytest.skip(reason)


def find_python(release: str) -> str | None:
    """An interpreter of `release` ("3.12"): pyenv's newest, else pythonX.Y on PATH."""
    root = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv") / "versions"
    found = sorted(root.glob(f"{release}.*/bin/python{release}"), key=lambda p: [int(x) for x in
                   p.parts[-3].split(".") if x.isdigit()])  # fmt: skip
    if found:
        return str(found[-1])
    return shutil.which(f"python{release}")


def need_python(release: str) -> str:
    python = find_python(release)
    if python is None:
        skip_or_fail(f"needs a Python {release} interpreter (pyenv or python{release} on PATH)")
    assert python is not None
    return python


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "flamegraph-tests"


def need_pyspy(python: str) -> str:
    """py-spy 0.4's binary, installed with `python`'s pip into a venv of its own on first use."""
    venv = cache_root() / "py-spy-0.4"
    binary = venv / "bin" / "py-spy"
    if not binary.is_file():
        made = subprocess.run([python, "-m", "venv", "--clear", str(venv)], capture_output=True, text=True)
        pip = subprocess.run(
            [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", PYSPY_REQUIREMENT],
            capture_output=True,
            text=True,
        ) if made.returncode == 0 else made  # fmt: skip
        if pip.returncode != 0 or not binary.is_file():
            last = (pip.stderr.strip().splitlines() or ["?"])[-1]
            skip_or_fail(f"needs py-spy 0.4 from PyPI ({PYSPY_REQUIREMENT}): pip failed: {last}")
    return str(binary)


# What the Makefile's `make workload-venv` installs: MXNet 1.9.1 runs on 3.12 with numpy 1.26 (the oldest
# with 3.12 wheels; the trainer restores the aliases numpy 1.24 removed) and setuptools (for distutils).
MXNET_312_REQUIREMENTS = ("mxnet==1.9.1", "numpy==1.26.*", "setuptools")


def need_mxnet_python() -> str:
    """A Python 3.12 interpreter that imports MXNet: $WORKLOAD_PYTHON when it is one, else a venv of
    pyenv's 3.12 under the test cache with MXNET_312_REQUIREMENTS from PyPI (made on first use)."""
    given = os.environ.get("WORKLOAD_PYTHON")
    if given and _imports_mxnet(given):
        return given
    base = need_python("3.12")
    venv = cache_root() / "mxnet-3.12"
    python = venv / "bin" / "python"
    if not _imports_mxnet(str(python)):
        made = subprocess.run([base, "-m", "venv", "--clear", str(venv)], capture_output=True, text=True)
        pip = subprocess.run(
            [str(python), "-m", "pip", "install", "-q", *MXNET_312_REQUIREMENTS], capture_output=True, text=True
        ) if made.returncode == 0 else made  # fmt: skip
        if pip.returncode != 0 or not _imports_mxnet(str(python)):
            last = (pip.stderr.strip().splitlines() or ["?"])[-1]
            skip_or_fail(f"needs MXNet 1.9.1 on Python 3.12 ({' '.join(MXNET_312_REQUIREMENTS)} from PyPI): {last}")
    return str(python)


def _imports_mxnet(python: str) -> bool:
    """`python` is 3.12+ and finds MXNet's package (not imported: that takes seconds)."""
    probe = "import sys, importlib.util; sys.exit(sys.version_info < (3, 12) or not importlib.util.find_spec('mxnet'))"
    try:
        return subprocess.run([python, "-I", "-c", probe], capture_output=True, timeout=60).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False
