"""Shared analyses the rules ask for through `xlalint.context.FileContext`."""
