"""The one import namespace: every package folder imports as dcgym.<...>, nothing imports bare names."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

from dcgym.envs.scenario import list_scenarios

ROOT = Path(__file__).resolve().parents[1]
ROOT_FOLDERS = ("envs", "agents", "cpp_core", "configs")
SKIP = {".venv", ".git", "build", "dist", "out", "__pycache__", "node_modules"}


def _package_dirs() -> list[str]:
    return sorted(
        str(init.parent.relative_to(ROOT))
        for folder in ROOT_FOLDERS
        for init in (ROOT / folder).rglob("__init__.py")
        if not SKIP & set(init.relative_to(ROOT).parts)
    )


def _python_files() -> list[Path]:
    return sorted(p for p in ROOT.rglob("*.py") if not SKIP & set(p.relative_to(ROOT).parts))


@pytest.mark.parametrize("folder", _package_dirs())
def test_every_package_folder_imports_under_dcgym(folder):
    module = importlib.import_module("dcgym." + folder.replace("/", "."))
    assert Path(module.__file__).resolve().parent == (ROOT / folder).resolve()


def test_every_folder_with_python_code_is_a_package():
    packages = set(_package_dirs())
    loose = {
        str(p.parent.relative_to(ROOT))
        for p in _python_files()
        if p.relative_to(ROOT).parts[0] in ROOT_FOLDERS and str(p.parent.relative_to(ROOT)) not in packages
    }
    assert not loose, f"folders without __init__.py are not installed: {sorted(loose)}"


def test_nothing_imports_the_bare_root_folders():
    offenders = []
    for path in _python_files():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            offenders += [f"{path.relative_to(ROOT)}: {n}" for n in names if n.split(".")[0] in ROOT_FOLDERS]
    assert not offenders, "import dcgym.<...> instead: " + "; ".join(offenders)


def test_scenario_files_are_package_data():
    assert "malcolm_homog_exp" in list_scenarios()


def test_the_engine_depends_on_every_header():
    """build_ext rebuilds the module when any header is newer than it: a header-only change is not skipped as up
    to date (the objects then recompile by setup.py's needs_recompile)."""
    import os
    from distutils.core import run_setup

    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        dist = run_setup("setup.py", stop_after="init")
    finally:
        os.chdir(cwd)
    (engine,) = dist.ext_modules
    headers = {str(p.relative_to(ROOT)) for p in (ROOT / "cpp_core").rglob("*.hpp") if "tests" not in p.parts}
    assert headers and headers <= set(engine.depends), sorted(headers - set(engine.depends))
