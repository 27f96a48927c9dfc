"""The SVG in a real headless Chromium (Debian chromium + chromium-driver, driven by selenium):
hover, click-to-zoom, reset, search (Ctrl-F, Ctrl-I, nested matches counted once), URL state,
keyboard access, labels that never overflow, and responsiveness on a 60,000-stack graph.
One screenshot is kept under tests/artifacts/."""

from __future__ import annotations

import json
import re
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import REPO
from helpers.clients import chromium
from helpers.page import box, click, fill, frame, plot, press, text_of, type_search, viewport

from flamegraph.model import FoldedProfile
from flamegraph.render import RenderOptions, render_svg

pytestmark = [pytest.mark.browser, pytest.mark.parallel]  # proven beside two busy loops

ARTIFACTS = REPO / "tests" / "artifacts"
LONG = "mxnet::engine::ThreadedEnginePerDevice::PushToExecute(mxnet::engine::OprBlock*, bool)::{lambda()#4}"
PROFILE = {
    "main;compute;gemm": 40,
    "main;compute;relu": 10,
    "main;io;read": 12,
    f"main;io;{LONG}": 8,
    "main;io;gemm_wrapper;gemm": 10,  # a match nested in a match: counted once
    "other;idle": 20,
}


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    with chromium() as driver:  # the one way the suite starts headless Chromium
        yield driver


@pytest.fixture(scope="module")
def graph(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("svg") / "graph.svg"
    path.write_bytes(render_svg(FoldedProfile(dict(PROFILE), event="cpu-clock"), RenderOptions()))
    return path


def test_click_zooms_and_reset_restores(browser, graph: Path) -> None:  # type: ignore[no-untyped-def]
    browser.get(graph.as_uri())
    before = {name: box(browser, name) for name in ("compute", "gemm", "io", "main")}
    assert before["compute"]["w"] == pytest.approx(plot(browser) * 50 / 100, abs=0.5)
    click(browser, frame(browser, "compute"))
    assert box(browser, "compute")["w"] == pytest.approx(plot(browser), abs=0.5)  # its width becomes the full width
    assert box(browser, "gemm")["w"] == pytest.approx(plot(browser) * 40 / 50, abs=0.5)
    assert box(browser, "main")["w"] == pytest.approx(plot(browser), abs=0.5)  # ancestors span the view, faded
    assert "parent" in frame(browser, "main").get_attribute("class")
    assert box(browser, "io")["w"] == 0  # not under the zoomed frame: hidden
    assert re.search(r"[?&]x=0&y=\d+", browser.current_url)
    assert "hide" not in browser.find_element("id", "unzoom").get_attribute("class")
    ARTIFACTS.mkdir(exist_ok=True)
    browser.save_screenshot(str(ARTIFACTS / "browser-zoomed.png"))
    click(browser, browser.find_element("id", "unzoom"))
    for name, old in before.items():
        assert box(browser, name) == pytest.approx(old)
    assert "x=" not in browser.current_url and "hide" in browser.find_element("id", "unzoom").get_attribute("class")


def test_hover_shows_name_count_and_percentages(browser, graph: Path) -> None:  # type: ignore[no-untyped-def]
    from selenium.webdriver.common.action_chains import ActionChains

    browser.get(graph.as_uri())
    ActionChains(browser).move_to_element(frame(browser, "gemm")).perform()
    assert text_of(browser, "details") == "Function: gemm (40 samples, 40.00%; self 40 samples, 40.00%)"
    click(browser, frame(browser, "compute"))
    ActionChains(browser).move_to_element(frame(browser, "relu")).perform()
    assert text_of(browser, "details") == (
        "Function: relu (10 samples, 10.00%; self 10 samples, 10.00%) [20.00% of the zoomed frame]"
    )
    assert frame(browser, LONG).find_element("tag name", "title").get_attribute("textContent").startswith(LONG)


def test_search_box_filters_as_you_type_and_counts_nested_matches_once(browser, graph: Path) -> None:  # type: ignore[no-untyped-def]
    from selenium.webdriver.common.keys import Keys

    browser.get(graph.as_uri())
    box_ = browser.find_element("id", "search-input")
    # its examples come from this graph
    assert box_.is_displayed() and box_.get_attribute("placeholder").startswith("Search, e.g. gemm")
    original = fill(browser, "read")
    type_search(browser, "gem")
    magenta = "#e600e6"
    assert fill(browser, "gemm") == magenta and fill(browser, "gemm_wrapper") == magenta  # while typing
    assert text_of(browser, "matched").startswith("Matched: 50.00% · 3 frames")  # 40 + 10, not + the nested 10
    listed = browser.execute_script(
        "return [].map.call(document.querySelectorAll('#search-list li'), li => li.textContent)"
    )
    # each function once, nested frames counted once; each with its callers button
    assert listed == ["\u21c550.00%gemm", "\u21c510.00%gemm_wrapper"]
    assert fill(browser, "read") == original and fill(browser, "compute") != magenta
    assert "s=gem" in browser.current_url
    box_.send_keys(Keys.ENTER)  # next match: its details where the eye is
    assert text_of(browser, "details").startswith("Function: gemm (40 samples")
    box_.send_keys(Keys.ENTER)
    box_.send_keys(Keys.SHIFT, Keys.ENTER)  # previous
    assert text_of(browser, "details").startswith("Function: gemm (40 samples")
    assert "1 of 3" in text_of(browser, "matched")
    click(browser, frame(browser, "compute"))
    assert text_of(browser, "matched").startswith("Matched: 50.00% (80.00% of the zoomed frame)")
    browser.execute_script("document.querySelector('#search-list li').click()")  # one function exactly
    assert browser.execute_script("return flamegraph.state().term") == "^gemm$"
    box_.send_keys(Keys.ESCAPE)
    assert fill(browser, "gemm") != magenta and browser.find_element("id", "search-results").get_attribute("hidden")
    assert "s=" not in browser.current_url


def test_ctrl_f_opens_the_search_box_and_a_second_one_the_browsers_find(browser, graph: Path) -> None:  # type: ignore[no-untyped-def]
    browser.get(graph.as_uri())
    browser.execute_script(
        "window.prevented = [];"
        "window.addEventListener('keydown', e => e.key === 'f' && prevented.push(e.defaultPrevented));"
    )
    press(browser, "f", ctrl=True)
    assert browser.switch_to.active_element.get_attribute("id") == "search-input"
    press(browser, "f", ctrl=True)  # the box has the focus: this one is left to the browser
    assert browser.execute_script("return window.prevented") == [True, False]


def test_ctrl_i_toggles_case(browser, graph: Path) -> None:  # type: ignore[no-untyped-def]
    browser.get(graph.as_uri())
    browser.execute_script("flamegraph.search('GEMM')")
    assert text_of(browser, "matched").startswith("Matched: 0.00%")
    press(browser, "i", ctrl=True)
    assert browser.find_element("id", "ignorecase").get_attribute("aria-pressed") == "true"
    assert text_of(browser, "matched").startswith("Matched: 50.00%")
    assert "i=1" in browser.current_url


def test_url_state_reopens_the_view(browser, graph: Path) -> None:  # type: ignore[no-untyped-def]
    browser.get(graph.as_uri())
    click(browser, frame(browser, "io"))
    browser.execute_script("flamegraph.search('^read$|gemm')")
    url = browser.current_url
    browser.get("about:blank")
    browser.get(url)
    assert box(browser, "io")["w"] == pytest.approx(plot(browser), abs=0.5)
    assert box(browser, "read")["w"] == pytest.approx(plot(browser) * 12 / 30, abs=0.5)
    assert text_of(browser, "matched").startswith("Matched: 62.00% (73.33% of the zoomed frame)")
    assert browser.find_element("id", "search-input").get_attribute("value") == "^read$|gemm"


def test_keyboard_reaches_and_zooms_frames(browser, graph: Path) -> None:  # type: ignore[no-untyped-def]
    from selenium.webdriver.common.keys import Keys

    browser.get(graph.as_uri())
    for _ in range(6):  # Tab from the page start reaches the frames
        press(browser, Keys.TAB)
        if browser.execute_script("return document.activeElement.parentNode.id") == "frames":
            break
    active = browser.switch_to.active_element
    assert active.find_element("tag name", "title").get_attribute("textContent").startswith("all (100 samples")
    press(browser, Keys.ARROW_UP)  # towards the leaves: main
    press(browser, Keys.ARROW_UP)  # compute
    press(browser, Keys.ARROW_RIGHT)  # io
    assert text_of(browser, "details").startswith("Function: io (30 samples")
    press(browser, Keys.ENTER)
    assert box(browser, "io")["w"] == pytest.approx(plot(browser), abs=0.5)
    press(browser, Keys.ARROW_DOWN)  # back to main
    assert text_of(browser, "details").startswith("Function: main")
    press(browser, Keys.ESCAPE)
    assert box(browser, "io")["w"] == pytest.approx(plot(browser) * 30 / 100, abs=0.5)
    assert frame(browser, "gemm").accessible_name == "gemm (40 samples, 40.00%; self 40 samples, 40.00%)"
    assert frame(browser, "gemm").get_attribute("role") == "button"


def overflowing_labels(driver) -> list:  # type: ignore[no-untyped-def,type-arg]
    """Labels whose text runs past the right edge of the frame under them."""
    return driver.execute_script("""
        var bad = [];
        document.querySelectorAll('#labels text').forEach(function (t) {
          var b = t.getBoundingClientRect();
          var under = document.elementsFromPoint(b.left + 1, b.top + b.height / 2)
              .filter(function (e) { return e.tagName === 'rect' && e.parentNode.parentNode.id === 'frames'; })[0];
          if (!under) { bad.push([t.textContent, 'no frame']); return; }
          var r = under.getBoundingClientRect();
          if (b.right > r.right + 0.5) bad.push([t.textContent, b.right, r.right]);
        });
        return bad;""")


def test_labels_never_overflow_their_frames(browser, graph: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    browser.get(graph.as_uri())
    assert overflowing_labels(browser) == []
    labels = browser.execute_script("return [].map.call(document.querySelectorAll('#labels text'), t => t.textContent)")
    assert any(label.startswith("mxnet::") and label.endswith("..") for label in labels)
    click(browser, frame(browser, "io"))
    assert overflowing_labels(browser) == []
    static = tmp_path / "static.svg"  # the labels computed in Python, as a viewer without JavaScript shows them
    static.write_bytes(re.sub(rb"<script.*?</script>", b"", graph.read_bytes(), flags=re.S))
    browser.get(static.as_uri())
    assert overflowing_labels(browser) == []


def test_deep_zoom_on_a_large_total_keeps_exact_geometry(browser, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # Off-CPU microseconds: 5 units far along a 5.7e9 total. Single-precision SVG coordinates
    # would lose them at their absolute offset; the zoom moves the subtree to 0.
    counts = {"a;b": 5e9, "a;c;d": 3, "a;c;e": 2, "z": 7e8}
    path = tmp_path / "offcpu.svg"
    path.write_bytes(render_svg(FoldedProfile(counts, unit="microseconds"), RenderOptions(min_width="0")))
    browser.get(path.as_uri())
    assert box(browser, "c")["w"] < 0.001  # too narrow to click: zoom by script
    browser.execute_script(
        "var all = document.querySelectorAll('#frames > g');"
        "flamegraph.zoom([].findIndex.call(all, g => g.firstElementChild.textContent.startsWith('c (')))"
    )
    assert box(browser, "c") == pytest.approx({"x": 10, "w": plot(browser)}, abs=0.5)
    assert box(browser, "d") == pytest.approx({"x": 10, "w": plot(browser) * 3 / 5}, abs=0.5)
    assert box(browser, "e") == pytest.approx({"x": 10 + plot(browser) * 3 / 5, "w": plot(browser) * 2 / 5}, abs=0.5)
    assert box(browser, "a")["w"] == pytest.approx(plot(browser), abs=0.5)
    assert box(browser, "b")["w"] == 0 and box(browser, "z")["w"] == 0  # hidden
    browser.execute_script("flamegraph.resetZoom()")
    assert box(browser, "b")["w"] == pytest.approx(plot(browser) * 5e9 / 5.7e9, abs=0.5)


@pytest.mark.serial  # it bounds the page's response time
def test_large_graph_stays_responsive(browser, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    sys.path.insert(0, str(REPO / "bench"))
    from bench_render import synthesize

    counts = synthesize(60_000)
    path = tmp_path / "large.svg"
    path.write_bytes(render_svg(FoldedProfile(dict(counts)), RenderOptions()))
    start = time.perf_counter()
    browser.get(path.as_uri())
    load = time.perf_counter() - start
    frames = browser.execute_script("return flamegraph.state().frames")
    timing = """
        var done = arguments[arguments.length - 1], t = performance.now();
        %s;
        requestAnimationFrame(function () { requestAnimationFrame(function () { done(performance.now() - t); }); });"""
    zoom = browser.execute_async_script(timing % "flamegraph.zoom(1)")
    search = browser.execute_async_script(timing % "flamegraph.search('gemm|sgd')")
    matched = text_of(browser, "matched")
    reset = browser.execute_async_script(timing % "flamegraph.resetZoom()")
    figures = {"stacks": len(counts), "frames": frames, "svg_bytes": path.stat().st_size, "load_s": round(load, 3),
               "zoom_ms": round(zoom, 1), "search_ms": round(search, 1), "reset_ms": round(reset, 1)}  # fmt: skip
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "browser-large-graph.json").write_text(json.dumps(figures, indent=1))
    print(figures)
    assert frames > 5_000 and matched.startswith("Matched: ")
    assert zoom < 500 and search < 500 and reset < 500, figures


# --- the page as a person meets it: a 1400×1000 window ---------------------------------------


SAMPLE = REPO / "sample_data" / "mlp-oncpu.perf.txt.gz"
SAMPLE_FACTS = json.loads(SAMPLE.with_name("mlp-oncpu.json").read_text())["capture"]


def sample_graph(path: Path, facts: bool = True) -> Path:
    """The MLP's on-CPU sample as `record` draws it: the oneDNN preset and (`facts`) its capture facts."""
    from flamegraph.folding.perf import FoldOptions
    from flamegraph.folding.stage import fold_perf
    from flamegraph.io.diagnostics import Diagnostics

    profile = fold_perf([str(SAMPLE)], FoldOptions.with_all(), Diagnostics(echo=False)).profile
    if facts:
        profile.metadata = {key: str(value) for key, value in SAMPLE_FACTS.items() if key != "event"}
        profile.metadata.update({f"[op] operator {i}": f"{i * 7} samples ({i} %)" for i in range(12)})  # --mxnet
    path.write_bytes(render_svg(profile, RenderOptions(title="MXNet MLP: on-CPU", subtitle="cpu-clock, 499 Hz",
                                                       preset="onednn")))  # fmt: skip
    return path


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return sample_graph(tmp_path_factory.mktemp("svg") / "recorded.svg")


def in_view(driver, element) -> bool:  # type: ignore[no-untyped-def]
    return driver.execute_script(
        "var b = arguments[0].getBoundingClientRect();"
        "return b.width > 0 && b.top >= 0 && b.bottom <= window.innerHeight"
        " && b.left >= 0 && b.right <= window.innerWidth;",
        element,
    )


def test_details_are_on_screen_after_hovering_without_scrolling(browser, recorded: Path) -> None:  # type: ignore[no-untyped-def]
    from selenium.webdriver.common.action_chains import ActionChains

    viewport(browser)
    browser.get(recorded.as_uri())
    target = frame(browser, "clone3")  # under the engine threads, two rows above the root
    assert in_view(browser, target.find_element("tag name", "rect"))  # the graph is on the first screen
    ActionChains(browser).move_to_element(target).perform()
    assert text_of(browser, "details").startswith("Function: clone3 (")
    assert in_view(browser, browser.find_element("id", "details"))
    assert browser.execute_script("return window.scrollY") == 0
    ARTIFACTS.mkdir(exist_ok=True)
    browser.save_screenshot(str(ARTIFACTS / "browser-1400x1000-hover.png"))


def test_capture_facts_fold_into_a_block_the_reader_opens(browser, recorded: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    viewport(browser)
    browser.get(recorded.as_uri())
    facts = browser.find_element("id", "facts")
    assert not facts.is_displayed()
    page_height = "return document.documentElement.getBoundingClientRect().height"
    height = browser.execute_script(page_height)
    browser.get(sample_graph(tmp_path / "bare.svg", facts=False).as_uri())
    assert height <= browser.execute_script(page_height) + 1  # the folded facts take no room
    browser.get(recorded.as_uri())
    facts = browser.find_element("id", "facts")
    click(browser, browser.find_element("id", "facts-toggle"))
    assert facts.is_displayed() and in_view(browser, facts.find_element("tag name", "text"))
    assert f"command: {SAMPLE_FACTS['command']}" in facts.text
    from selenium.webdriver.common.keys import Keys

    press(browser, Keys.ESCAPE)  # Escape closes it
    assert not facts.is_displayed()
    static = tmp_path / "static.svg"  # no script: every fact is there, below the graph
    static.write_bytes(re.sub(rb"<script.*?</script>", b"", recorded.read_bytes(), flags=re.S))
    browser.get(static.as_uri())
    shown = browser.find_element("id", "facts")
    assert shown.is_displayed() and "[op] operator 11: 77 samples" in shown.text


def test_zoom_keeps_the_zoomed_frame_and_its_ancestors_in_view(browser, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    deep = ";".join(f"d{i}" for i in range(80))  # 80 rows: the root row is below the first screen
    path = tmp_path / "deep.svg"
    path.write_bytes(render_svg(FoldedProfile({f"main;{deep}": 10, "main;shallow;leaf": 10}), RenderOptions()))
    viewport(browser)
    browser.get(path.as_uri())
    # A tall graph opens scrolled to its roots (the widest frames), not to the tops of its towers.
    for name in ("all", "main", "shallow", "leaf", "d0"):
        assert in_view(browser, frame(browser, name).find_element("tag name", "rect")), name
    assert browser.execute_script("return window.scrollY") > 0
    browser.execute_script("window.scrollTo(0, 0)")  # the title and the search box are one scroll up
    assert in_view(browser, browser.find_element("id", "search-input"))
    browser.execute_script(
        "var all = document.querySelectorAll('#frames > g');"
        "flamegraph.zoom([].findIndex.call(all, g => g.firstElementChild.textContent.startsWith('shallow (')))"
    )
    for name in ("leaf", "shallow", "main", "all"):  # the zoomed frame, what is above it and below it
        assert in_view(browser, frame(browser, name).find_element("tag name", "rect")), name
    assert browser.execute_script("return window.scrollY") == 0
    browser.execute_script("flamegraph.resetZoom()")
    assert not in_view(browser, frame(browser, "shallow").find_element("tag name", "rect"))


def test_frames_container_is_no_tab_stop_and_labels_are_readable(browser, recorded: Path) -> None:  # type: ignore[no-untyped-def]
    from selenium.webdriver.common.keys import Keys

    browser.get(recorded.as_uri())
    stops = []
    for _ in range(4):
        press(browser, Keys.TAB)
        stops.append(browser.execute_script("var a = document.activeElement; return a.id || a.parentNode.id"))
    assert stops[:2] == ["facts-toggle", "frames"]  # the toggle, then the root frame itself
    assert "view" not in stops and stops.count("frames") == 1
    labels = browser.execute_script("return [].map.call(document.querySelectorAll('#labels text'), t => t.textContent)")
    cut = [label for label in labels if label.endswith("..")]
    assert cut and all(len(label) >= 3 + 2 for label in cut), [label for label in cut if len(label) < 5]


def test_self_counts_get_their_unit_back(browser, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """The file says a count's unit once per title, with the total ("; self 4, 20.00%"); the page
    spells the self count out as the total is ("1 sample", "4 samples"). Sizes keep their own units."""
    from helpers.svg import frames

    titles = "return [].map.call(document.querySelectorAll('#frames > g > title'), t => t.textContent);"
    counts = {"main": 1, "main;work": 4, "main;work;leaf": 5, "other;x": 10}
    page = tmp_path / "counts.svg"
    page.write_bytes(render_svg(FoldedProfile(counts), RenderOptions()))
    written = {f.name: f.title for f in frames(page.read_bytes())}
    assert written["main"] == "main (10 samples, 50.00%; self 1, 5.00%)"
    assert written["work"] == "work (9 samples, 45.00%; self 4, 20.00%)"
    browser.get(page.as_uri())
    shown = {t[: t.rfind(" (")]: t for t in browser.execute_script(titles)}
    assert shown["main"] == "main (10 samples, 50.00%; self 1 sample, 5.00%)"
    assert shown["work"] == "work (9 samples, 45.00%; self 4 samples, 20.00%)"
    assert shown["leaf"] == "leaf (5 samples, 25.00%; self 5 samples, 25.00%)"
    sizes = tmp_path / "bytes.svg"
    sizes.write_bytes(render_svg(FoldedProfile({"main": 1536, "main;alloc": 4096}, unit="bytes"), RenderOptions()))
    assert frames(sizes.read_bytes())[1].title == "main (5.50 KiB, 100.00%; self 1.50 KiB, 27.27%)"
    browser.get(sizes.as_uri())
    assert browser.execute_script(titles)[1] == "main (5.50 KiB, 100.00%; self 1.50 KiB, 27.27%)"


def test_a_diffs_deep_blue_labels_stay_white_when_zoomed(browser, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """newcomer10 a-F10: the page relabels on zoom; its rule for white text is color.label_fill's, fill by
    fill over the whole diff scale, and the label on the deepest blue reads white in the browser."""
    from flamegraph.color import label_fill
    from flamegraph.render import render_diff

    before = {"main;compute;gemm": 50, "main;compute;relu": 10, "main;io;read": 20}
    after = {"main;compute;gemm": 10, "main;compute;relu": 12, "main;io;read": 25}
    path = tmp_path / "diff.svg"
    path.write_bytes(render_diff(FoldedProfile(before), FoldedProfile(after), RenderOptions()))
    browser.get(path.as_uri())
    assert fill(browser, "gemm") == "#0000ff"  # -40: the scale's end
    script = """
        const out = [];
        for (const t of document.querySelectorAll('#labels text'))
            out.push([t.textContent, t.getAttribute('class') || '', getComputedStyle(t).fill]);
        return out;"""
    white, black = "rgb(255, 255, 255)", "rgb(0, 0, 0)"
    for zoom in (None, "compute"):
        if zoom:
            click(browser, frame(browser, zoom))
        labels = {name: (cls, colour) for name, cls, colour in browser.execute_script(script)}
        assert labels["gemm"] == ("light", white), (zoom, labels)
        assert labels["relu"][1] == black and labels["compute"][1] == black, (zoom, labels)
    source = (REPO / "flamegraph" / "render" / "assets" / "flamegraph.js").read_text()
    found = re.search(r"\n  function lightText\(fill\) \{\n.*?\n  \}\n", source, re.S)
    assert found is not None
    fills = ["#ffffff", *(f"#ff{f:02x}{f:02x}" for f in range(211)), *(f"#{f:02x}{f:02x}ff" for f in range(211))]
    in_page = browser.execute_script(found.group(0) + "return arguments[0].map(lightText);", fills)
    assert in_page == [label_fill(one) is not None for one in fills]
