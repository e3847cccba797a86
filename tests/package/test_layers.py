"""The package's imports follow the layer table of ``docs/architecture.md``: read from that page, so that
the page and the code cannot drift apart. Imports inside functions count as much as those at the top."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "src" / "autogemm"


def layers() -> tuple[dict[str, tuple[int, int]], set[str]]:
    """Each top-level folder's (layer, place in its row) and the modules beside the layers, from the page."""
    page = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    rank = {}
    for layer, folders in re.findall(r"^\| (\d+) \| ([^|]+) \|", page, re.M):
        for place, name in enumerate(re.findall(r"`(\w+)/`", folders)):
            rank[name] = (int(layer), place)
    beside = re.search(r"^Beside them: (.*?)\n\n", page, re.M | re.S).group(1)
    return rank, set(re.findall(r"`(\w+)`", beside))


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path) -> set[str]:
    """The autogemm modules ``path`` imports anywhere in it (``from . import x`` counts as ``x`` where x is
    a module, else as the package)."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.startswith("autogemm"))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            elif node.module and node.module.startswith("autogemm"):
                target = node.module
            else:
                continue
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                found.add(sub if sub in MODULES else target)
    return {m for m in found if m in MODULES and m != name}


MODULES = {module_name(p): p for p in PACKAGE.rglob("*.py")}
GRAPH = {name: imports(path) for name, path in MODULES.items()}


def place(module: str) -> tuple[str, str | None]:
    """(kind, folder): 'layer' and its top-level folder, 'beside' and the module, or 'top' (the package
    itself and ``__main__``)."""
    parts = module.split(".")
    if len(parts) == 1 or parts[1] == "__main__":
        return "top", None
    return ("layer" if (PACKAGE / parts[1]).is_dir() else "beside"), parts[1]


def test_the_page_names_every_folder_and_module():
    rank, beside = layers()
    folders = {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert folders == set(rank), "folders and the layer table differ"
    modules = {p.stem for p in PACKAGE.glob("*.py") if p.stem not in ("__init__", "__main__")}
    assert modules == beside, "modules beside the layers and the page differ"


def test_no_module_imports_a_higher_layer():
    rank, beside = layers()
    wrong = []
    for module, targets in GRAPH.items():
        kind, folder = place(module)
        for target in targets:
            target_kind, target_folder = place(target)
            if kind == "top" or target_folder == folder:
                continue
            if target_kind == "top":
                wrong.append(f"{module} -> {target}")
            elif kind == "beside":
                if target_kind != "beside":
                    wrong.append(f"{module} -> {target} (beside the layers)")
            elif target_kind == "layer" and rank[target_folder] >= rank[folder]:
                wrong.append(f"{module} -> {target} (layer {rank[folder]} imports {rank[target_folder]})")
    assert not wrong, "\n".join(sorted(wrong))


def test_no_import_cycle():
    """Depth-first over every import, the lazy ones included: a cycle names its modules."""
    state: dict[str, int] = {}
    stack: list[str] = []
    cycles = []

    def visit(module: str) -> None:
        state[module] = 1
        stack.append(module)
        for target in sorted(GRAPH[module]):
            if state.get(target) == 1:
                cycles.append(" -> ".join(stack[stack.index(target):] + [target]))
            elif target not in state:
                visit(target)
        stack.pop()
        state[module] = 2

    for module in sorted(GRAPH):
        if module not in state:
            visit(module)
    assert not cycles, "\n".join(cycles)


@pytest.mark.parametrize("check, source, target", [
    (test_no_import_cycle, "autogemm.blas.launch_plan", "autogemm.blas.selection"),
    (test_no_module_imports_a_higher_layer, "autogemm.runtime.opencl.device", "autogemm.api.gemm"),
    (test_no_module_imports_a_higher_layer, "autogemm.dask.tasks", "autogemm.bench.runner"),
    (test_no_module_imports_a_higher_layer, "autogemm.dtypes", "autogemm.runtime.opencl.device")])
def test_the_checks_see_a_forbidden_import(monkeypatch, check, source, target):
    """An import added to the graph against the page fails its check (the checks are not vacuous)."""
    monkeypatch.setitem(GRAPH, source, GRAPH[source] | {target})
    with pytest.raises(AssertionError, match=source):
        check()


#: Each runtime's own library and the backend package that alone may import it.
RUNTIME_LIBRARIES = {"pyopencl": "autogemm.runtime.opencl", "cuda": "autogemm.runtime.cuda"}


def runtime_imports(path: Path) -> set[str]:
    """The runtime libraries (``RUNTIME_LIBRARIES``) ``path`` imports anywhere in it."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names = ([alias.name for alias in node.names] if isinstance(node, ast.Import) else
                 [node.module] if isinstance(node, ast.ImportFrom) and node.module and not node.level else [])
        found.update(name.split(".")[0] for name in names if name.split(".")[0] in RUNTIME_LIBRARIES)
    return found


def outside_their_backend(sources: dict[str, Path]) -> list[str]:
    """'module -> library' for each runtime library imported outside its backend package."""
    return sorted(f"{module} -> {library}" for module, path in sources.items() for library in runtime_imports(path)
                  if not (module + ".").startswith(RUNTIME_LIBRARIES[library] + "."))


def test_each_runtime_library_is_imported_only_behind_its_backend_seam():
    """pyopencl only in ``runtime.opencl``, the CUDA bindings only in ``runtime.cuda``: the layers above
    reach a runtime through its package (``runtime.opencl.commands``, ``runtime.cuda``)."""
    assert not outside_their_backend(MODULES), "\n".join(outside_their_backend(MODULES))


def test_the_seam_check_sees_pyopencl_imported_above_it(tmp_path):
    source = tmp_path / "launch.py"
    source.write_text("def f():\n    import pyopencl.array as cl_array\n")
    assert outside_their_backend({"autogemm.blas.launch": source}) == ["autogemm.blas.launch -> pyopencl"]
    assert outside_their_backend({"autogemm.runtime.opencl.extra": source}) == []
