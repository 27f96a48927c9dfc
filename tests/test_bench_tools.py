"""The benchmark's own pieces: the address-shifted input and how two folded outputs are compared."""

from __future__ import annotations

import gzip
import sys
from pathlib import Path

from bench.bench_fold import compare_totals, labelled, short_check
from bench.make_inputs import FRAME_ADDRESS, shift_copies
from flamegraph import Diagnostics, FoldOptions, fold_perf


def _fold(path: Path) -> dict[str, float]:
    return dict(fold_perf([str(path)], FoldOptions(), Diagnostics(echo=False)).profile.counts)


def test_shifted_copies_fold_to_n_times_the_counts_with_new_frame_lines(shared: Path, tmp_path: Path) -> None:
    text = gzip.decompress((shared / "peer-tests" / "flamegraph-pl" / "example-perf-stacks.txt.gz").read_bytes())
    copies = shift_copies(text, 3)
    (tmp_path / "one.txt").write_bytes(text)
    (tmp_path / "three.txt").write_bytes(b"".join(copies))
    one, three = _fold(tmp_path / "one.txt"), _fold(tmp_path / "three.txt")
    assert three == {stack: 3 * count for stack, count in one.items()}
    addresses = [{m[2] for m in FRAME_ADDRESS.finditer(copy)} for copy in copies]
    assert addresses[0] and not addresses[0] & addresses[1] and not addresses[1] & addresses[2]


def test_compare_totals_names_the_difference() -> None:
    ours = b"a;b 2\na;c 1\nperl 5\n"
    assert compare_totals(b"a;b 2\na;c 1\n", b"a;c 1\na;b 2\n") == "same 2 stacks and totals (3)"
    kept = compare_totals(ours, b"a;b 2\na;c 1\n")
    assert kept == "same 2 stacks and totals (3); ours also keeps 5 in records without frames"
    assert short_check(f"inferno vs ours: {kept}") == "= inferno (ours also keeps the records without frames)"
    renamed = compare_totals(b"a;op() 3\n", b"a;op 3\n")
    assert renamed == "same total (3); 2 of 2 stacks differ in names"
    assert compare_totals(b"a;b 3\n", b"a;b 2\n").startswith("DIFFERENT: totals 3 (ours) vs 2")
    assert short_check("inferno vs ours: DIFFERENT: totals 3 (ours) vs 2; 1 stacks differ").startswith("**")


def test_labelled_inputs() -> None:
    assert labelled("fp, real=/c/fp.perf.txt") == ("fp, real", Path("/c/fp.perf.txt"))
    assert labelled("/c/fp.perf.txt") == ("fp.perf.txt", Path("/c/fp.perf.txt"))


def test_end_to_end_case_reports_both_svg_sizes_and_their_ratio(tmp_path: Path) -> None:
    from bench.bench_fold import INFERNO, Bench, Case, Contender

    ours_svg, inferno_svg = tmp_path / "ours.svg", tmp_path / "inferno.svg"
    ours_svg.write_bytes(b"x" * 600_000)
    inferno_svg.write_bytes(b"x" * 400_000)
    # ours as `flamegraph convert IN OUT`: the check draws it again with --no-threads before OUT (a stand-in
    # that writes 500 kB when given --no-threads, as grouping by process name makes the page smaller)
    draw = "import sys; open(sys.argv[-1], 'wb').write(b'x' * (500_000 if '--no-threads' in sys.argv else 600_000))"
    ours = Contender("ours", [sys.executable, "-c", draw, str(ours_svg)], svg=ours_svg)
    contenders = [ours, Contender(INFERNO, [], svg=inferno_svg)]
    case = Case("t -> SVG", 1, 1, contenders, end_to_end=True)
    bench = Bench(None, None, tmp_path, tmp_path, False, False)
    assert bench.check(case) == [
        "ours SVG: 0.60 MB", "inferno SVG: 0.40 MB", "ours --no-threads SVG: 0.50 MB",
        "SVG ours / inferno: 1.50", "SVG ours --no-threads / inferno: 1.25",
    ]  # fmt: skip


def test_offcpu_cost_compares_each_recording_with_its_own_rounds_runs() -> None:
    from bench.offcpu_cost import Run, table

    def round_(none: float, offcpu: float, wakers: float) -> dict[str, Run]:  # samples/s; CPU s = 10 000 / rate
        return {mode: Run(mode, rate, 1e4 / rate, mb, 10.0) for mode, rate, mb in
                (("none", none, 0.0), ("offcpu", offcpu, 50.0), ("wakers", wakers, 200.0))}  # fmt: skip

    rows = table([round_(1000, 900, 800), round_(500, 500, 250), round_(2000, 1900, 1600)])
    assert rows[0].startswith("| mode | throughput vs none |") and len(rows) == 4  # no wall runs: no row
    offcpu, wakers = rows[2].split(" | "), rows[3].split(" | ")
    assert offcpu[1] == "-5.0 % (-10.0 %..+0.0 %, n=3)"  # the median of the three pairs, not of the rates
    assert wakers[1] == "-20.0 % (-50.0 %..-20.0 %, n=3)"
    assert wakers[3] == "x1.19 (x1.12..x2.00, n=3)"  # CPU time against offcpu's in the same round
    assert wakers[5] == "20.0 (20.0..20.0, n=3)" and wakers[6] == "x4.00 (x4.00..x4.00, n=3)"  # MB/s
    assert offcpu[3] == "-"  # offcpu against itself: nothing


def test_memory_cost_compares_each_probed_run_with_its_own_rounds_unprobed_run() -> None:
    from bench.memory_cost import NONE, Mode, Run, per_call, table

    ten = Mode(10)  # a sample every 10 bytes on average, at most the default rate

    def round_(base_us: float, probed_us: float, rate: float, probed_rate: float) -> dict[tuple[str, Mode], Run]:
        return {("c", NONE): Run("c", NONE, 0.01, per_call_us=base_us),
                ("c", ten): Run("c", ten, 0.5, per_call_us=probed_us, records=20_000, lost=0.0, mb=300.0),
                ("mlp", NONE): Run("mlp", NONE, 3.0, rate=rate),
                ("mlp", ten): Run("mlp", ten, 6.0, rate=probed_rate, records=60_000, lost=0.25, mb=1000.0)}  # fmt: skip

    rows = table([round_(0.01, 1.5, 1000, 500), round_(0.02, 1.6, 2000, 1500), round_(0.01, 2.0, 1000, 800)])
    assert rows[0].startswith("| workload | mode | CPU per call |") and len(rows) == 6
    c10, mlp10 = rows[3].split(" | "), rows[5].split(" | ")
    assert c10[1] == "every 10 B, ≤ 1,000/s" and c10[2] == "1600.0 ns (1500.0 ns..2000.0 ns, n=3)"
    assert c10[3] == "+14900.0 % (+7900.0 %..+19900.0 %, n=3)"  # each against the unprobed run of its own round
    assert mlp10[3] == "-25.0 % throughput (-50.0 % throughput..-20.0 % throughput, n=3)"
    assert mlp10[4] == "6.00 s (6.00 s..6.00 s, n=3) = +100.0 % (+100.0 %..+100.0 %, n=3)"
    assert mlp10[6] == "25 % (25 %..25 %, n=3)"
    assert per_call(["noise", "calls 200000 cpu_ns 300000000"], "p") == 1.5
