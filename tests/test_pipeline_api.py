"""docs/api.md's pipeline example runs as written: record -> fold -> write -> export from Python, then
the fold and render pipelines on what it kept."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from conftest import REPO

pytestmark = pytest.mark.parallel  # its perf tests were proven beside two busy loops (make test's parallel part)


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


def test_fold_and_draw_pipelines_without_perf(tmp_path: Path) -> None:
    """`fold` and `render` as library calls: the same bytes as the golden fold, FILE.json beside it, an SVG
    titled from it; a bad output is refused before anything is read."""
    from flamegraph.pipeline.draw import DrawInput, draw_svg, read_for_drawing
    from flamegraph.pipeline.perf_inputs import FoldRequest, fold_inputs
    from flamegraph.render import RenderOptions

    golden = REPO / "tests" / "golden" / "fold"
    notes: list[str] = []
    out = tmp_path / "out.folded"
    result = fold_inputs(FoldRequest([str(golden / "cxx-names.perf.txt")], output=out), notes.append)
    assert result.written == [out] and out.read_bytes() == (golden / "cxx-names.default.folded").read_bytes()
    assert json.loads((tmp_path / "out.folded.json").read_text())["unit"] == "nanoseconds"  # cpu-clock periods
    got = read_for_drawing(DrawInput([str(out)]))
    assert got.read.profile.counts == result.profile.counts and got.context is not None
    assert b"<svg" in draw_svg(got, RenderOptions(title=got.title("Flame Graph")))[:400]


def test_the_fold_pipeline_takes_a_fold_done_elsewhere(tmp_path: Path) -> None:
    """`fold --scheduler` hands the pipeline its cluster fold (`FoldRequest.cluster`): the pipeline calls it
    with the inputs and the options, and writes what it returns, without importing fleet/ itself."""
    from flamegraph.folding.options import FoldOptions
    from flamegraph.folding.stage import FoldResult, fold_perf
    from flamegraph.io.diagnostics import Diagnostics
    from flamegraph.pipeline.perf_inputs import FoldRequest, fold_inputs

    golden = REPO / "tests" / "golden" / "fold"
    seen: list[list[str]] = []

    def elsewhere(inputs: list[str], options: FoldOptions, diagnostics: Diagnostics) -> FoldResult:
        seen.append(list(inputs))
        return fold_perf(inputs, options, diagnostics)

    out = tmp_path / "out.folded"
    inputs = [str(golden / "cxx-names.perf.txt")]
    fold_inputs(FoldRequest(inputs, output=out, group_unknown=False, cluster=elsewhere), lambda line: None)
    assert seen == [inputs] and out.read_bytes() == (golden / "cxx-names.default.folded").read_bytes()


def test_outputs_are_checked_before_recording(tmp_path: Path) -> None:
    from flamegraph.io.diagnostics import FlamegraphError
    from flamegraph.pipeline.oncpu import OnCpuRequest, record_oncpu
    from flamegraph.pipeline.outputs import Outputs
    from flamegraph.record import RecordSpec, Status

    directory = tmp_path / "out.folded"
    directory.mkdir()  # an output that is a directory cannot be written
    request = OnCpuRequest(RecordSpec(command=("true",)), perf_data=tmp_path / "kept.data")
    with pytest.raises(FlamegraphError, match="is a directory"):
        record_oncpu(request, Outputs(folded=directory), Status())
    assert not (tmp_path / "kept.data").exists()  # nothing was recorded
