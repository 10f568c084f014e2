"""Build and install dcgym.

One import namespace, ``dcgym``, is assembled from the root folders
(``cli/`` -> ``dcgym`` itself, the command-line fronts ``dcgym.train``,
``dcgym.evaluate``, ...; ``envs/`` -> ``dcgym.envs``, ``agents/`` ->
``dcgym.agents``, ``cpp_core/`` -> ``dcgym.cpp_core``, ``configs/`` ->
``dcgym.configs``, the scenario and experiment files) and the private
pybind11 extension ``dcgym.cpp_core._engine`` is compiled from
``cpp_core/``. Metadata and the
pinned dependencies live in ``pyproject.toml``.
"""

import os
from pathlib import Path

from pybind11.setup_helpers import ParallelCompile, Pybind11Extension, build_ext
from setuptools import setup

ROOT = Path(__file__).parent.resolve()
ROOT_FOLDERS = {"envs": "envs", "agents": "agents", "cpp_core": "cpp_core", "configs": "configs"}


def find_packages_under(folder: str, prefix: str) -> list[str]:
    """Every folder with an ``__init__.py`` below ``folder``, as dotted names under ``prefix``."""
    packages = []
    for init in sorted((ROOT / folder).rglob("__init__.py")):
        rel = init.parent.relative_to(ROOT / folder)
        packages.append(".".join([prefix, *rel.parts]))
    return packages


packages = ["dcgym"]
package_dir = {"dcgym": "cli"}
for name, folder in ROOT_FOLDERS.items():
    for pkg in find_packages_under(folder, f"dcgym.{name}"):
        packages.append(pkg)
        package_dir[pkg] = str(Path(folder, *pkg.split(".")[2:]))

# The policy zoo (zoo/*.dcpol and their cards) ships as data beside the code: dcgym/zoo in a wheel.
packages.append("dcgym.zoo")
package_dir["dcgym.zoo"] = "zoo"


def needs_recompile(obj: str, src: str) -> bool:
    """Recompile an object older than its source or than any header (``make build`` reuses objects).

    Header dependencies are not tracked per file: a changed header recompiles everything, which is
    always correct and only slower than it could be.
    """
    target = Path(obj)
    if not target.exists():
        return True
    headers = [*ROOT.glob("cpp_core/include/**/*.hpp"), *ROOT.glob("cpp_core/bindings/*.hpp")]
    newest = max([Path(src).stat().st_mtime, *(h.stat().st_mtime for h in headers)])
    return target.stat().st_mtime < newest


ParallelCompile("DCGYM_BUILD_JOBS", default=0, needs_recompile=needs_recompile).install()

MODELS = ("kernel", "rack", "lb", "flow", "colo")
"""The C++ models, each compiled from its own folder ``cpp_core/src/<model>/`` (the runtime is header-only)."""


def model_sources(model: str) -> list[str]:
    """The implementation files of one model, sorted (an absent folder is a model without any)."""
    return sorted(str(p.relative_to(ROOT)) for p in (ROOT / "cpp_core/src" / model).glob("*.cpp"))


sources = [s for model in MODELS for s in model_sources(model)]
sources += sorted(str(p.relative_to(ROOT)) for p in (ROOT / "cpp_core/bindings").glob("*.cpp"))

engine = Pybind11Extension(
    "dcgym.cpp_core._engine",
    sources,
    # The headers too: without them a change to a header alone leaves the built module "up to date".
    depends=sorted(
        str(p.relative_to(ROOT))
        for p in [*ROOT.glob("cpp_core/include/**/*.hpp"), *ROOT.glob("cpp_core/bindings/*.hpp")]
    ),
    include_dirs=["cpp_core/include"],
    cxx_std=17,
    extra_compile_args=["-O3", "-Wall", "-Wextra"],
)

setup(
    packages=packages,
    package_dir=package_dir,
    package_data={
        "dcgym.cpp_core": ["*.pyi", "py.typed"],
        "dcgym.configs": ["scenarios/*/*.yaml", "experiments/*.yaml", "suites/*.yaml"],
        "dcgym.envs.colo": ["catalog.yaml"],
        "dcgym.zoo": ["*.dcpol", "*.md"],
    },
    # DCGYM_SKIP_EXTENSION=1: metadata and pure-Python packages only; `make build` then compiles the
    # extension in place (the Makefile's editable install, which keeps the objects between builds).
    ext_modules=[] if os.environ.get("DCGYM_SKIP_EXTENSION") == "1" else [engine],
    cmdclass={"build_ext": build_ext},
    zip_safe=False,
)
