"""xlalint: find and fix PyTorch code that runs badly on XLA devices."""

__version__ = "0.1.0"
