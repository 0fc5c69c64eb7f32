"""Reproducible speed and accuracy benchmarks for tooldialect (run ``python bench/run.py``)."""
