"""Run a user's script as `__main__`, then save torch_xla's metrics for `xlalint profile`.

    python -m xlalint.harness.script_child OUT.json SCRIPT [ARGS...]
    python -m xlalint.harness.script_child OUT.json -m MODULE [ARGS...]

The script sees the same `sys.argv` as under plain `python`. The metrics are written when
the interpreter exits, however the script ends (return, `sys.exit`, an exception).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import runpy
import sys
from pathlib import Path

from xlalint.harness.child import metrics


def _save(out: Path) -> None:
    if "torch_xla" not in sys.modules:
        out.write_text(json.dumps({"imported_torch_xla": False}), encoding="utf-8")
        return
    import torch_xla

    # Work the script left pending counts too; a broken runtime must not hide its own error.
    with contextlib.suppress(Exception):
        torch_xla.sync(wait=True)
    out.write_text(json.dumps({"imported_torch_xla": True, **metrics()}), encoding="utf-8")


def main() -> None:
    out = Path(sys.argv[1])
    atexit.register(_save, out)
    if sys.argv[2] == "-m":
        sys.argv = sys.argv[3:]
        runpy.run_module(sys.argv[0], run_name="__main__", alter_sys=True)
    else:
        sys.argv = sys.argv[2:]
        script = Path(sys.argv[0]).resolve()  # absolute, so frames name it unambiguously
        sys.path.insert(0, str(script.parent))
        runpy.run_path(str(script), run_name="__main__")


if __name__ == "__main__":
    main()
