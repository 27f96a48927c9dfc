"""docs/api.md's pipeline example runs as written: record -> fold -> write -> export from Python, then
the fold and render pipelines on what it kept."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from conftest import REPO


def pipeline_example() -> str:
    text = (REPO / "docs" / "api.md").read_text().split("## The pipeline", 1)[1]
    return re.findall(r"```python\n(.*?)```", text, re.S)[0]


@pytest.mark.perf
def test_the_api_pipeline_example_runs_as_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {}
    exec(compile(pipeline_example(), "docs/api.md", "exec"), namespace)  # noqa: S102 (our own documentation)
    result = namespace["result"]
    assert result.profile.total > 0 and result.recording.seconds > 0  # type: ignore[attr-defined]
    assert result.written.svg == Path("busy.svg") and b"<svg" in Path("busy.svg").read_bytes()[:400]  # type: ignore[attr-defined]
    assert result.written.exports == (Path("busy.speedscope.json"),)  # type: ignore[attr-defined]
    assert json.loads(Path("busy.speedscope.json").read_text())["profiles"]
    assert "stacks reaching a thread root" in result.profile.metadata  # type: ignore[attr-defined]  # the report
    assert Path("busy.perf.data").is_file() and Path("again.folded.json").is_file()
    assert namespace["folded"].profile.total > 0  # type: ignore[attr-defined]
    assert b"<svg" in Path("again.svg").read_bytes()[:400]
    assert os.path.getsize("busy.folded") > 0
