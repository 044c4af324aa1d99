"""xlalint's rules, one module per rule, discovered by `xlalint.registry`."""
