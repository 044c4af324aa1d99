"""A call's arguments: which parameter each binds to, and keyword edits for fixes.

A value followed from a loop into a helper (XLA207's ints, XLA101's tensors handed to a
helper that reads them) and a library call read by parameter name (XLA205's DataLoader)
both need to know which parameter each argument binds to: `bind` answers that once, for a
`Signature` read from the helper's definition (`signature_of`) or written down for a
library function.

Keyword edits, the smallest possible: a fix that adds `drop_last=True` or `device=device`
to a call should touch nothing else: other fixes may edit the other arguments in the same
round, and comments and line breaks inside the call must survive. These helpers return
`(node, text)` replacements for `Rule.fix`, or a rebuilt call node where the whole
expression is rewritten anyway.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst


def keyword_argument(call: cst.Call, keyword: str) -> cst.Arg | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == keyword:
            return arg
    return None


def append_keyword(
    call: cst.Call, module: cst.Module, keyword: str, value: str
) -> tuple[cst.CSTNode, str] | None:
    """A replacement that appends `keyword=value` after the call's last argument.

    The text goes right after the last argument's value, before its trailing comma if it
    has one, so the call's layout is kept: `f(a,\\n  b,\\n)` becomes
    `f(a,\\n  b, keyword=value,\\n)`. None where no edit that small exists (the last value
    spans several lines and no trailing comma or same-line whitespace follows it).
    """
    text = f"{keyword}={value}"
    if not call.args:
        before = call.whitespace_before_args
        if isinstance(before, cst.SimpleWhitespace):
            return before, f"{before.value}{text}"
        return None
    last = call.args[-1]
    comma = last.comma
    if isinstance(comma, cst.Comma) and isinstance(comma.whitespace_before, cst.SimpleWhitespace):
        # `b,` -> `b, keyword=value,`: the text takes the place of the space before the comma.
        return comma.whitespace_before, f", {text}{comma.whitespace_before.value}"
    after = last.whitespace_after_arg
    if not isinstance(comma, cst.Comma) and isinstance(after, cst.SimpleWhitespace):
        return after, f", {text}{after.value}"
    value_code = module.code_for_node(last.value)
    if "\n" not in value_code and "\r" not in value_code:
        return last.value, f"{value_code}, {text}"
    return None


def with_keyword(call: cst.Call, keyword: str, value: cst.BaseExpression) -> cst.Call:
    """`call` with `keyword=value` set: the existing argument's value replaced, else a new
    keyword argument appended (after a trailing comma, if any, which stays last)."""
    existing = keyword_argument(call, keyword)
    if existing is not None:
        return call.with_changes(
            args=[a.with_changes(value=value) if a is existing else a for a in call.args]
        )
    new = cst.Arg(value=value, keyword=cst.Name(keyword), equal=_tight_equal())
    args = list(call.args)
    if args:
        last = args[-1]
        if isinstance(last.comma, cst.Comma):
            new = new.with_changes(comma=last.comma)
        args[-1] = last.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
    return call.with_changes(args=[*args, new])


def _tight_equal() -> cst.AssignEqual:
    return cst.AssignEqual(
        whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")
    )


# -- a function's parameters -------------------------------------------------------------------
def positional_params(function: cst.FunctionDef | cst.Lambda) -> list[cst.Param]:
    """The parameters a call's positional arguments land on, in order: positional-only,
    then positional-or-keyword (`self` included: callers through an instance drop it)."""
    params = function.params
    return [*params.posonly_params, *params.params]


def is_staticmethod(function: cst.FunctionDef) -> bool:
    """`@staticmethod`: its callers' positional arguments start at its first parameter,
    where a method's callers through an instance skip `self`."""
    return any(
        isinstance(d.decorator, cst.Name) and d.decorator.value == "staticmethod"
        for d in function.decorators
    )


def positional_names(function: cst.FunctionDef | cst.Lambda) -> list[str]:
    """The names of `positional_params(function)`."""
    return [p.name.value for p in positional_params(function)]


def parameters(function: cst.FunctionDef | cst.Lambda, *, star: bool = False) -> list[cst.Param]:
    """A function's named parameters in declaration order: positional-only, then
    positional-or-keyword, then keyword-only; with `star`, `*args` and `**kwargs` too, in
    their places (a bare `*` names nothing)."""
    params = function.params
    if not star:
        return [*params.posonly_params, *params.params, *params.kwonly_params]
    found = positional_params(function)
    if isinstance(params.star_arg, cst.Param):
        found.append(params.star_arg)
    found.extend(params.kwonly_params)
    if isinstance(params.star_kwarg, cst.Param):
        found.append(params.star_kwarg)
    return found


def parameter(
    function: cst.FunctionDef | cst.Lambda, name: str, *, star: bool = False
) -> cst.Param | None:
    """The parameter of `function` called `name` (`star`: `*args`/`**kwargs` count)."""
    return next((p for p in parameters(function, star=star) if p.name.value == name), None)


# -- binding a call's arguments to a callee's parameters ---------------------------------------
@dataclass(frozen=True)
class Signature:
    """What a call's arguments can bind to: the positional parameters in order (None for a
    position whose parameter does not matter), the names a keyword may take (None: any,
    for a callee with `**kwargs` or one listed only in part), and whether positions past
    the list are taken by something else (`*args`, or parameters not listed)."""

    positional: tuple[str | None, ...]
    keywords: frozenset[str] | None
    open_positional: bool = False


def passed_names(function: cst.FunctionDef, is_method: bool) -> list[str]:
    """The names of the parameters a function's callers pass, in declaration order: a
    method's first parameter (`self`) is its instance, not an argument."""
    names = [param.name.value for param in parameters(function)]
    return names[1:] if is_method else names


def signature_of(function: cst.FunctionDef, is_method: bool) -> Signature:
    """A function's signature as its callers see it: a method called through its instance
    (`self.f(a)`, `obj.f(a)`) binds `a` to the parameter after `self`."""
    params = function.params
    positional = positional_names(function)
    if is_method:
        positional = positional[1:]
    keywords = {*positional, *(p.name.value for p in params.kwonly_params)}
    return Signature(
        tuple(positional),
        None if isinstance(params.star_kwarg, cst.Param) else frozenset(keywords),
        isinstance(params.star_arg, cst.Param),
    )


def bind(call: cst.Call, signature: Signature) -> dict[str, cst.BaseExpression] | None:
    """The call's argument for each parameter it passes; None where the call cannot be
    matched (`*args`/`**kwargs` at the call, more positional arguments than a closed
    signature takes, a keyword it does not know). Parameters left out take their
    defaults, the same on every call."""
    bound: dict[str, cst.BaseExpression] = {}
    position = 0
    for arg in call.args:
        if arg.star:
            return None
        if arg.keyword is None:
            if position < len(signature.positional):
                name = signature.positional[position]
                if name is not None:
                    bound[name] = arg.value
            elif not signature.open_positional:
                return None
            position += 1
        elif signature.keywords is None or arg.keyword.value in signature.keywords:
            bound[arg.keyword.value] = arg.value
        else:
            return None
    return bound


def star_arguments(call: cst.Call, signature: Signature) -> list[cst.BaseExpression]:
    """The positional arguments a callee's `*args` collects: those past its named ones."""
    positional = [arg.value for arg in call.args if arg.keyword is None and not arg.star]
    return positional[len(signature.positional) :]
