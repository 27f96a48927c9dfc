"""The page's views in a real headless Chromium, with real clicks and keys: callers and callees
(the sandwich) from a frame's context menu, a key and a search result; focus and ignore from the
search box; order by weight; collapsed recursion; self time at the pointer; a width that follows the
window. Each on a folded profile whose answer is known, read back from what is drawn."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.clients import chromium
from helpers.page import box, click, frame, plot, press, text_of, type_search, viewport

from flamegraph.model import FoldedProfile
from flamegraph.render import RenderOptions, render_svg

pytestmark = [pytest.mark.browser, pytest.mark.parallel]  # proven beside two busy loops

SITES = 300  # malloc, one sample from each of 300 callers: each far under 0.1 px, none of them drawn
PROFILE = {
    "main;compute;gemm": 40_000,
    "main;compute;relu": 10_000,
    "main;io;read": 12_000,
    "main;io;gemm_wrapper;gemm": 10_000,
    "main;solve;solve;solve;gemm": 8_000,  # recursion
    "idle;wait": 20_000,  # alphabetically before main, by weight after it
    **{f"main;site{i:03d};malloc": 1 for i in range(SITES)},
}
TOTAL = sum(PROFILE.values())  # 100,300: one sample is 0.012 px at 1,200 px, under --minwidth's 0.1


def share(weight: int) -> str:
    return f"{100 * weight / TOTAL:.2f}% of all"


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    with chromium() as driver:
        yield driver


@pytest.fixture(scope="module")
def graph(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("svg") / "views.svg"
    path.write_bytes(render_svg(FoldedProfile(dict(PROFILE), event="cpu-clock"), RenderOptions()))
    return path


def drawn(driver) -> list[tuple[str, float, float]]:  # type: ignore[no-untyped-def]
    """(name, x, width) of every frame shown, in pixels, in document order."""
    return [
        (name, x, w)
        for name, x, w in driver.execute_script("""
            return [].filter.call(document.querySelectorAll('#frames > g'), g => !g.classList.contains('hide'))
              .map(g => { var t = g.firstElementChild.textContent, b = g.lastElementChild.getBoundingClientRect();
                          return [t.slice(0, t.lastIndexOf(' (')), b.x, b.width]; });""")
    ]


def widths(driver, name: str) -> list[float]:  # type: ignore[no-untyped-def]
    return [round(w, 1) for n, _, w in drawn(driver) if n == name]


def test_callers_and_callees_from_the_menu_a_key_and_a_search_result(browser, graph: Path) -> None:  # type: ignore[no-untyped-def]
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    viewport(browser, (1220, 900))
    browser.get(graph.as_uri())
    static = drawn(browser)
    assert not [f for f in static if f[0] == "malloc"]  # too narrow to draw: not in the static picture
    ActionChains(browser).context_click(frame(browser, "gemm")).perform()
    item = browser.find_element("id", "menu-callers")
    assert item.is_displayed() and item.text == "Callers and callees of gemm"
    click(browser, item)
    full = plot(browser)
    assert text_of(browser, "title") == "Flame Graph \u2014 callers and callees of gemm: " + share(58_000)
    # gemm twice (the callers' root above, the callees' below), each the full width; its callers below
    # it in proportion: compute 40,000, gemm_wrapper 10,000, solve 8,000 (the outermost call only)
    assert widths(browser, "gemm") == [round(full, 1)] * 2
    scale = full / 58_000
    for name, weight in (("compute", 40_000), ("gemm_wrapper", 10_000), ("io", 10_000)):
        assert widths(browser, name) == [pytest.approx(round(weight * scale, 1), abs=0.2)], name
    assert widths(browser, "solve") == [pytest.approx(round(8_000 * scale, 1), abs=0.2)] * 3
    assert widths(browser, "main") == [pytest.approx(round(w * scale, 1), abs=0.2) for w in (40_000, 10_000, 8_000)]
    assert "c=gemm" in browser.current_url
    press(browser, Keys.ESCAPE)  # back to the whole graph, the static drawing itself
    assert drawn(browser) == static and "c=" not in browser.current_url

    ActionChains(browser).move_to_element(frame(browser, "read")).perform()
    press(browser, "c")  # the key, on the frame under the pointer
    assert widths(browser, "read") == [round(full, 1)] * 2 and widths(browser, "io") == [round(full, 1)]
    press(browser, Keys.ESCAPE)

    # A function found by the search, drawn nowhere: its 300 callers, each 1/300 of the width
    type_search(browser, "mall")
    assert text_of(browser, "matched").startswith("Matched: 0.00% \u00b7 0 frames")  # no frame drawn
    browser.find_element("id", "search-input").send_keys(Keys.ESCAPE)
    browser.execute_script("flamegraph.showCallers('malloc')")  # the list only names drawn frames
    assert widths(browser, "malloc") == [round(full, 1)] * 2
    sites = [w for n, _, w in drawn(browser) if n.startswith("site")]
    assert len(sites) == SITES and all(w == pytest.approx(full / SITES, abs=0.01) for w in sites)
    assert f"malloc (300 samples, {100 * 300 / TOTAL:.2f}%" in browser.execute_script(
        "return document.querySelector('#frames > g title').textContent"
    )
    browser.execute_script("flamegraph.setView({callers: null})")
    type_search(browser, "wrapper")
    click(browser, browser.find_element("css selector", "#search-list li button.callers"))
    assert widths(browser, "gemm_wrapper") == [round(full, 1)] * 2 and widths(browser, "gemm") == [round(full, 1)]


def test_focus_and_ignore_from_the_search_box(browser, graph: Path) -> None:  # type: ignore[no-untyped-def]
    viewport(browser, (1220, 900))
    browser.get(graph.as_uri())
    full = plot(browser)
    type_search(browser, "gemm")
    click(browser, browser.find_element("id", "view-focus"))
    assert text_of(browser, "title") == "Flame Graph \u2014 focus /gemm/: " + share(58_000)
    assert {n for n, _, _ in drawn(browser)} == {"all", "main", "compute", "gemm", "io", "gemm_wrapper", "solve"}
    assert widths(browser, "all") == [round(full, 1)]
    assert widths(browser, "compute") == [pytest.approx(round(full * 40_000 / 58_000, 1), abs=0.2)]
    type_search(browser, "wrapper")
    click(browser, browser.find_element("id", "view-ignore"))
    assert text_of(browser, "title") == "Flame Graph \u2014 focus /gemm/ \u00b7 ignore /wrapper/: " + share(48_000)
    assert "io" not in {n for n, _, _ in drawn(browser)}
    assert re.search(r"fo=gemm.*ig=wrapper|ig=wrapper.*fo=gemm", browser.current_url)
    url = browser.current_url
    browser.get("about:blank")
    browser.get(url)  # the link reopens the view
    assert text_of(browser, "title").endswith("ignore /wrapper/: " + share(48_000))
    click(browser, browser.find_element("id", "view-clear"))
    assert text_of(browser, "title") == "Flame Graph" and len(widths(browser, "io")) == 1


def test_the_view_buttons_under_the_search_box_show_before_any_search(browser, graph: Path) -> None:  # type: ignore[no-untyped-def]
    """The row under the search box was clipped to 2 px slivers (its box 26 px high) until one typed."""
    viewport(browser, (1400, 1000))
    browser.get(graph.as_uri())
    shown = browser.execute_script("""
        var box = document.getElementById('search-box').getBoundingClientRect();
        return ['view-focus', 'view-ignore', 'view-weight', 'view-recursion'].map(function (id) {
          var b = document.getElementById(id).getBoundingClientRect();
          var hit = document.elementFromPoint(b.x + b.width / 2, b.y + b.height / 2);
          return [id, Math.round(b.height), b.top >= box.top && b.bottom <= box.bottom + 0.5, hit && hit.id];
        });""")
    for name, height, inside, hit in shown:
        assert height >= 18 and inside and hit == name, shown
    click(browser, browser.find_element("id", "view-weight"))  # a real click lands on it
    assert browser.find_element("id", "view-weight").get_attribute("aria-pressed") == "true"
    click(browser, browser.find_element("id", "view-weight"))


def test_order_by_weight_and_collapsed_recursion(browser, graph: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    viewport(browser, (1220, 900))
    browser.get(graph.as_uri())
    names = [n for n, _, _ in drawn(browser)]
    xs = {n: x for n, x, _ in drawn(browser)}
    assert xs["idle"] < xs["main"] and xs["gemm_wrapper"] < xs["read"]  # alphabetical
    press(browser, "w")
    assert browser.find_element("id", "view-weight").get_attribute("aria-pressed") == "true"
    xs = {n: x for n, x, _ in drawn(browser)}
    assert xs["main"] < xs["idle"] and xs["read"] < xs["gemm_wrapper"]  # 80,300 before 20,000; 12,000 before 10,000
    assert xs["compute"] < xs["io"] < xs["solve"]  # 50,000, 22,000, 8,000
    press(browser, "w")
    assert [n for n, _, _ in drawn(browser)] == names  # the static drawing again
    assert len(widths(browser, "solve")) == 3
    press(browser, "r")  # a;a;a;b -> a;b
    assert len(widths(browser, "solve")) == 1 and "r=1" in browser.current_url
    assert text_of(browser, "title") == "Flame Graph \u2014 recursion collapsed: 100.00% of all"
    chart = tmp_path / "chart.svg"  # a flame chart keeps time order: no weight toggle
    chart.write_bytes(render_svg(FoldedProfile({"a;b": 1, "a;c": 2}), RenderOptions(flamechart=True)))
    browser.get(chart.as_uri())
    assert browser.find_elements("id", "view-weight") == [] and browser.find_element("id", "view-recursion")


def test_self_time_at_the_pointer_and_a_width_that_follows_the_window(browser, graph: Path) -> None:  # type: ignore[no-untyped-def]
    from selenium.webdriver.common.action_chains import ActionChains

    viewport(browser, (1000, 800))
    browser.get(graph.as_uri())
    assert plot(browser) == pytest.approx(980, abs=1)  # 1000 px less the margins, not --width's 1200
    target = frame(browser, "compute")
    ActionChains(browser).move_to_element(target).perform()
    percent = f"{100 * 50_000 / TOTAL:.2f}%"
    assert text_of(browser, "details") == f"Function: compute (50,000 samples, {percent}; self 0 samples, 0.00%)"
    tip = browser.find_element("id", "tip")
    assert tip.is_displayed()
    assert tip.text.splitlines() == ["compute", f"total 50,000 samples, {percent} \u00b7 self 0 samples, 0.00%"]
    near = browser.execute_script(
        "var t = arguments[0].getBoundingClientRect(), f = arguments[1].getBoundingClientRect();"
        "return [t.left - (f.left + f.width / 2), t.top - (f.top + f.height / 2)]",
        tip,
        target.find_element("tag name", "rect"),
    )
    assert 0 < near[0] < 30 and 0 < near[1] < 30  # just below and right of the pointer
    viewport(browser, (1400, 800))
    assert plot(browser) == pytest.approx(1380, abs=1)
    assert box(browser, "compute")["w"] == pytest.approx(1380 * 50_000 / TOTAL, abs=0.5)
    browser.execute_script("window.dispatchEvent(new Event('beforeprint'))")  # printing: the --width value
    assert plot(browser) == pytest.approx(1180, abs=1)
    browser.execute_script("window.dispatchEvent(new Event('afterprint'))")
    assert plot(browser) == pytest.approx(1380, abs=1)


# Every frame drawn (no site too narrow), a name in two colours (kernel and user), fractional-free weights.
WHOLE = {k: v for k, v in PROFILE.items() if "site" not in k} | {"main;io;read;read_[k]": 3_000, "main;read": 500}


@pytest.mark.parametrize(
    "options", [RenderOptions(), RenderOptions(inverted=True, order="weight")], ids=["flame", "icicle"]
)
def test_a_page_that_drew_every_stack_reads_them_back_for_its_views(  # type: ignore[no-untyped-def]
    browser, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, options: RenderOptions
) -> None:
    """The file embeds no stacks when its frames hold them all (stacksDrawn); each view is then the same,
    frame for frame (title, x, width, fill), as on the same page with the stacks embedded."""
    import flamegraph.render.svg as svg

    profile = FoldedProfile(dict(WHOLE), event="cpu-clock")
    drawn, embedded = tmp_path / "drawn.svg", tmp_path / "embedded.svg"
    drawn.write_bytes(render_svg(profile, options))
    monkeypatch.setattr(svg, "drawing_holds_stacks", lambda layout: False)
    embedded.write_bytes(render_svg(profile, options))
    assert b'id="stacks"' not in drawn.read_bytes() and b'id="stacks"' in embedded.read_bytes()
    views = [
        "{callers: 'read'}", "{callers: 'gemm'}", "{focus: '^gemm$'}", "{ignore: 'comp'}", "{weight: true}",
        "{recursion: true}", "{callers: 'solve', recursion: true, weight: true}", "{focus: 'read', ignore: 'wait'}",
    ]  # fmt: skip
    shown = """return [flamegraph.state().view, document.getElementById('title').textContent,
        [].map.call(document.querySelectorAll('#frames > g'), g => [g.firstElementChild.textContent,
        g.lastElementChild.getAttribute('x'), g.lastElementChild.getAttribute('width'),
        g.lastElementChild.getAttribute('fill'), g.lastElementChild.getAttribute('y')])];"""
    seen: dict[str, list[object]] = {}
    NO_VIEW = "{callers: null, focus: null, ignore: null, weight: false, recursion: false}"  # noqa: N806
    for page in (drawn, embedded):
        browser.get(page.as_uri())
        for view in views:
            browser.execute_script(f"flamegraph.setView({view})")
            seen.setdefault(view, []).append(browser.execute_script(shown))
            browser.execute_script(f"flamegraph.setView({NO_VIEW})")
    for view, (from_drawing, from_json) in seen.items():
        assert from_drawing == from_json, view
        assert len(from_drawing[2]) > 3, view  # a view was drawn
    # the kernel's read_[k] and the user's read stay two functions: the callers of 'read' hold both fills
    callers = seen["{callers: 'read'}"][0][2]
    assert len({fill for title, _, _, fill, _ in callers if title.startswith("read (")}) == 2  # type: ignore[misc]
