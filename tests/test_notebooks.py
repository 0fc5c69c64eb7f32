"""The notebooks run top to bottom; a cell that raises fails the build."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import tooldialect

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"


@pytest.mark.model
@pytest.mark.slow
@pytest.mark.parametrize("name", ["quickstart.ipynb", "agent.ipynb"], ids=["quickstart", "agent"])
def test_notebook_runs(name: str, qwen_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    nbformat = pytest.importorskip("nbformat", reason="pip install -e '.[test]' brings nbclient")
    nbclient = pytest.importorskip("nbclient", reason="pip install -e '.[test]' brings nbclient")
    # the kernel imports the tooldialect these tests import (a relative PYTHONPATH would not
    # survive the kernel's working directory, the notebooks folder)
    package_root = str(Path(tooldialect.__file__).resolve().parent.parent)
    path = os.environ.get("PYTHONPATH", "")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([package_root, *filter(None, [path])]))
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    client = nbclient.NotebookClient(
        nb,
        timeout=1800,  # a guard against a hung kernel, not a speed goal
        kernel_name="python3",
        resources={"metadata": {"path": str(NOTEBOOKS)}},
    )
    client.execute()  # raises CellExecutionError naming the cell when one raises
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    text = "".join(o.get("text", "") for o in outputs if o.get("output_type") == "stream")
    if name == "agent.ipynb":
        assert "-> get_weather(" in text and "outcome:" in text
        tables = [o for o in outputs if "text/markdown" in o.get("data", {})]
        assert tables and "| step | prompt tokens" in tables[0]["data"]["text/markdown"]
    else:
        assert "get_weather" in text
