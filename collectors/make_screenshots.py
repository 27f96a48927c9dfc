"""`make screenshots`: the graphs of the sample data as a reader sees them, in headless Chromium at 1400×1000.

    python -m collectors.make_screenshots [--out docs/screenshots] [--name after] [--offcpu FOLDED]

Folds and renders sample_data/ with the `flamegraph` command (on-CPU with the oneDNN preset, off-CPU,
and the oneDNN-vs-OpenBLAS diff of tests/golden/render/), then opens each SVG in Debian's chromium
(driven by selenium, as tests/test_browser.py does) with a 1400×1000 window and saves two
screenshots per graph: as it opens, and while the pointer rests on its widest frame under the root;
for the on-CPU graph a third: the callers and callees of --sandwich (malloc), opened from its
frame's context menu (NAME-oncpu-sandwich.png).
`--wakers` draws a folded file of `make offcpu WAKERS=--wakers` (out/mlp-offcpu.folded) as NAME-wakers.png too,
`--wall` one of `flamegraph record --wall --folded` as NAME-wall.png, and `--only GRAPH,...` shoots only
those graphs (oncpu, offcpu, diff, wakers, wall, memory).
`--memory-svg` shoots a graph of `make memory` (out/mlp-memory.svg) as NAME-memory.png.
`--offcpu` draws that folded file (e.g. out/mlp-offcpu.folded of `make offcpu`) instead of folding
the off-CPU sample, `--offcpu-svg` shows a graph already drawn (out/mlp-offcpu.svg). Writes
NAME-GRAPH.png and NAME-GRAPH-hover.png into --out, and the on-CPU graph with its source as the
subtitle into --example (docs/example.svg, the graph the docs link to).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SAMPLES = REPO / "sample_data"
GOLDEN = REPO / "tests" / "golden" / "render"
WINDOW = (1400, 1000)
ANNOTATE = os.environ.get("FLAMEGRAPH_ANNOTATE", "--annotate")  # --all: for a flamegraph without --annotate


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m collectors.make_screenshots", description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, default=REPO / "docs" / "screenshots")
    p.add_argument("--name", default="after", help="prefix of the PNG files (default after)")
    p.add_argument("--offcpu", type=Path, default=None, help="an off-CPU folded file to draw instead of the sample")
    p.add_argument("--offcpu-svg", type=Path, default=None, help="an off-CPU graph already drawn (make offcpu's)")
    p.add_argument("--wakers", type=Path, default=None, help="an off-CPU folded file with wakers (offcpu --wakers)")
    p.add_argument("--wall", type=Path, default=None, help="a wall-time folded file (record --wall --folded)")
    p.add_argument("--memory-svg", type=Path, default=None, help="a memory graph already drawn (make memory's)")
    p.add_argument("--only", default=None, help="shoot only these graphs (oncpu,offcpu,diff,wakers,wall,memory)")
    p.add_argument("--sandwich", default="malloc", help="the function whose callers and callees to show")
    p.add_argument("--keep", type=Path, default=None, help="also keep the SVGs in this directory")
    p.add_argument("--example", type=Path, default=REPO / "docs" / "example.svg", help="the on-CPU graph for the docs")
    return p.parse_args(argv)


def flamegraph(*args: str) -> None:
    command = [sys.executable, "-m", "flamegraph", *args]
    done = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"make screenshots: {' '.join(command)} failed:\n{done.stderr}")


def meta_options(sample: str) -> list[str]:
    """The capture facts of a sample (its JSON) as --meta options, as a recording would have them."""
    facts = json.loads((SAMPLES / f"{sample}.json").read_text())["capture"]
    return [f"--meta={key}={value}" for key, value in facts.items() if key != "event"]


def render_oncpu(folded: Path, out: Path, *extra: str) -> None:
    flamegraph(
        "render", str(folded), "--preset", "onednn", "--title", "MXNet MLP on MNIST: on-CPU", "--event", "cpu-clock",
        *meta_options("mlp-oncpu"), *extra, "-o", str(out),
    )  # fmt: skip


def render_graphs(work: Path, offcpu: Path | None, example: Path) -> dict[str, Path]:
    """oncpu, offcpu and diff SVGs drawn with the `flamegraph` command from the repository's data; the
    on-CPU one also as `example`, with its source as the subtitle."""
    on, off = work / "mlp-oncpu.folded", work / "mlp-offcpu.folded"
    flamegraph("fold", ANNOTATE, str(SAMPLES / "mlp-oncpu.perf.txt.gz"), "-o", str(on))
    graphs = {"oncpu": work / "oncpu.svg", "offcpu": work / "offcpu.svg", "diff": work / "diff.svg"}
    render_oncpu(on, graphs["oncpu"])
    render_oncpu(on, example, "--subtitle", "sample_data/mlp-oncpu.perf.txt.gz, training window")
    if offcpu is None:
        flamegraph("fold", "--offcpu", str(SAMPLES / "mlp-offcpu.perf.txt.gz"), "-o", str(off))
        extra = meta_options("mlp-offcpu")
    else:
        shutil.copyfile(offcpu, off)
        if offcpu.with_name(offcpu.name + ".json").exists():
            shutil.copyfile(offcpu.with_name(offcpu.name + ".json"), off.with_name(off.name + ".json"))
        extra = []
    flamegraph(
        "render", str(off), "--unit", "microseconds", "--event", "sched:sched_switch",
        "--title", "MXNet MLP on MNIST: off-CPU", *extra, "-o", str(graphs["offcpu"]),
    )  # fmt: skip
    flamegraph(
        "diff", str(GOLDEN / "mlp.folded"), str(GOLDEN / "mlp-openblas.folded"), "--normalize",
        "--title", "MXNet MLP: oneDNN (before) vs OpenBLAS (after)", "-o", str(graphs["diff"]),
    )  # fmt: skip
    return graphs


def render_wakers(folded: Path, work: Path, graph: str = "wakers") -> Path:
    """The off-CPU graph with wakers (`make offcpu WAKERS=--wakers`), or the wall-time graph of `record
    --wall` (`graph="wall"`), its capture facts from FOLDED.json."""
    copy = work / f"mlp-{graph}.folded"
    shutil.copyfile(folded, copy)
    if folded.with_name(folded.name + ".json").exists():
        shutil.copyfile(folded.with_name(folded.name + ".json"), copy.with_name(copy.name + ".json"))
    svg = work / f"{graph}.svg"
    title = "MXNet MLP on MNIST: " + ("off-CPU, and who woke each wait" if graph == "wakers" else "wall time")
    flamegraph("render", str(copy), "--unit", "microseconds", "--title", title, "-o", str(svg))
    return svg


@contextmanager
def chromium() -> Iterator[object]:
    """Headless Chromium with a WINDOW-sized viewport (tests/test_browser.py's set-up)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    binary, driver_path = shutil.which("chromium"), shutil.which("chromedriver")
    if not binary or not driver_path:
        raise SystemExit("make screenshots: needs Debian's chromium and chromium-driver (make system-deps)")
    profile = tempfile.mkdtemp(prefix="chromium-profile-")
    options = webdriver.ChromeOptions()
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                     f"--window-size={WINDOW[0]},{WINDOW[1]}", f"--user-data-dir={profile}"):  # fmt: skip
        options.add_argument(argument)
    options.binary_location = binary
    driver = webdriver.Chrome(options=options, service=Service(driver_path))
    try:
        inner = driver.execute_script("return [window.innerWidth, window.innerHeight]")
        if tuple(inner) != WINDOW:  # headless sizes the window, not the viewport: make the viewport WINDOW
            size = driver.get_window_size()
            driver.set_window_size(size["width"] + WINDOW[0] - inner[0], size["height"] + WINDOW[1] - inner[1])
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def widest_frame(driver) -> object:  # type: ignore[no-untyped-def]
    """The widest frame narrower than half the graph: where a reader points first, past the roots."""
    return driver.execute_script("""
        var best = null, bestW = -1, gs = document.querySelectorAll('#frames > g');
        var plot = gs[0].lastElementChild.getBoundingClientRect().width;
        for (var i = 1; i < gs.length; i++) {
          var r = gs[i].lastElementChild.getBoundingClientRect();
          if (r.width > bestW && r.width < plot / 2 && r.bottom < window.innerHeight) { best = gs[i]; bestW = r.width; }
        }
        return best || gs[0];""")


def compact(path: Path) -> None:
    """A 256-colour PNG (a third of the size; flame graphs have few colours), when Pillow is here
    (cairosvg, the `png` extra, brings it)."""
    try:
        from PIL import Image
    except ImportError:
        return
    with Image.open(path) as image:
        quantized = image.convert("RGB").quantize(colors=256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
    quantized.save(path, optimize=True)


def shoot(graphs: dict[str, Path], out: Path, name: str, function: str) -> list[Path]:
    from selenium.webdriver.common.action_chains import ActionChains

    out.mkdir(parents=True, exist_ok=True)
    written = []
    with chromium() as driver:
        for graph, path in graphs.items():
            driver.get(path.as_uri())  # type: ignore[attr-defined]
            plain = out / f"{name}-{graph}.png"
            driver.save_screenshot(str(plain))  # type: ignore[attr-defined]
            compact(plain)
            ActionChains(driver).move_to_element(widest_frame(driver)).perform()
            hover = out / f"{name}-{graph}-hover.png"
            driver.save_screenshot(str(hover))  # type: ignore[attr-defined]
            compact(hover)
            written += [plain, hover]
            if graph == "oncpu":
                written.append(sandwich(driver, out / f"{name}-{graph}-sandwich.png", function))
    return written


def sandwich(driver, path: Path, function: str) -> Path:  # type: ignore[no-untyped-def]
    """Right-click the widest frame of `function`, pick "Callers and callees", save the view."""
    from selenium.webdriver.common.action_chains import ActionChains

    target = driver.execute_script(
        """
        var best = null, name = arguments[0];
        document.querySelectorAll('#frames > g').forEach(function (g) {
          var t = g.firstElementChild.textContent, w = g.lastElementChild.getBoundingClientRect().width;
          if (t.slice(0, t.lastIndexOf(' (')) === name &&
              (!best || w > best.lastElementChild.getBoundingClientRect().width)) best = g;
        });
        return best;""",
        function,
    )
    if target is None:
        raise SystemExit(f"make screenshots: no frame {function!r} in the on-CPU graph (--sandwich)")
    ActionChains(driver).context_click(target).perform()
    driver.find_element("id", "menu-callers").click()
    driver.execute_script("window.scrollTo(0, 0)")
    driver.save_screenshot(str(path))
    compact(path)
    return path


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="flamegraph-screenshots-") as tmp:
        graphs = render_graphs(Path(tmp), args.offcpu, args.example)
        print(f"wrote {args.example}")
        if args.offcpu_svg is not None:
            graphs["offcpu"] = args.offcpu_svg.resolve()
        if args.wakers is not None:
            graphs["wakers"] = render_wakers(args.wakers, Path(tmp))
        if args.wall is not None:
            graphs["wall"] = render_wakers(args.wall, Path(tmp), "wall")
        if args.memory_svg is not None:
            graphs["memory"] = args.memory_svg.resolve()
        if args.only is not None:
            graphs = {graph: path for graph, path in graphs.items() if graph in args.only.split(",")}
        if args.keep is not None:
            args.keep.mkdir(parents=True, exist_ok=True)
            for graph, path in graphs.items():
                shutil.copyfile(path, args.keep / f"{args.name}-{graph}.svg")
        for path in shoot(graphs, args.out, args.name, args.sandwich):
            print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
