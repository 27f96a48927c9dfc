"""Reading our SVGs back (frames, their paths from the root, texts, settings), for the render tests."""

from __future__ import annotations

import bisect
import json
import xml.etree.ElementTree as ET
from collections import defaultdict
from dataclasses import dataclass

SVG = "{http://www.w3.org/2000/svg}"


@dataclass(frozen=True)
class Drawn:
    title: str
    name: str
    depth: int
    x: float
    width: float
    fill: str


def parse(svg: bytes) -> ET.Element:
    return ET.fromstring(svg)


def settings(svg: bytes) -> dict[str, object]:
    element = parse(svg).find(f".//{SVG}script[@id='settings']")
    assert element is not None and element.text is not None
    loaded: dict[str, object] = json.loads(element.text)
    return loaded


def drawn_stacks(svg: bytes) -> dict[str, object]:
    """What flamegraph.js (drawnStacks) reads back from a page that drew every stack (stacksDrawn):
    each frame's width less its children's ends a stack; frames told apart by name and fill."""
    drawn = frames(svg)
    own = [frame.width for frame in drawn]
    path: list[int] = []  # drawn frame indices from the root
    for i, frame in enumerate(drawn):
        del path[frame.depth :]
        path.append(i)
        if path[:-1]:
            own[path[-2]] -= frame.width
    index: dict[tuple[str, str], int] = {}
    names: list[str] = []
    fills: list[str] = []
    records = []
    codes: list[int] = []
    for i, frame in enumerate(drawn[1:], 1):
        key = (frame.name, frame.fill)
        if key not in index:
            index[key] = len(names)
            names.append(frame.name)
            fills.append(frame.fill)
        del codes[frame.depth - 1 :]
        codes.append(index[key])
        if own[i] > 0:
            records.append(",".join(["0", *(base36(code) for code in codes), f"{own[i]:.17g}"]))
    return {"names": names, "fills": fills, "stacks": " ".join(records)}


def base36(value: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        value, digit = divmod(value, 36)
        out = digits[digit] + out
        if not value:
            return out


def stacks_data(svg: bytes) -> dict[str, object]:
    """The page's #stacks as its script reads them: a name given as a number is that drawn frame's
    name (its title without the amounts), its fill that frame's fill; "fills" holds the written names'."""
    element = parse(svg).find(f".//{SVG}script[@id='stacks']")
    if settings(svg).get("stacksDrawn"):
        assert element is None
        return drawn_stacks(svg)
    assert element is not None and element.text is not None
    data: dict[str, object] = json.loads(element.text)
    drawn = frames(svg)
    names, written = data["names"], data["fills"]
    assert isinstance(names, list) and isinstance(written, list)
    assert len(written) == sum(isinstance(name, str) for name in names)
    fills, unread = [], iter(written)
    for k, name in enumerate(names):
        if isinstance(name, int):
            assert drawn[name].depth > 0
            names[k] = drawn[name].name
            fills.append(drawn[name].fill)
        else:
            fills.append(next(unread))
    data["fills"] = fills
    return data


def frames(svg: bytes) -> list[Drawn]:
    """The frames of `<g id="frames">` in the profile's unit, depth from the rows (root row: depth 0)."""
    root = parse(svg)
    unit = float(settings(svg)["coordinateDivisor"])  # type: ignore[arg-type]
    group = root.find(f".//{SVG}g[@id='frames']")
    assert group is not None
    raw = []
    for g in group.findall(f"{SVG}g"):
        title = g.find(f"{SVG}title")
        rect = g.find(f"{SVG}rect")
        assert title is not None and rect is not None and title.text is not None
        raw.append((title.text, float(rect.get("x", "")), float(rect.get("y", "")), float(rect.get("width", "")),
                    float(rect.get("height", "")), rect.get("fill", "")))  # fmt: skip
    root_y = raw[0][2]
    step = raw[0][4] + 1
    inverted = all(y >= root_y for _, _, y, _, _, _ in raw)
    assert raw[0][1] == 0 and raw[0][3] == float(root.find(f".//{SVG}svg[@id='view']").get("viewBox", "").split()[2])
    out = []
    for title, x, y, width, _, fill in raw:
        depth = round((y - root_y) / step) if inverted else round((root_y - y) / step)
        out.append(Drawn(title, title[: title.rfind(" (")], depth, x * unit, width * unit, fill))
    return out


def paths(drawn: list[Drawn]) -> dict[tuple[str, ...], Drawn]:
    """Each frame's path from the root, found by geometry (the frame one row down that contains it)."""
    rows: dict[int, list[Drawn]] = defaultdict(list)
    for frame in drawn:
        rows[frame.depth].append(frame)
    for row in rows.values():
        row.sort(key=lambda f: f.x)
    slack = 1e-8 * max(1.0, drawn[0].width)  # coordinates carry ten significant digits
    found: dict[Drawn, tuple[str, ...]] = {}
    result: dict[tuple[str, ...], Drawn] = {}
    for depth in sorted(rows):
        starts = [f.x for f in rows.get(depth - 1, [])]
        for frame in rows[depth]:
            if depth == 0:
                found[frame] = ()
                continue
            parent = rows[depth - 1][bisect.bisect_right(starts, frame.x) - 1]
            assert parent.x - slack <= frame.x and frame.x + frame.width <= parent.x + parent.width + slack, (
                frame,
                parent,
            )
            path = found[parent] + (frame.name,)
            assert path not in result, f"drawn twice: {path}"
            found[frame] = path
            result[path] = frame
    return result


def texts(svg: bytes, group_id: str) -> list[str]:
    group = parse(svg).find(f".//{SVG}g[@id='{group_id}']")
    return [] if group is None else ["".join(t.itertext()) for t in group.iter(f"{SVG}text")]
