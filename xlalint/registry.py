"""All rules by code, and the selection logic of `select`/`extend-select`/`ignore`.

Selectors are codes (`XLA101`), prefixes (`XLA1`, `XLA`) or `ALL`, as in ruff. The enabled
set is: `select` (or the default-on rules when unset), plus `extend-select`, minus `ignore`.

Selection works on the rule index (`rule_index.py`, generated with the docs), not on the
rule classes: importing the rules imports libcst (~0.2 s), which a run answered from the
cache never needs. `select_rules` returns a `RuleSet` that imports its classes on first use.
"""

from __future__ import annotations

import importlib
import json
import pkgutil
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from typing import overload

from xlalint import rules as rules_package
from xlalint.rule import Rule

INDEX_MODULE = "xlalint.rule_index"


class UnknownSelectorError(ValueError):
    """A selector that matches no rule code."""


@dataclass(frozen=True)
class RuleInfo:
    """What selection and the cache key need of a rule, known without importing it."""

    code: str
    name: str
    module: str
    qualname: str
    default_enabled: bool
    # The rule's text prefilter (`Rule.triggers`, `Rule.needs_torch`), so that a file
    # imports only the rules it may trigger.
    triggers: tuple[str, ...] = ()
    needs_torch: bool = False

    @classmethod
    def of(cls, rule: type[Rule]) -> RuleInfo:
        return cls(
            rule.code,
            rule.name,
            rule.__module__,
            rule.__qualname__,
            rule.default_enabled,
            tuple(rule.triggers),
            rule.needs_torch,
        )

    def may_flag(self, text: str) -> bool:
        """The rule's prefilter (`engine.rules_for_text`): its trigger strings occur in
        `text` (a rule without triggers always runs), and `torch` does if it needs torch."""
        return (not self.triggers or any(t in text for t in self.triggers)) and (
            not self.needs_torch or "torch" in text
        )

    @property
    def id(self) -> str:
        """The rule's identity in cache keys: where its class lives, and its code."""
        return f"{self.module}.{self.qualname}:{self.code}"

    def load(self) -> type[Rule]:
        rule = getattr(importlib.import_module(self.module), self.qualname, None)
        if not (isinstance(rule, type) and issubclass(rule, Rule) and RuleInfo.of(rule) == self):
            raise RuntimeError(
                f"{INDEX_MODULE} is stale for {self.code}: run `python -m xlalint.docgen`"
            )
        return rule


class RuleSet(Sequence[type[Rule]]):
    """Rules named by their index entries, imported on first use (iteration, indexing).

    Length, codes and cache identities are answered from the entries alone; pickled (for
    worker processes) as its entries."""

    __slots__ = ("_classes", "infos")

    def __init__(self, infos: Iterable[RuleInfo]) -> None:
        self.infos = tuple(infos)
        self._classes: tuple[type[Rule], ...] | None = None

    @property
    def codes(self) -> tuple[str, ...]:
        return tuple(info.code for info in self.infos)

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(info.id for info in self.infos)

    def for_text(self, text: str) -> RuleSet:
        """The rules whose prefilter `text` passes, their classes not yet imported."""
        return RuleSet(info for info in self.infos if info.may_flag(text))

    def without(self, codes: Iterable[str]) -> RuleSet:
        dropped = set(codes)
        return RuleSet(info for info in self.infos if info.code not in dropped)

    def _loaded(self) -> tuple[type[Rule], ...]:
        if self._classes is None:
            self._classes = tuple(info.load() for info in self.infos)
        return self._classes

    def __len__(self) -> int:
        return len(self.infos)

    def __iter__(self) -> Iterator[type[Rule]]:
        return iter(self._loaded())

    @overload
    def __getitem__(self, index: int) -> type[Rule]: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[type[Rule], ...]: ...
    def __getitem__(self, index: int | slice) -> type[Rule] | tuple[type[Rule], ...]:
        return self._loaded()[index]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RuleSet) and other.infos == self.infos

    def __hash__(self) -> int:
        return hash(self.infos)

    def __reduce__(self) -> tuple[type[RuleSet], tuple[tuple[RuleInfo, ...]]]:
        return RuleSet, (self.infos,)

    def __repr__(self) -> str:
        return f"RuleSet({', '.join(self.codes)})"


def rule_ids(rules: Sequence[type[Rule]]) -> tuple[str, ...]:
    """The cache identities of `rules`, without importing a `RuleSet`'s classes."""
    if isinstance(rules, RuleSet):
        return rules.ids
    return tuple(RuleInfo.of(rule).id for rule in rules)


def rule_modules() -> list[str]:
    """The modules of the rules package (rules and their shared bases)."""
    return sorted(info.name for info in pkgutil.iter_modules(rules_package.__path__))


@cache
def catalogue() -> dict[str, RuleInfo]:
    """Every rule's index entry, by code, in code order: from the generated index while it
    lists the rule modules there are, else from the rule classes themselves."""
    try:
        index = importlib.import_module(INDEX_MODULE)
        if list(index.MODULES) == rule_modules():
            return {
                row[0]: RuleInfo(*row, index.TRIGGERS[row[0]], row[0] in index.NEEDS_TORCH)
                for row in index.RULES
            }
    except (ImportError, AttributeError, TypeError, KeyError):
        pass
    return {code: RuleInfo.of(rule) for code, rule in all_rules().items()}


def index_source() -> str:
    """The text of `rule_index.py` for the rules as they are (written by docgen), in the
    layout `ruff format` gives it."""
    rows = []
    for rule in all_rules().values():
        info = RuleInfo.of(rule)
        fields = [f'"{info.code}"', f'"{info.name}"', f'"{info.module}"', f'"{info.qualname}"']
        fields.append(str(info.default_enabled))
        line = f"    ({', '.join(fields)}),"
        if len(line) > 100:
            line = "    (\n" + "".join(f"        {field},\n" for field in fields) + "    ),"
        rows.append(line + "\n")
    modules = "".join(f'    "{name}",\n' for name in rule_modules())
    triggers = "".join(_triggers_entry(rule) for rule in all_rules().values())
    needs_torch = "".join(f'    "{c}",\n' for c, rule in all_rules().items() if rule.needs_torch)
    return (
        '"""Every rule\'s code, name, class, default and text prefilter, for selection, cache\n'
        "keys and the prefilter without importing the rules (and libcst). Generated by\n"
        "`python -m xlalint.docgen`; do not edit: a test fails when it differs from the\n"
        'rules."""\n\n'
        f"RULES = (\n{''.join(rows)})\nMODULES = (\n{modules})\n"
        f"TRIGGERS = {{\n{triggers}}}\nNEEDS_TORCH = (\n{needs_torch})\n"
    )


def _triggers_entry(rule: type[Rule]) -> str:
    """`    "XLA101": (".item(", "float("),` as `ruff format` lays it out (one string a
    line where the entry is longer than a line)."""
    strings = [json.dumps(trigger) for trigger in rule.triggers]
    tuple_text = f"({', '.join(strings)}{',' if len(strings) == 1 else ''})"
    line = f'    "{rule.code}": {tuple_text},\n'
    if len(line) <= 101:  # 100 characters and the newline
        return line
    return f'    "{rule.code}": (\n' + "".join(f"        {s},\n" for s in strings) + "    ),\n"


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
    codes = list(catalogue())
    if selector == "ALL":
        return codes
    matched = [code for code in codes if code.startswith(selector)]
    if not matched:
        raise UnknownSelectorError(selector)
    return matched


def did_you_mean(word: str, candidates: Iterable[str]) -> str:
    """` (did you mean `X`?)` for the candidate closest to a mistyped `word`, else ``."""
    import difflib  # only a misspelt name needs it

    match = difflib.get_close_matches(word, list(candidates), n=1, cutoff=0.75)
    return f" (did you mean `{match[0]}`?)" if match else ""


def unknown_selectors_message(unknown: Iterable[str]) -> str:
    """`unknown rule code(s) XLA1011 (did you mean `XLA101`?)`, for each unknown selector."""
    codes = list(catalogue())
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
) -> RuleSet:
    """The enabled rules, in code order (imported when first used)."""
    rules = catalogue()
    if select is None:
        enabled = {code for code, rule in rules.items() if rule.default_enabled}
    else:
        enabled = {code for selector in select for code in expand(selector)}
    enabled |= {code for selector in extend_select for code in expand(selector)}
    enabled -= {code for selector in ignore for code in expand(selector)}
    return RuleSet(rule for code, rule in rules.items() if code in enabled)
