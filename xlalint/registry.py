"""All rules by code, and the selection logic of `select`/`extend-select`/`ignore`.

Selectors are codes (`XLA101`), prefixes (`XLA1`, `XLA`) or `ALL`, as in ruff. The enabled
set is: `select` (or the default-on rules when unset), plus `extend-select`, minus `ignore`.
"""

from __future__ import annotations

import difflib
import importlib
import pkgutil
from collections.abc import Iterable
from functools import cache

from xlalint import rules as rules_package
from xlalint.rule import Rule


class UnknownSelectorError(ValueError):
    """A selector that matches no rule code."""


@cache
def all_rules() -> dict[str, type[Rule]]:
    """Every rule shipped with xlalint, by code, in code order."""
    found: dict[str, type[Rule]] = {}
    for info in pkgutil.iter_modules(rules_package.__path__):
        module = importlib.import_module(f"{rules_package.__name__}.{info.name}")
        for value in vars(module).values():
            if isinstance(value, type) and issubclass(value, Rule) and "code" in vars(value):
                if value.code in found and found[value.code] is not value:
                    raise RuntimeError(f"rule code {value.code} is defined twice")
                found[value.code] = value
    return dict(sorted(found.items()))


def get_rule(code: str) -> type[Rule] | None:
    rules = all_rules()
    if code.upper() in rules:
        return rules[code.upper()]
    by_name = {rule.name: rule for rule in rules.values()}
    return by_name.get(code)


def expand(selector: str) -> list[str]:
    """The codes a selector stands for; raises UnknownSelectorError if none."""
    selector = selector.strip().upper()
    codes = list(all_rules())
    if selector == "ALL":
        return codes
    matched = [code for code in codes if code.startswith(selector)]
    if not matched:
        raise UnknownSelectorError(selector)
    return matched


def did_you_mean(word: str, candidates: Iterable[str]) -> str:
    """` (did you mean `X`?)` for the candidate closest to a mistyped `word`, else ``."""
    match = difflib.get_close_matches(word, list(candidates), n=1, cutoff=0.75)
    return f" (did you mean `{match[0]}`?)" if match else ""


def unknown_selectors_message(unknown: Iterable[str]) -> str:
    """`unknown rule code(s) XLA1011 (did you mean `XLA101`?)`, for each unknown selector."""
    codes = list(all_rules())
    named = ", ".join(f"{u}{did_you_mean(u.strip().upper(), codes)}" for u in unknown)
    return f"unknown rule code(s) {named}"


def validate_selectors(selectors: Iterable[str]) -> list[str]:
    """The selectors that match no rule."""
    unknown = []
    for selector in selectors:
        try:
            expand(selector)
        except UnknownSelectorError:
            unknown.append(selector)
    return unknown


def select_rules(
    select: Iterable[str] | None,
    extend_select: Iterable[str] = (),
    ignore: Iterable[str] = (),
) -> list[type[Rule]]:
    rules = all_rules()
    if select is None:
        enabled = {code for code, rule in rules.items() if rule.default_enabled}
    else:
        enabled = {code for selector in select for code in expand(selector)}
    enabled |= {code for selector in extend_select for code in expand(selector)}
    enabled -= {code for selector in ignore for code in expand(selector)}
    return [rule for code, rule in rules.items() if code in enabled]
