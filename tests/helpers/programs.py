"""C (and C++) test programs with a known answer, compiled for the test (-O1 -g): skipped with one reason without gcc;
and perf, found or skipped the same way."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest


def compile_c(directory: Path, name: str, source: str, *flags: str, language: str = "c") -> Path:
    """`source` built as `directory/name` (extra compiler flags such as -pthread); language "c++" with g++."""
    compiler = "g++" if language == "c++" else "gcc"
    found = shutil.which(compiler)
    if found is None:
        pytest.skip(f"{compiler} is not installed (apt-get install {compiler})")
    text, program = directory / f"{name}.{'cpp' if language == 'c++' else 'c'}", directory / name
    text.write_text(source)
    subprocess.run([found, "-O1", "-g", *flags, "-o", str(program), str(text)], check=True)
    return program


def need_perf() -> str:
    """perf's path; the test is skipped with one reason where it is not installed."""
    found = shutil.which("perf")
    if found is None:
        pytest.skip("perf is not installed")
    return found
