"""`convert` of input holding several events folds the one `fold` folds (the first, or -e/--event's), says
what it skipped, and writes the capture facts beside a .folded; -e naming an absent event is a usage error."""

from __future__ import annotations

import gzip
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO

SAMPLE = REPO / "sample_data" / "mlp-oncpu.perf.txt.gz"
OFFCPU_SAMPLE = REPO / "sample_data" / "mlp-offcpu.perf.txt.gz"


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "flamegraph", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=cwd)


def facts(folded: Path) -> dict[str, object]:
    return json.loads(folded.with_name(folded.name + ".json").read_bytes())  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """sched_switch records first, then cpu-clock samples (300 of them): `perf script` of both events."""
    oncpu = gzip.decompress(SAMPLE.read_bytes()).split(b"\n\n")[:300]
    path = tmp_path_factory.mktemp("mixed") / "mixed.perf.txt"
    path.write_bytes(gzip.decompress(OFFCPU_SAMPLE.read_bytes()) + b"\n" + b"\n\n".join(oncpu) + b"\n")
    return path


def test_convert_folds_the_first_event_and_names_the_skipped_one(mixed: Path, tmp_path: Path) -> None:
    out = tmp_path / "first.folded"
    done = run("convert", str(mixed), str(out))
    assert done.returncode == 0, done.stderr
    assert "note: folded event sched:sched_switch; skipped cpu-clock (300 samples): select one with -e/--event" in (
        done.stderr
    )
    assert "--per-event" not in done.stderr  # fold's option, not convert's
    assert facts(out)["unit"] == "microseconds"


def test_convert_event_option_picks_the_event_of_perf_input(mixed: Path, tmp_path: Path) -> None:
    out = tmp_path / "oncpu.folded"
    done = run("convert", str(mixed), str(out), "-e", "cpu-clock")
    assert done.returncode == 0, done.stderr
    assert re.search(r"note: folded event cpu-clock; skipped sched:sched_switch \([0-9,]+ samples\)\n", done.stderr)
    assert sum(int(line.rsplit(" ", 1)[1]) for line in out.read_text().splitlines()) == 300
    assert facts(out)["unit"] == "samples" and facts(out)["event"] == "cpu-clock"
    # the same stacks as `fold -e cpu-clock` (convert keeps threads and annotates: so does fold here)
    folded = run("fold", str(mixed), "-e", "cpu-clock", "--with-tid", "--annotate")
    assert folded.stdout == out.read_text()


@pytest.mark.parametrize("command", ["fold", "convert"])
def test_an_event_the_input_lacks_is_a_usage_error(mixed: Path, tmp_path: Path, command: str) -> None:
    args = [command, str(mixed), "-e", "cpu-clok"]
    done = run(*args, "-o", str(tmp_path / "x.folded")) if command == "fold" else run(*args, str(tmp_path / "x.svg"))
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        f"flamegraph: no event cpu-clok in {mixed} (it has cpu-clock, sched:sched_switch)"
    )
    assert "folded event cpu-clok" not in done.stderr and "no tid, ip" not in done.stderr
    assert not list(tmp_path.glob("x.*"))


def test_convert_to_folded_writes_the_capture_facts_diff_checks(tmp_path: Path) -> None:
    oncpu, offcpu = tmp_path / "on.folded", tmp_path / "off.folded"
    assert run("convert", str(SAMPLE), str(oncpu)).returncode == 0
    assert run("convert", str(OFFCPU_SAMPLE), str(offcpu)).returncode == 0
    assert facts(oncpu)["unit"] == "samples" and facts(oncpu)["event"] == "cpu-clock"
    assert facts(offcpu)["unit"] == "microseconds" and facts(offcpu)["event"] == "sched:sched_switch"
    diff = run("diff", str(oncpu), str(offcpu), "-o", str(tmp_path / "d.svg"))
    assert diff.returncode == 2 and "BEFORE counts samples and AFTER microseconds" in diff.stderr
    # folded in, folded out: the input's facts are carried, not replaced by a default unit
    copy = tmp_path / "copy.folded"
    assert run("convert", str(offcpu), str(copy)).returncode == 0
    assert facts(copy)["unit"] == "microseconds" and facts(copy)["window_us"] == facts(offcpu)["window_us"]
    relabelled = tmp_path / "relabelled.folded"
    assert run("convert", str(offcpu), str(relabelled), "--unit", "samples").returncode == 0
    assert facts(relabelled)["unit"] == "samples"  # the option wins over the file's facts


@pytest.mark.perf
def test_convert_of_perf_data_with_both_events_folds_what_fold_folds(tmp_path: Path) -> None:
    data = tmp_path / "multi.data"
    spin = "i=0; while [ $i -lt 30000 ]; do i=$((i+1)); done"
    work = f"{spin}; sleep 0.01; {spin}"
    # --switch-events as `flamegraph offcpu` records: without them a switch-in is in the recording only when
    # the task switched out is traced too, and the short run's few waits may all go unpaired
    record = ["perf", "record", "-q", "-e", "cpu-clock", "-e", "sched:sched_switch", "--switch-events", "-g",
              "-o", str(data)]  # fmt: skip
    done = subprocess.run([*record, "--", "sh", "-c", work], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    folded = run("fold", str(data), "-o", str(tmp_path / "f.folded"))
    assert folded.returncode == 0, folded.stderr
    chosen = facts(tmp_path / "f.folded")["event"]
    other = "sched:sched_switch" if chosen == "cpu-clock" else "cpu-clock"
    converted = run("convert", str(data), str(tmp_path / "c.folded"))
    assert converted.returncode == 0, converted.stderr
    assert facts(tmp_path / "c.folded")["event"] == chosen  # was sched:sched_switch whatever fold chose
    assert f"note: folded event {chosen}; skipped {other} (" in converted.stderr
    for event, unit in (("cpu-clock", "samples"), ("sched:sched_switch", "microseconds")):
        picked = run("convert", str(data), str(tmp_path / "p.folded"), "-e", event)
        assert picked.returncode == 0, picked.stderr
        assert (facts(tmp_path / "p.folded")["event"], facts(tmp_path / "p.folded")["unit"]) == (event, unit)
    typo = run("fold", str(data), "-e", "cpu-clok")
    assert typo.returncode == 2 and f"no event cpu-clok in {data} (it has cpu-clock, sched:sched_switch)" in typo.stderr


def test_an_event_present_whose_records_are_all_bad_is_not_called_absent(tmp_path: Path) -> None:
    """-e faults names an event the input holds, whose one record cannot be folded: the fold's own error
    (nothing folded, exit 3), not 'no event faults'."""
    text = tmp_path / "two.perf.txt"
    text.write_bytes(
        b"p 1 1.000000: 1 cpu-clock: \n\t 1565 leaf+0x25 (/p)\n\t 1279 main+0x1 (/p)\n\n"
        b"p 1 1.100000: 1 faults: \n\tzzz garbage\n\n"
    )
    done = run("fold", str(text), "-e", "faults")
    assert done.returncode == 3 and "no event faults" not in done.stderr, done.stderr
    assert "note: folded event faults; skipped cpu-clock (1 samples)\n" in done.stderr  # no advice to pick
    typo = run("fold", str(text), "-e", "fault")
    assert typo.returncode == 2 and "no event fault in" in typo.stderr and "(it has cpu-clock, faults)" in typo.stderr
