"""The tree's contracts, kept by machines: layers, includes, style, and a repository that stands alone.

- Python layers (import-linter, contracts in pyproject.toml): the library imports no command-line front,
  environments import no agents, the engine package imports neither, families do not import each other,
  agents/ is in layers with every learning system in its own, and no import cycle anywhere.
- agents/ and the fronts use the engine's public facade (``dcgym.cpp_core``), never the compiled module.
- What must stay light stays light: the environments, the registry, experiment files and an evaluation of
  heuristics load neither torch nor Ray.
- C++ layers: the kernel includes only itself, the runtime only itself, a model (rack, lb, ...) the kernel,
  the runtime and itself; no model or runtime header includes Python.
- Style: ruff (lint and format) and clang-format report nothing.
- Nothing in the repository sends a reader to a file outside it.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from dcgym.agents.algorithms import LEARNING_SYSTEMS
from dcgym.agents.evaluation.family import EVALUATIONS
from dcgym.agents.heuristics import FAMILY_MODULES as HEURISTICS
from dcgym.envs.families import FAMILIES

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
# How the installed package maps onto the repository's folders (setup.py's package_dir).
PACKAGE_FOLDERS = {"envs": "envs", "agents": "agents", "cpp_core": "cpp_core", "configs": "configs"}
MODELS = ("rack", "lb", "flow", "colo")
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.MULTILINE)


def tracked(*patterns: str) -> list[Path]:
    out = subprocess.run(["git", "ls-files", *patterns], cwd=ROOT, capture_output=True, text=True, check=True)
    return [ROOT / line for line in out.stdout.splitlines() if (ROOT / line).is_file()]


def test_import_layers_hold(tmp_path):
    # import-linter reads a package from one folder; dcgym is assembled from several, so link them into one.
    package = tmp_path / "dcgym"
    package.mkdir()
    for f in (ROOT / "cli").glob("*.py"):
        (package / f.name).symlink_to(f)
    for name, folder in PACKAGE_FOLDERS.items():
        (package / name).symlink_to(ROOT / folder, target_is_directory=True)
    proc = subprocess.run(
        [BIN / "lint-imports", "--config", ROOT / "pyproject.toml", "--no-cache"],
        cwd=tmp_path,
        env={"PYTHONPATH": str(tmp_path), "PATH": str(BIN)},
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout[proc.stdout.find("Contracts") :] + proc.stderr
    assert "BROKEN" not in proc.stdout and proc.stdout.count("KEPT") >= 8


def test_every_family_is_in_every_registry_and_in_the_independence_contracts():
    assert set(EVALUATIONS) == set(HEURISTICS) == set(FAMILIES)
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    independent = [set(c["modules"]) for c in contracts if c["type"] == "independence"]
    for layer in ("dcgym.envs", "dcgym.agents.heuristics", "dcgym.agents.evaluation"):
        assert {f"{layer}.{f}" for f in FAMILIES} in independent, layer


def test_every_learning_system_is_a_layer_of_its_own_beside_the_others():
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    (layers,) = [c["layers"] for c in contracts if c["type"] == "layers" and c.get("containers") == ["dcgym.agents"]]
    systems = {s.name for s in LEARNING_SYSTEMS} - {"baselines"}  # the generic baselines live in the shared layer
    assert any({part.strip() for part in layer.split("|")} == systems for layer in layers), layers


def test_agents_and_fronts_use_the_engines_public_facade_only():
    private = re.compile(r"cpp_core\._engine|from dcgym\.cpp_core import .*\b_engine\b")
    offenders = [
        f"{p.relative_to(ROOT)}:{n}"
        for p in tracked("agents/*.py", "cli/*.py")
        for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if private.search(line)
    ]
    assert not offenders, offenders


LIGHT = {
    "environments": "import dcgym.envs",
    "the registry and experiment files": "from dcgym.agents.training.experiment import load_experiment; "
    "load_experiment('smoke')",
    "an evaluation of heuristics": "from dcgym.agents.evaluation import evaluate; "
    "evaluate('mm1', ['po2', 'jsq'], [0.5], tasks=1000, workers=0, progress=False)",
}


@pytest.mark.parametrize("code", LIGHT.values(), ids=LIGHT.keys())
def test_light_paths_load_neither_torch_nor_ray(code):
    proc = subprocess.run([sys.executable, "-X", "importtime", "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    loaded = {line.rpartition("|")[2].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")}
    assert "dcgym" in {name.partition(".")[0] for name in loaded}  # the import times were read
    assert not {"torch", "ray"} & loaded


def _includes(path: Path) -> list[str]:
    return INCLUDE.findall(path.read_text(encoding="utf-8"))


def _layer(path: Path) -> str | None:
    parts = path.relative_to(ROOT / "cpp_core").parts
    if parts[0] == "include":
        return parts[2]
    if parts[0] == "src":
        return parts[1]
    return None


@pytest.mark.parametrize("path", tracked("cpp_core/include/*.hpp", "cpp_core/src/*.cpp"), ids=lambda p: p.name)
def test_cpp_includes_follow_the_layers(path):
    layer = _layer(path)
    allowed = {"kernel": {"kernel"}, "runtime": {"runtime"}}.get(layer, {"kernel", "runtime", layer})
    for header in _includes(path):
        assert not header.startswith(("pybind11", "Python")), f"{path}: includes {header}"
        if header.startswith("dcgym/"):
            assert header.split("/")[1] in allowed, f"{path} ({layer}) includes {header}; allowed: {allowed}"


def test_every_model_folder_is_a_known_layer():
    layers = {p.name for p in (ROOT / "cpp_core/include/dcgym").iterdir()}
    assert layers <= {"kernel", "runtime", *MODELS}, layers
    assert {p.name for p in (ROOT / "cpp_core/src").iterdir()} <= {"kernel", *MODELS}


def test_ruff_finds_nothing_to_fix_or_reformat():
    for args in (["check", "."], ["format", "--check", "."]):
        proc = subprocess.run([BIN / "ruff", *args], cwd=ROOT, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stdout + proc.stderr


def test_clang_format_finds_nothing_to_reformat():
    files = tracked("*.cpp", "*.hpp")
    proc = subprocess.run(
        [BIN / "clang-format", "--dry-run", "--Werror", *files], cwd=ROOT, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr[:2000]


OUTSIDE = re.compile(
    r"DESIGN\.md|REFERENCE\.md|RLLIB_NOTES|STYLE\.md|\.\./shared|research/(flow|colo)\.md|\bseed 00\d\b|seeds/0\d\d"
)


def test_nothing_refers_to_files_outside_the_repository():
    offenders = [
        f"{p.relative_to(ROOT)}:{n}"
        for p in tracked()
        if p.suffix in (".py", ".md", ".hpp", ".cpp", ".yaml", ".toml", ".txt", "") and ".ci" not in p.parts
        for n, line in enumerate(p.read_text(encoding="utf-8", errors="replace").splitlines(), 1)
        if OUTSIDE.search(line) and p.name != "test_contracts.py"
    ]
    assert not offenders, offenders
