"""Builtin dialect families, one module per body shape; importing a module registers its specs."""
