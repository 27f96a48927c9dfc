"""Driving the page in a browser as a person does: find a frame by name, point, click, type, size the window."""

from __future__ import annotations

import time

WINDOW = (1400, 1000)  # the page area of a common browser window


def frame(driver, name: str):  # type: ignore[no-untyped-def]
    """The <g> of the first frame called `name`: its title up to the last " (" is the name.

    One script in the page: a round trip to the driver per frame took 22 s on the MLP's graph."""
    element = driver.execute_script(
        "for (const g of document.querySelectorAll('#frames > g')) {"
        "  const title = g.querySelector('title').textContent, cut = title.lastIndexOf(' (');"
        "  if ((cut < 0 ? title : title.slice(0, cut)) === arguments[0]) return g;"
        "}"
        "return null;",
        name,
    )
    if element is None:
        raise AssertionError(f"no frame {name}")
    return element


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


def type_search(driver, text: str) -> None:  # type: ignore[no-untyped-def]
    """Type into the search box as a person does (Ctrl-F, then the keys), and wait for the filter."""
    press(driver, "f", ctrl=True)
    field = driver.switch_to.active_element
    assert field.get_attribute("id") == "search-input"
    field.send_keys(text)
    time.sleep(0.2)  # the box filters 60 ms after the last key


def viewport(driver, size: tuple[int, int] = WINDOW) -> None:  # type: ignore[no-untyped-def]
    """Make the page area (not the window) `size`, as a 1400×1000 browser window shows pages."""
    inner = driver.execute_script("return [window.innerWidth, window.innerHeight]")
    outer = driver.get_window_size()
    driver.set_window_size(outer["width"] + size[0] - inner[0], outer["height"] + size[1] - inner[1])


def plot(driver) -> float:  # type: ignore[no-untyped-def]
    """The graph's width in pixels: the window's less the margins (the --width value only in the static file)."""
    return float(driver.execute_script("return document.getElementById('view').getBoundingClientRect().width"))


def rgb(colour: str) -> tuple[int, int, int]:
    """A fill as the page or the SVG gives it ('#rrggbb' or 'rgb(r, g, b)') as numbers."""
    colour = colour.strip()
    if colour.startswith("#"):
        return int(colour[1:3], 16), int(colour[3:5], 16), int(colour[5:7], 16)
    r, g, b = (int(part) for part in colour[colour.index("(") + 1 : -1].split(","))
    return r, g, b
