"""Colours: flamegraph.pl's palettes and name hashing, palette files, diff scales, highlight classes.

The default colour of a name is what flamegraph.pl gives it (Perl seeds `srand` with the sum of
the name's code points and draws one `rand`): the same function has the same colour in our graphs
and in the reference's, and across graphs. Palette files hold lines like
    mxnet::engine::ThreadedEngine::ExecuteOprBlock->rgb(229,101,29)
    do_syscall_64_[k]->rgb(223,149,0)
"""

from __future__ import annotations

import random
import re
import warnings
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from typing import cast

from .io.diagnostics import BadOption
from .model import PYTHON_FUNCTION

RGB = tuple[int, int, int]

PALETTES = (
    "hot", "mem", "io", "wakeup", "chain", "wall", "java", "js", "perl", "python",
    "red", "green", "blue", "aqua", "yellow", "purple", "orange",
)  # fmt: skip
HUES = ("red", "green", "blue", "aqua", "yellow", "purple", "orange")
COLD_PALETTES = ("mem", "io", "wakeup", "chain", "green", "blue", "aqua")
SEARCH_COLOR = "#e600e6"  # rgb(230,0,230), the reference's search colour
GREY_SEPARATOR = "#a0a0a0"  # frames named "--"
GREY_DASH = "#c8c8c8"  # frames named "-"
ANNOTATION = re.compile(r"_\[[kwijo]\]$")  # _[o]: a frame of an off-CPU stack in a wall-time graph (render's)
# A class coloured by a hue has no one colour: its legend swatch is the colour this fixed name gets
# in that hue (any name would do; changing it changes every such graph's legend).
SWATCH_NAME = "oneDNN"

# flamegraph.pl's background gradients, chosen by palette.
BACKGROUNDS = {
    "yellow": ("#eeeeee", "#eeeeb0"),
    "blue": ("#eeeeee", "#e0e0ff"),
    "green": ("#eef2ee", "#e0ffe0"),
    "grey": ("#f8f8f8", "#e8e8e8"),
}


def background(palette: str) -> tuple[str, str]:
    if palette == "mem":
        return BACKGROUNDS["green"]
    if palette in ("io", "wakeup", "chain"):
        return BACKGROUNDS["blue"]
    if palette in HUES:
        return BACKGROUNDS["grey"]
    return BACKGROUNDS["yellow"]


def hex_color(rgb: RGB) -> str:
    return "#%02x%02x%02x" % rgb  # noqa: UP031 - twice as fast as str.format, once per name drawn


def strip_annotation(name: str) -> str:
    return ANNOTATION.sub("", name)


# --- the reference's hashing -------------------------------------------------------------------


def perl_rand(seed: int) -> float:
    """Perl >= 5.20's first `rand(1)` after `srand(seed)` (its own drand48)."""
    state = 0x330E + ((seed & 0xFFFFFFFF) << 16)
    state = (state * 0x5DEECE66D + 0xB) & 0xFFFFFFFFFFFF
    return state / 2.0**48


def random_namehash(name: str) -> float:
    """flamegraph.pl's default: srand(unpack("%32W*", name)); rand(1)."""
    # the code points' sum; an ASCII name's bytes are its code points, summed in C
    return perl_rand(sum(name.encode("ascii")) if name.isascii() else sum(map(ord, name)))


def namehash(name: str) -> float:
    """flamegraph.pl's --hash: weights early characters over later ones; module prefix cut."""
    name = re.sub(r".(.*?)`", "", name, count=1)
    vector = 0.0
    weight = 1.0
    maximum = 1.0
    mod = 10
    for char in name:
        vector += (ord(char) % mod) / (mod - 1) * weight
        mod += 1
        maximum += weight
        weight *= 0.70
        if mod > 12:
            break
    return 1 - vector / maximum


PYTHON_FUNCTION_RE = re.compile(PYTHON_FUNCTION)


def hue_of(palette: str, name: str) -> str:
    """The multi-hue palettes pick a hue from the name and its _[k]/_[j]/_[i]/_[w] annotation."""
    if palette == "java":
        if name.endswith("_[j]"):
            return "green"
        if name.endswith("_[i]"):
            return "aqua"
        if re.match(r"L?(java|javax|jdk|net|org|com|io|sun)/", name) or ":::" in name:
            return "green"
        if "::" in name:
            return "yellow"
        return "orange" if name.endswith("_[k]") else "red"
    if palette == "perl":
        if "::" in name:
            return "yellow"
        if "Perl" in name or ".pl" in name:
            return "green"
        return "orange" if name.endswith("_[k]") else "red"
    if palette == "js":
        if name.endswith("_[j]"):
            return "green" if "/" in name else "aqua"
        if "::" in name:
            return "yellow"
        if re.search(r"/.*\.js", name):
            return "green"
        if ":" in name:
            return "aqua"
        if name == " ":
            return "green"
        return "orange" if "_[k]" in name else "red"
    if palette == "python":  # ours: the reference has no python palette
        if name.endswith("_[k]"):
            return "orange"
        if ".py" in name or "<module>" in name or PYTHON_FUNCTION_RE.match(name):
            return "green"
        if name.startswith(("_Py", "Py", "<built-in", "<frozen")) or "libpython" in name:
            return "aqua"
        if "::" in name:
            return "yellow"
        return "red"
    if palette == "wakeup":
        return "aqua"
    if palette == "chain":
        return "aqua" if "_[w]" in name else "blue"
    if palette == "wall":  # record --wall: waits cold, the rest as the "hot" palette (below)
        return "blue" if name.endswith("_[o]") else "hot"
    return palette


def palette_rgb(palette: str, name: str, v1: float, v2: float, v3: float) -> RGB:
    """flamegraph.pl's `color()` after the hash values are drawn."""
    if palette == "hot" or palette == "wall" and not name.endswith("_[o]"):
        return 205 + int(50 * v3), int(230 * v1), int(55 * v2)
    if palette == "mem":
        return 0, 190 + int(50 * v2), int(210 * v1)
    if palette == "io":
        red = 80 + int(60 * v1)
        return red, red, 190 + int(55 * v2)
    hue = hue_of(palette, name)
    if hue == "red":
        other = 50 + int(80 * v1)
        return 200 + int(55 * v1), other, other
    if hue == "green":
        other = 50 + int(60 * v1)
        return other, 200 + int(55 * v1), other
    if hue == "blue":
        other = 80 + int(60 * v1)
        return other, other, 205 + int(50 * v1)
    if hue == "yellow":
        other = 175 + int(55 * v1)
        return other, other, 50 + int(20 * v1)
    if hue == "purple":
        other = 190 + int(65 * v1)
        return other, 80 + int(60 * v1), other
    if hue == "aqua":
        return 50 + int(60 * v1), 165 + int(55 * v1), 165 + int(55 * v1)
    if hue == "orange":
        return 190 + int(65 * v1), 90 + int(65 * v1), 0
    return 0, 0, 0


class Painter:
    """Fill colour per frame name: hashed (default), by --hash, or --random (seeded: reproducible)."""

    def __init__(
        self,
        palette: str,
        hash_names: bool = False,
        random_colors: bool = False,
        fixed: dict[str, str] | None = None,
    ) -> None:
        if palette not in PALETTES:
            raise BadOption(f"unknown palette {palette!r}; choose one of {', '.join(PALETTES)}")
        self.palette = palette
        self.hash_names = hash_names
        self.random = random.Random(0) if random_colors else None
        self.fixed = fixed if fixed is not None else {}  # a palette file's colours: kept, and extended
        self.cache: dict[str, str] = {}

    def fill(self, name: str) -> str:
        color = self.cache.get(name)
        if color is None:
            color = self.fixed.get(name) or self._compute(name)
            self.cache[name] = color
        return color

    def _compute(self, name: str) -> str:
        if name == "--":
            return GREY_SEPARATOR
        if name == "-":
            return GREY_DASH
        if self.hash_names:
            v1 = namehash(name)
            v2 = v3 = namehash(name[::-1])
        elif self.random is not None:
            v1, v2, v3 = self.random.random(), self.random.random(), self.random.random()
        else:
            v1 = v2 = v3 = random_namehash(name)
        return hex_color(palette_rgb(self.palette, name, v1, v2, v3))


def diff_color(delta: float, max_delta: float) -> str:
    """Red for growth, blue for shrinkage, white for none; the reference's scale."""
    if max_delta <= 0 or delta == 0:
        return "#ffffff"
    fade = max(0, min(210, int(210 * ((max_delta - abs(delta)) / max_delta))))  # divide first: no overflow
    return hex_color((255, fade, fade) if delta > 0 else (fade, fade, 255))


# --- label text on a fill: black, or white where black would not be read (WCAG 2 contrast) ----------
MIN_CONTRAST = 4.5  # WCAG AA for text
LIGHT_TEXT = "#ffffff"
HEX = re.compile(r"#([0-9a-fA-F]{2})([0-9a-fA-F]{2})([0-9a-fA-F]{2})")


def luminance(rgb: RGB) -> float:
    """WCAG 2's relative luminance of an sRGB colour (0 black, 1 white)."""
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in (v / 255 for v in rgb)]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast(one: RGB, other: RGB) -> float:
    light, dark = sorted((luminance(one), luminance(other)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


@cache  # a diff draws from ~420 fills
def label_fill(fill: str) -> str | None:
    """White for a label on `fill` ('#rrggbb') where black text falls below 4.5:1 (the diff scale's deep
    blues: black on #0000ff is 2.4:1, white 8.6:1), else None (black, the page's text colour). Black's
    and white's contrasts on one fill multiply to 21: where black is under 4.5:1, white is over 4.67:1."""
    found = HEX.fullmatch(fill)
    if found is None:
        return None
    rgb = (int(found.group(1), 16), int(found.group(2), 16), int(found.group(3), 16))
    return LIGHT_TEXT if (luminance(rgb) + 0.05) / 0.05 < MIN_CONTRAST else None


# --- palette files (--cp) ----------------------------------------------------------------------
# The text only: the CLI reads and writes the file (flamegraph/cli/palette.py); the renderer extends
# the map in memory with every colour it picks.

PALETTE_LINE = re.compile(r"(.*)->rgb\(([0-9]{1,3}),([0-9]{1,3}),([0-9]{1,3})\)")
# What PALETTE_LINE.fullmatch finds, in linear time: the colour is a bounded suffix (and holds no
# second "->rgb("), so searching for it once replaces backtracking `(.*)` over every "->rgb(".
PALETTE_COLOR = re.compile(r"->rgb\(([0-9]{1,3}),([0-9]{1,3}),([0-9]{1,3})\)\Z")


class BadPalette(ValueError):
    """A line that is not `name->rgb(r,g,b)`: its number and text."""

    def __init__(self, line: int, text: str) -> None:
        super().__init__(f"line {line}: {text!r}")
        self.line = line
        self.text = text


def parse_palette(text: str) -> dict[str, str]:
    """flamegraph.pl's palette.map lines -> name: '#rrggbb'; blank lines are allowed, anything else raises.

        mxnet::engine::ThreadedEngine::ExecuteOprBlock->rgb(229,101,29)
        do_syscall_64_[k]->rgb(223,149,0)
    """
    colors: dict[str, str] = {}
    for number, line in enumerate(text.split("\n"), 1):  # not splitlines(): names may hold \x0c or U+2028
        line = line.removesuffix("\r")
        if not line.strip():
            continue
        match = PALETTE_COLOR.search(line) if "\n" not in line else None
        parts = tuple(int(part) for part in match.groups()) if match else ()
        if match is None or max(parts) > 255:
            raise BadPalette(number, line)
        colors[line[: match.start()]] = hex_color((parts[0], parts[1], parts[2]))
    return colors


def css_color(text: str) -> str:
    match = re.fullmatch(r"rgb\((\d{1,3}),(\d{1,3}),(\d{1,3})\)", text)
    if match:
        red, green, blue = (min(255, int(part)) for part in match.groups())
        return hex_color((red, green, blue))
    return text.lower()


def format_palette(colors: dict[str, str]) -> bytes:
    """name: '#rrggbb' -> palette.map lines, sorted by name (what parse_palette reads back)."""
    lines = []
    for name in sorted(colors):
        value = colors[name]
        rgb = tuple(int(value[i : i + 2], 16) for i in (1, 3, 5))
        lines.append(f"{name}->rgb({rgb[0]},{rgb[1]},{rgb[2]})\n")
    return "".join(lines).encode("utf-8", "surrogateescape")


# --- highlight classes -------------------------------------------------------------------------


REGEX_ERRORS = (re.error, OverflowError, RecursionError)  # what re.compile raises for a bad pattern


def _compile(pattern: str) -> re.Pattern[str]:
    """re.compile without its FutureWarnings ("Possible nested set"): two lines of Python on the terminal."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        return re.compile(pattern)


@dataclass(frozen=True)
class HighlightRule:
    """Frames whose name matches `pattern` are drawn in `color` (a hue name or #rrggbb).

    `from_file`: the pattern was read from a file (a capture-facts file), not typed by the user; it
    passed `file_pattern_problem` and is only tried on names of at most MAX_FILE_SUBJECT characters."""

    pattern: str
    color: str | None = None  # None: the next free hue
    label: str | None = None  # None: the pattern
    from_file: bool = False

    def compiled(self) -> re.Pattern[str]:
        try:
            return _compile(self.pattern)
        except REGEX_ERRORS as err:  # `a{4294967296}` overflows, 1,000 nested groups recurse
            raise BadOption(f"--highlight {self.pattern!r}: bad regular expression: {err}") from None


ONEDNN_PRESET = (
    # Named kernels (DNNL_JIT_DUMP / jitdump names), _[j]-annotated frames, and JIT code perf could
    # not name (in an MXNet process the anonymous executable memory is oneDNN's).
    HighlightRule(r"(?i)xbyak|(^|::)jit_\w*(gemm|gemv|kern|kernel)|^jit_(uni|avx|sse|softmax)|_\[j\]$"
                  r"|^\[perf-\d+\.map\]$", "aqua", "oneDNN JIT kernels"),
    HighlightRule(r"(?i)dnnl|mkldnn|onednn|sgemm|gemm_f32|gemv|gemm_driver", "green", "oneDNN / MKLDNN"),
)  # fmt: skip
MXNET_OPS_PRESET = (
    # The frames `flamegraph record --mxnet` inserts (flamegraph.frameworks.mxnet.join): named operators and
    # bulk segments, oneDNN primitive executions, the frames that say no single name fits, and the
    # marks of the tool's own instruments.
    HighlightRule(r"^\[(op|segment)\] [^(]", "purple", "MXNet operators"),
    HighlightRule(r"^\[dnnl\] [^(]", "aqua", "oneDNN primitives"),
    HighlightRule(r"^\[(op|dnnl)\] \(", "yellow", "outside any operator / primitive"),
    HighlightRule(r"^\[instrumentation\] ", "orange", "the tool's own instruments"),  # mxnet/instruments.py
)
PYTHON_PRESET = (
    # The classes of the `python` palette as a legend: the program's Python functions (3.12+ perf
    # support, named `function (file.py)` by collapse.tidy.python_frame) and CPython's own C code
    # (seen with --keep-interpreter, and before the first Python function).
    HighlightRule(PYTHON_FUNCTION, "green", "Python functions"),
    HighlightRule(r"^_?Py[A-Z_]|^py_trampoline|libpython", "aqua", "CPython interpreter"),
)
PRESETS: dict[str, tuple[HighlightRule, ...]] = {
    "onednn": ONEDNN_PRESET,
    "mxnet-ops": MXNET_OPS_PRESET,
    "python": PYTHON_PRESET,
}

COLOR_VALUE = re.compile(r"#[0-9a-fA-F]{6}|#[0-9a-fA-F]{3}|" + "|".join(HUES))


def _label_split(spec: str) -> tuple[str, str | None]:
    """Split off `:LABEL` at the last ':' that is not in '::' (C++) nor in '(?:' (a group)."""
    for index in range(len(spec) - 1, 0, -1):
        if spec[index] != ":" or spec[index - 1] in ":?" or spec[index + 1 : index + 2] == ":":
            continue
        head = spec[:index]
        try:
            _compile(_color_split(head)[0])
        except REGEX_ERRORS:
            continue
        return head, spec[index + 1 :]
    return spec, None


def _color_split(head: str) -> tuple[str, str | None]:
    pattern, sep, color = head.rpartition("=")
    if sep and pattern and COLOR_VALUE.fullmatch(color):
        return pattern, color.lower()
    return head, None


COLOUR_LIKE = re.compile(r"#\w*|[A-Za-z]+")  # what a user typing REGEX=COLOUR puts after the '='


def _unknown_colour(head: str) -> str | None:
    """The would-be colour of `REGEX=WORD` that is no colour (`main=notacolour`): typed as a colour, it
    would otherwise silently become a regular expression that matches nothing. A '=' escaped (`\\=`)
    or inside a group (`(?=x)`, `(?P=name)`: not followed by a bare word) is the pattern's."""
    pattern, sep, value = head.rpartition("=")
    if not (sep and pattern) or pattern.endswith("\\") or not COLOUR_LIKE.fullmatch(value):
        return None
    return value


def parse_highlight(spec: str) -> HighlightRule:
    """`REGEX[=COLOUR][:LABEL]`, COLOUR a hue name or #rrggbb.

    Examples: `dnnl=aqua:oneDNN`, `MultiSGD=#ff00ff`, `std::vector` (no label: '::' belongs to
    the regex), `(?:gemm|gemv):BLAS`, `^jit_:JIT kernels`.
    """
    head, label = _label_split(spec)
    pattern, color = _color_split(head)
    if not pattern:
        raise BadOption(f"--highlight {spec!r}: expected REGEX[=COLOUR][:LABEL]")
    if color is None and (unknown := _unknown_colour(head)) is not None:
        raise BadOption(f"--highlight {spec!r}: unknown colour {unknown!r} (a hue: {', '.join(HUES)}; or #rrggbb); "
                        "to match a '=' in names, write it [=]")  # fmt: skip
    rule = HighlightRule(pattern, color, label.strip() if label and label.strip() else None)
    rule.compiled()
    return rule


# --- highlight classes read from a file --------------------------------------------------------
# A pattern typed on the command line is the user's own; one read from a file (a capture-facts file
# that came with a bug report) is input, and Python's backtracking matcher has no time limit:
# `(a+)+$` is exponential, `\w*\w*x` cubic. So a file's pattern may hold no repeat inside a repeat,
# no repeated alternatives, no back-reference and at most one variable-width repeat (at worst
# quadratic in the name), and is only tried on names up to MAX_FILE_SUBJECT characters: at most
# about a million steps a name.

MAX_FILE_SPEC = 512  # characters of one `REGEX[=COLOUR][:LABEL]` read from a file
MAX_FILE_SUBJECT = 1024  # longer names never match a pattern read from a file
_REPEATS = frozenset(("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"))
_ONE_CHARACTER = frozenset(("LITERAL", "NOT_LITERAL", "ANY", "IN", "CATEGORY", "AT"))


def file_pattern_problem(pattern: str) -> str | None:
    """Why matching `pattern` could cost more than a bounded number of steps per character (None: it cannot)."""
    from re import _parser  # type: ignore[attr-defined]  # the stdlib's own parser: what re.compile will see

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            parsed = _parser.parse(pattern)
    except REGEX_ERRORS as err:
        return f"bad regular expression: {err}"
    variable: list[int] = []
    problem = _walk_pattern(list(parsed), False, variable)
    if problem is None and len(variable) > 1:
        problem = "more than one variable-width repeat (its cost grows as a power of the name's length)"
    return problem


def _walk_pattern(items: list[tuple[object, object]], repeated: bool, variable: list[int]) -> str | None:
    for op, arg in items:
        name = str(op)
        children: list[list[tuple[object, object]]] = []
        inner = repeated
        if name in _REPEATS:
            low, high, body = cast(tuple[int, int, list[tuple[object, object]]], arg)
            if repeated and high != 1:
                return "a repeat inside a repeat (its cost can grow exponentially)"
            if low != high and high != 1:
                variable.append(1)
            if any(str(child) not in _ONE_CHARACTER for child, _ in _flat(list(body))):
                if high != 1:
                    return "a repeated group holding alternatives or repeats (its cost can grow exponentially)"
            children.append(list(body))
            inner = repeated or high != 1
        elif name == "BRANCH":
            if repeated:
                return "alternatives inside a repeat (its cost can grow exponentially)"
            children.extend(list(branch) for branch in arg[1])  # type: ignore[index]
        elif name == "SUBPATTERN":
            children.append(list(arg[3]))  # type: ignore[index]
        elif name in ("ASSERT", "ASSERT_NOT"):
            children.append(list(arg[1]))  # type: ignore[index]
        elif name == "ATOMIC_GROUP":
            children.append(list(arg))  # type: ignore[call-overload]
        elif name in ("GROUPREF", "GROUPREF_EXISTS", "GROUPREF_IGNORE", "GROUPREF_LOC_IGNORE", "GROUPREF_UNI_IGNORE"):
            return "a back-reference (its cost has no useful bound)"
        for child in children:
            problem = _walk_pattern(child, inner, variable)
            if problem is not None:
                return problem
    return None


def _flat(items: list[tuple[object, object]]) -> list[tuple[object, object]]:
    """The items of a repeat's body, looking through plain groups."""
    flat: list[tuple[object, object]] = []
    for op, arg in items:
        if str(op) == "SUBPATTERN":
            flat.extend(_flat(list(arg[3])))  # type: ignore[index]
        else:
            flat.append((op, arg))
    return flat


def parse_file_highlight(spec: str) -> HighlightRule:
    """A `REGEX[=COLOUR][:LABEL]` read from a file: BadOption (saying what is wrong) unless its cost is bounded."""
    if len(spec) > MAX_FILE_SPEC:
        raise BadOption(f"highlight of {len(spec):,} characters (at most {MAX_FILE_SPEC} are read from a file)")
    rule = parse_highlight(spec)
    problem = file_pattern_problem(rule.pattern)
    if problem is not None:
        raise BadOption(f"highlight {rule.pattern!r}: {problem}")
    return HighlightRule(rule.pattern, rule.color, rule.label, from_file=True)


def resolve_highlights(
    specs: Iterable[str | HighlightRule], preset: str | None, base_palette: str
) -> list[HighlightRule]:
    """The rules in order (the preset's first), each with a colour and a label."""
    rules: list[HighlightRule] = []
    if preset is not None:
        if preset not in PRESETS:
            raise BadOption(f"unknown preset {preset!r}; choose one of {', '.join(PRESETS)}")
        rules.extend(PRESETS[preset])
    rules.extend(parse_highlight(spec) if isinstance(spec, str) else spec for spec in specs)
    cold = base_palette in COLD_PALETTES
    free = [hue for hue in (("orange", "yellow", "red", "purple") if cold else ("aqua", "green", "blue", "purple"))]
    used = {rule.color for rule in rules}
    free = [hue for hue in free if hue not in used] or list(HUES)
    resolved = []
    for index, rule in enumerate(rules):
        color = rule.color or free[index % len(free)]
        resolved.append(HighlightRule(rule.pattern, color, rule.label or rule.pattern, rule.from_file))
    return resolved


class Highlighter:
    """Which highlight class (if any) a frame name belongs to, and its colour."""

    def __init__(self, rules: list[HighlightRule]) -> None:
        self.rules = rules
        self.patterns = [rule.compiled() for rule in rules]
        self.limits = [MAX_FILE_SUBJECT if rule.from_file else None for rule in rules]
        self.painters = [Painter(rule.color) if rule.color in HUES and rule.color else None for rule in rules]
        self.cache: dict[str, int] = {}

    def class_of(self, name: str) -> int:
        """Index of the first matching rule, or -1."""
        found = self.cache.get(name)
        if found is None:
            found = next((i for i in range(len(self.patterns)) if self.matches(i, name)), -1)
            self.cache[name] = found
        return found

    def matches(self, index: int, name: str) -> bool:
        limit = self.limits[index]
        return (limit is None or len(name) <= limit) and self.patterns[index].search(name) is not None

    def fill(self, index: int, name: str) -> str:
        painter = self.painters[index]
        if painter is not None:
            return painter.fill(name)
        return css_color(self.rules[index].color or "#000000")

    def swatch(self, index: int) -> str:
        painter = self.painters[index]
        return painter.fill(SWATCH_NAME) if painter is not None else css_color(self.rules[index].color or "#000000")
