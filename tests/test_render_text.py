"""A name must not display as another: bidi controls and invisible characters are shown escaped."""

from __future__ import annotations

import sys
import unicodedata

import pytest
from helpers.svg import SVG, frames, parse, settings, texts
from hypothesis import given
from hypothesis import settings as settings_
from hypothesis import strategies as st

from flamegraph.color import BadPalette, format_palette, parse_palette
from flamegraph.model import FoldedProfile
from flamegraph.render import RenderOptions, render_diff, render_svg
from flamegraph.render.text import display_name, display_text, unsafe_in_document

BIDI = ["\u202a", "\u202b", "\u202c", "\u202d", "\u202e", "\u200e", "\u200f", "\u2066", "\u2067", "\u2068",
        "\u2069", "\u061c"]  # fmt: skip
INVISIBLE = ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad", "\u00a0", "\u3000", "\u2028", "\u0085",
             "\U000e0041", "\u3164", "\t", "\r"]  # fmt: skip


def escaped(char: str) -> str:
    code = ord(char)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def test_every_invisible_character_of_the_unicode_database_is_escaped() -> None:
    """The hand-written class in text.py against this Python's Unicode data (a newer one may add some)."""
    missed = [
        f"U+{code:04X} {unicodedata.category(chr(code))}"
        for code in range(sys.maxunicode + 1)
        if (unicodedata.category(chr(code)) in ("Cc", "Cf", "Zl", "Zp", "Zs", "Cs") and code != 0x20)
        and display_name(chr(code)) == chr(code)
    ]
    assert missed == []


@pytest.mark.parametrize("char", BIDI + INVISIBLE, ids=[f"U+{ord(c):04X}" for c in BIDI + INVISIBLE])
def test_name_with_a_hidden_character_is_shown_escaped(char: str) -> None:
    name = f"gnp{char}.exe<T>&"
    svg = render_svg(FoldedProfile({f"main;{name}": 90, "main;other": 10}), RenderOptions(top=5))
    assert char not in svg.decode("utf-8")
    shown = f"gnp{escaped(char)}.exe<T>&"  # XML escaping intact: parse() gives back '<', '>', '&'
    assert shown in {f.name for f in frames(svg)}  # tooltip (<title>), which the script's names come from
    assert any(text == shown for text in texts(svg, "labels"))  # the label drawn without JavaScript
    assert any(text.endswith(shown) for text in texts(svg, "top"))  # the static self-time table
    assert b"gnp" + escaped(char).encode() + b".exe&lt;T&gt;&amp;" in svg


def test_diff_and_options_are_escaped_too() -> None:
    before = FoldedProfile({"main;\u202eevil": 5})
    after = FoldedProfile({"main;\u202eevil": 9})
    svg = render_diff(before, after, RenderOptions(name_type="Fn\u202e:", count_name="s\u200bamples"))
    assert "\u202e" not in svg.decode() and "\u200b" not in svg.decode()
    assert "\\u202eevil" in {f.name for f in frames(svg)}
    assert settings(svg)["nameType"] == "Fn\\u202e:"  # JSON would carry the character to the script as \u202e
    assert settings(svg)["countName"] == "s\\u200bamples"
    root = parse(svg)
    assert root.find(f".//{SVG}script[@id='settings']") is not None


def test_document_keeps_line_breaks_and_plain_names() -> None:
    assert display_text("a\n\tb\u202e") == "a\n\tb\\u202e"
    assert display_name("std::vector<int>::push_back") == "std::vector<int>::push_back"
    assert display_name("名前 ü") == "名前 ü"
    assert display_name("a\udcffb") == "a\\xffb"  # a raw byte, as before


# What a decoded name can hold: any character but the separators, and the surrogateescape of a raw byte.
NAMES = st.text(
    alphabet=st.characters(blacklist_characters="\n;", blacklist_categories=("Cs",))
    | st.characters(min_codepoint=0xDC80, max_codepoint=0xDCFF),
    max_size=12,
)
HEX = st.tuples(*[st.integers(0, 255)] * 3).map(lambda rgb: "#{:02x}{:02x}{:02x}".format(*rgb))


@settings_(max_examples=60, deadline=None)
@given(st.dictionaries(st.lists(NAMES, min_size=1, max_size=4).map(";".join), st.integers(1, 10**6), min_size=1))
def test_any_names_give_well_formed_svg_without_hidden_characters(counts: dict[str, int]) -> None:
    svg = render_svg(FoldedProfile(counts), RenderOptions(min_width="0", top=20))
    text = svg.decode("utf-8")
    assert unsafe_in_document().search(text) is None
    drawn = frames(svg)  # parses as XML
    assert len(drawn) >= 2


@settings_(max_examples=200, deadline=None)
@given(
    st.dictionaries(NAMES, st.tuples(*[st.integers(0, 255)] * 3).map(lambda rgb: "#{:02x}{:02x}{:02x}".format(*rgb)))
)
def test_palette_text_round_trips(colors: dict[str, str]) -> None:
    assert parse_palette(format_palette(colors).decode("utf-8", "surrogateescape")) == colors


@settings_(max_examples=300, deadline=None)
@given(st.text())
def test_palette_parser_raises_only_bad_palette(text: str) -> None:
    try:
        parse_palette(text)
    except BadPalette as bad:
        assert 1 <= bad.line <= text.count("\n") + 1


def test_every_text_option_is_escaped() -> None:
    bad = "x\u202ey\udcff"
    profile = FoldedProfile({f"main;{bad}": 3, "main;b": 1}, event=bad, metadata={bad: bad})
    options = RenderOptions(
        title=bad, subtitle=bad, notes=bad, font_type=bad, name_type=bad, count_name=bad, highlights=[f"y=aqua:{bad}"]
    )
    for svg in (render_svg(profile, options), render_diff(profile, profile, options)):
        text = svg.decode("utf-8")
        assert unsafe_in_document().search(text) is None
        assert "x\\u202ey\\xff" in text
        frames(svg)  # still well-formed XML
