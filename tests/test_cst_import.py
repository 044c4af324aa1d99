"""libcst's import with each dataclass method text compiled once (`xlalint/cst_import.py`):
the classes are the ones libcst's own import makes, function for function."""

from __future__ import annotations

import json
import subprocess
import sys

DUMP = """
import dataclasses, json, sys
if sys.argv[1] == "once":
    from xlalint.cst_import import import_libcst
    import_libcst()
import libcst
from libcst._nodes.base import CSTNode

def described(function):
    code = function.__code__
    return [
        function.__qualname__, function.__module__, code.co_code.hex(), repr(code.co_consts),
        code.co_names, code.co_varnames, code.co_freevars, code.co_filename, code.co_name,
        repr(function.__annotations__), repr(function.__defaults__),
        repr(function.__kwdefaults__), code.co_flags,
        sorted(function.__globals__)[:3], function.__globals__["__name__"],
    ]

found = {}
codes = {}
pending = [CSTNode]
while pending:
    cls = pending.pop()
    pending.extend(cls.__subclasses__())
    for name in ("__init__", "__repr__", "__eq__", "__setattr__", "__delattr__", "__hash__"):
        function = vars(cls).get(name)
        code = getattr(function, "__code__", None)
        if code is not None and code.co_filename == "<string>":  # written by `dataclasses`
            found[f"{cls.__module__}.{cls.__qualname__}.{name}"] = described(function)
            codes[f"{cls.__module__}.{cls.__qualname__}.{name}"] = function.__code__
distinct = len({id(code) for code in codes.values()})
print(json.dumps({"found": found, "codes": distinct, "exec": hasattr(dataclasses, "exec")}))
"""


def _dump(how: str) -> dict[str, object]:
    run = subprocess.run(
        [sys.executable, "-c", DUMP, how], capture_output=True, text=True, check=True
    )
    return json.loads(run.stdout)


def test_the_node_classes_are_libcsts_own() -> None:
    plain, once = _dump("plain"), _dump("once")
    assert len(plain["found"]) > 400  # type: ignore[arg-type]
    assert once["found"] == plain["found"]
    assert not once["exec"]  # `dataclasses` is left as it was


def test_each_text_is_compiled_once() -> None:
    """Methods of the same text share one code object (libcst's own import compiles each
    method anew)."""
    plain, once = _dump("plain"), _dump("once")
    found = len(once["found"])  # type: ignore[arg-type]
    assert plain["codes"] == found
    assert 0 < once["codes"] < 0.8 * found  # type: ignore[operator]


def test_a_second_call_imports_nothing() -> None:
    from xlalint.cst_import import import_libcst

    import_libcst()
    assert "libcst" in sys.modules
