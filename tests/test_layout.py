"""The package stays in small modules: none over 500 lines (the structure issue's rule), so a module that
grows past it is split along its data flow before it lands."""

from __future__ import annotations

import os
from pathlib import Path

import vx_eval

LIMIT = 500


def test_no_module_of_the_package_passes_500_lines():
    root = Path(vx_eval.__file__).resolve().parent
    modules = sorted(
        {(Path(folder) / name).resolve() for folder, _, names in os.walk(root, followlinks=True) for name in names}
    )
    modules = [p for p in modules if p.suffix == ".py"]
    assert len(modules) > 100  # the whole package, core/ and plugins/ through their links included
    long = {str(p): n for p in modules if (n := len(p.read_text().splitlines())) > LIMIT}
    assert long == {}
