"""Adding or changing a call's keyword argument with the smallest possible edit.

A fix that adds `drop_last=True` or `device=device` to a call should touch nothing else:
other fixes may edit the other arguments in the same round, and comments and line breaks
inside the call must survive. These helpers return `(node, text)` replacements for
`Rule.fix`, or a rebuilt call node where the whole expression is rewritten anyway.
"""

from __future__ import annotations

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
