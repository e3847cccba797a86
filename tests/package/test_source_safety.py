"""Hostile input (issue 8): nothing in autogemm's own code evaluates text or unpickles data, and no child
process goes through a shell, so a forged profile, checkpoint or reply can at most be rejected."""

from __future__ import annotations

import ast
from pathlib import Path

import autogemm

#: Modules that turn bytes into live objects, and builtins that run text as code.
UNSAFE_MODULES = {"pickle", "cPickle", "marshal", "shelve", "dill", "cloudpickle", "joblib"}
UNSAFE_CALLS = {"eval", "exec", "compile", "__import__"}


def unsafe(source: str) -> list[str]:
    """What in ``source`` could run data as code: unsafe imports and calls, ``os.system``, shells."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [f"import {a.name}" for a in node.names if a.name.split(".")[0] in UNSAFE_MODULES]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in UNSAFE_MODULES:
            found.append(f"from {node.module} import")
        elif isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name) and func.id in UNSAFE_CALLS:
                found.append(f"{func.id}()")
            if isinstance(func, ast.Attribute) and func.attr in ("system", "popen") and \
                    isinstance(func.value, ast.Name) and func.value.id == "os":
                found.append(f"os.{func.attr}()")
            found += [f"{ast.unparse(func)}(shell=True)" for kw in node.keywords
                      if kw.arg == "shell" and not (isinstance(kw.value, ast.Constant) and kw.value.value is False)]
    return found


def test_the_scan_finds_each_kind_of_unsafe_code():
    bad = ("import pickle\nfrom marshal import loads\neval('1')\nexec('x = 1')\nimport os\nos.system('ls')\n"
           "import subprocess\nsubprocess.run('ls', shell=True)\n")
    assert len(unsafe(bad)) == 6
    assert unsafe("import json\njson.loads('{}')\nsubprocess.run(['ls'], shell=False)\n") == []


def test_no_module_of_autogemm_runs_data_as_code():
    root = Path(autogemm.__file__).parent
    files = sorted(root.rglob("*.py"))
    assert len(files) > 50
    found = {str(f.relative_to(root)): problems for f in files if (problems := unsafe(f.read_text(encoding="utf-8")))}
    assert found == {}
