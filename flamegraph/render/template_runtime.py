"""The part of Jinja2's runtime that the precompiled SVG template calls, without importing Jinja2.

`svg_template.py` is Jinja2's own code for `templates/flamegraph.svg.j2`; run under Jinja2 it
needs `import jinja2`, which loads the lexer, parser and compiler too: about 90 M instructions,
as much as drawing a 2,000-frame profile. This module gives that code what it calls (an
environment's getattr/getitem/filters, a context, macros, escaping) with Jinja2's semantics for
an autoescaping, StrictUndefined environment, and nothing more: a template that uses another
runtime feature fails when `python -m flamegraph.render.precompiled` makes the module (UNSUPPORTED),
and tests/test_render_precompiled.py checks that both runtimes write the same bytes.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from markupsafe import Markup, escape

# Names Jinja2's generated module imports from jinja2.runtime that this runtime does not carry
# (loops with `loop.*`, namespaces, includes, template references): their use refuses the runtime.
UNSUPPORTED = ("LoopContext", "Namespace", "TemplateNotFound", "TemplateReference")


class TemplateRuntimeError(Exception):
    """A template error at render time (a missing variable, attribute or filter): a bug of ours."""


class Undefined:
    """Only referenced by the generated code (conditional expressions); never made here."""


class _Missing:
    def __repr__(self) -> str:
        return "missing"


missing: Any = _Missing()


def identity(value: Any) -> Any:
    return value


internalcode = identity


def markup_join(seq: Iterable[Any]) -> Markup:
    return Markup("").join(escape(item) for item in seq)


def str_join(seq: Iterable[Any]) -> str:
    return "".join(map(str, seq))


def _unsupported(*_: Any, **__: Any) -> Any:
    raise TemplateRuntimeError("the template uses a Jinja2 feature flamegraph.render.template_runtime lacks")


LoopContext = Namespace = TemplateNotFound = TemplateReference = _unsupported


# Jinja2's json.dumps_kwargs policy as precompiled.environment sets it: keys sorted, no space after , and :
# (the embedded stacks are tens of thousands of numbers).
JSON_DUMPS: dict[str, Any] = {"sort_keys": True, "separators": (",", ":")}


def tojson(_eval_ctx: Any, value: Any) -> Markup:
    """Jinja2's `tojson` filter under the JSON_DUMPS policy (<, >, &, ' as \\u escapes)."""
    text = json.dumps(value, **JSON_DUMPS)
    return Markup(text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026").replace("'", "\\u0027"))


class Environment:
    """What the generated code reads from `environment`: attribute and item lookup, filters, concat."""

    concat = "".join
    filters: dict[str, Callable[..., Any]] = {"safe": Markup, "tojson": tojson}

    @staticmethod
    def getattr(obj: Any, attribute: str) -> Any:
        """`obj.attribute`, else `obj[attribute]` (Jinja2's order); missing is an error (StrictUndefined)."""
        try:
            return getattr(obj, attribute)
        except AttributeError:
            pass
        try:
            return obj[attribute]
        except (TypeError, LookupError):
            raise TemplateRuntimeError(f"{type(obj).__name__} has no attribute {attribute!r}") from None

    @staticmethod
    def getitem(obj: Any, argument: Any) -> Any:
        try:
            return obj[argument]
        except (AttributeError, TypeError, LookupError):
            raise TemplateRuntimeError(f"{type(obj).__name__} has no item {argument!r}") from None

    @staticmethod
    def undefined(hint: str | None = None, name: str | None = None, **_: Any) -> Any:
        raise TemplateRuntimeError(hint or f"{name!r} is undefined")


class EvalContext:
    autoescape = True


class Context:
    """The render's variables; the template's own (macros) go in `vars`."""

    def __init__(self, variables: dict[str, Any]) -> None:
        self.parent = variables
        self.vars: dict[str, Any] = {}
        self.exported_vars: set[str] = set()
        self.eval_ctx = EvalContext()

    def resolve_or_missing(self, key: str) -> Any:
        if key in self.vars:
            return self.vars[key]
        return self.parent.get(key, missing)

    def call(self, function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        kwargs.pop("_loop_vars", None)
        kwargs.pop("_block_vars", None)
        return function(*args, **kwargs)


class Macro:
    """A `{% macro %}` with positional arguments only (no caller, varargs or keyword arguments)."""

    def __init__(
        self,
        _environment: Any,
        func: Callable[..., str],
        name: str,
        arguments: tuple[str, ...],
        catch_kwargs: bool,
        catch_varargs: bool,
        caller: bool,
        default_autoescape: bool,
    ) -> None:
        if catch_kwargs or catch_varargs or caller:
            _unsupported()
        self.func, self.name, self.arguments, self.autoescape = func, name, arguments, default_autoescape

    def __call__(self, *args: Any) -> Any:
        if len(args) != len(self.arguments):
            raise TemplateRuntimeError(f"macro {self.name!r} takes {len(self.arguments)} arguments, got {len(args)}")
        text = self.func(*args)
        return Markup(text) if self.autoescape else text


class Template:
    """The precompiled module's `root` rendered with this runtime: `Template(module).render(variables)`."""

    def __init__(self, root: Callable[[Context], Iterator[str]]) -> None:
        self.root = root

    def render(self, variables: dict[str, Any]) -> str:
        return "".join(self.root(Context(variables)))


ENVIRONMENT = Environment()

__all__ = [
    "ENVIRONMENT",
    "UNSUPPORTED",
    "Context",
    "LoopContext",
    "Macro",
    "Markup",
    "Namespace",
    "Template",
    "TemplateNotFound",
    "TemplateReference",
    "TemplateRuntimeError",
    "Undefined",
    "escape",
    "identity",
    "internalcode",
    "markup_join",
    "missing",
    "str_join",
]
