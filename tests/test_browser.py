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

from flamegraph.model import FoldedProfile
from flamegraph.render import RenderOptions, render_svg

pytestmark = pytest.mark.browser

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
PLOT = 1180  # 1200 px minus the margins


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    with chromium() as driver:  # the one way the suite starts headless Chromium
        yield driver


@pytest.fixture(scope="module")
def graph(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("svg") / "graph.svg"
    path.write_bytes(render_svg(FoldedProfile(dict(PROFILE), event="cpu-clock"), RenderOptions()))
    return path


def frame(driver, name: str):  # type: ignore[no-untyped-def]
    """The <g> of the first frame called `name`."""
    from selenium.webdriver.common.by import By

    for element in driver.find_elements(By.CSS_SELECTOR, "#frames > g"):
        title = element.find_element(By.TAG_NAME, "title").get_attribute("textContent")
        if title.rsplit(" (", 1)[0] == name:
            return element
    raise AssertionError(f"no frame {name}")


def box(driver, name: str) -> dict:  # type: ignore[no-untyped-def,type-arg]
    rect = frame(driver, name).find_element("tag name", "rect")
    return driver.execute_script("var b = arguments[0].getBoundingClientRect(); return {x: b.x, w: b.width};", rect)


def text_of(driver, element_id: str) -> str:  # type: ignore[no-untyped-def]
    return driver.execute_script(f"return document.getElementById('{element_id}').textContent;")


def fill(driver, name: str) -> str:  # type: ignore[no-untyped-def]
    return frame(driver, name).find_element("tag name", "rect").get_attribute("fill")


def click(driver, element) -> None:  # type: ignore[no-untyped-def]
    from selenium.webdriver.common.action_chains import ActionChains

    ActionChains(driver).move_to_element(element).click().perform()


def press(driver, *keys: str, ctrl: bool = False) -> None:  # type: ignore[no-untyped-def]
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    chain = ActionChains(driver)
    if ctrl:
        chain.key_down(Keys.CONTROL)
    for key in keys:
        chain.send_keys(key)
    if ctrl:
        chain.key_up(Keys.CONTROL)
    chain.perform()


def test_click_zooms_and_reset_restores(browser, graph: Path) -> None:  # type: ignore[no-untyped-def]
    browser.get(graph.as_uri())
    before = {name: box(browser, name) for name in ("compute", "gemm", "io", "main")}
    assert before["compute"]["w"] == pytest.approx(PLOT * 50 / 100, abs=0.5)
    click(browser, frame(browser, "compute"))
    assert box(browser, "compute")["w"] == pytest.approx(PLOT, abs=0.5)  # its width becomes the full width
    assert box(browser, "gemm")["w"] == pytest.approx(PLOT * 40 / 50, abs=0.5)
    assert box(browser, "main")["w"] == pytest.approx(PLOT, abs=0.5)  # ancestors span the view, faded
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
    assert text_of(browser, "details") == "Function: gemm (40 samples, 40.00%)"
    click(browser, frame(browser, "compute"))
    ActionChains(browser).move_to_element(frame(browser, "relu")).perform()
    assert text_of(browser, "details") == "Function: relu (10 samples, 10.00%) [20.00% of the zoomed frame]"
    assert frame(browser, LONG).find_element("tag name", "title").get_attribute("textContent").startswith(LONG)


def test_search_highlights_and_counts_nested_matches_once(browser, graph: Path) -> None:  # type: ignore[no-untyped-def]
    browser.get(graph.as_uri())
    original = fill(browser, "read")
    press(browser, "f", ctrl=True)
    alert = browser.switch_to.alert
    alert.send_keys("gemm")
    alert.accept()
    assert text_of(browser, "matched") == "Matched: 50.00%"  # 40 + 10, not + the nested 10
    magenta = "#e600e6"
    assert fill(browser, "gemm") == magenta and fill(browser, "gemm_wrapper") == magenta
    assert fill(browser, "read") == original and fill(browser, "compute") != magenta
    assert "s=gemm" in browser.current_url
    click(browser, frame(browser, "compute"))
    assert text_of(browser, "matched") == "Matched: 50.00% (80.00% of the zoomed frame)"
    click(browser, browser.find_element("id", "search"))  # now "Reset Search"
    assert fill(browser, "gemm") != magenta
    assert "hide" in browser.find_element("id", "matched").get_attribute("class")
    assert "s=" not in browser.current_url


def test_ctrl_i_toggles_case(browser, graph: Path) -> None:  # type: ignore[no-untyped-def]
    browser.get(graph.as_uri())
    browser.execute_script("flamegraph.search('GEMM')")
    assert text_of(browser, "matched") == "Matched: 0.00%"
    press(browser, "i", ctrl=True)
    assert "show" in browser.find_element("id", "ignorecase").get_attribute("class")
    assert text_of(browser, "matched") == "Matched: 50.00%"
    assert "i=1" in browser.current_url


def test_url_state_reopens_the_view(browser, graph: Path) -> None:  # type: ignore[no-untyped-def]
    browser.get(graph.as_uri())
    click(browser, frame(browser, "io"))
    browser.execute_script("flamegraph.search('^read$|gemm')")
    url = browser.current_url
    browser.get("about:blank")
    browser.get(url)
    assert box(browser, "io")["w"] == pytest.approx(PLOT, abs=0.5)
    assert box(browser, "read")["w"] == pytest.approx(PLOT * 12 / 30, abs=0.5)
    assert text_of(browser, "matched") == "Matched: 62.00% (73.33% of the zoomed frame)"


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
    assert box(browser, "io")["w"] == pytest.approx(PLOT, abs=0.5)
    press(browser, Keys.ARROW_DOWN)  # back to main
    assert text_of(browser, "details").startswith("Function: main")
    press(browser, Keys.ESCAPE)
    assert box(browser, "io")["w"] == pytest.approx(PLOT * 30 / 100, abs=0.5)
    assert frame(browser, "gemm").accessible_name == "gemm (40 samples, 40.00%)"
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
    assert box(browser, "c") == pytest.approx({"x": 10, "w": PLOT}, abs=0.5)
    assert box(browser, "d") == pytest.approx({"x": 10, "w": PLOT * 3 / 5}, abs=0.5)
    assert box(browser, "e") == pytest.approx({"x": 10 + PLOT * 3 / 5, "w": PLOT * 2 / 5}, abs=0.5)
    assert box(browser, "a")["w"] == pytest.approx(PLOT, abs=0.5)
    assert box(browser, "b")["w"] == 0 and box(browser, "z")["w"] == 0  # hidden
    browser.execute_script("flamegraph.resetZoom()")
    assert box(browser, "b")["w"] == pytest.approx(PLOT * 5e9 / 5.7e9, abs=0.5)


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
