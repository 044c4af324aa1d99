"""The runtime harness: run code on an XLA device and measure what it costs.

Nothing here imports torch at module level: the linter must work without the `runtime`
extra. Only the child processes (`child.py`) import torch and torch_xla.
"""

DEVICES = ("auto", "cpu", "tpu")  # here, not in runner.py: the CLI's options name them at start-up
