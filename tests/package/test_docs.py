"""The documentation is true to the code: every Python example in the README and in docs/ runs as a user
would run it and its assertions hold; the site builds in strict mode (every link, page and API reference
resolves); and the code is ruff clean."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
EXAMPLES = [(page, source) for page in PAGES
            for source in re.findall(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), flags=re.S)]


def test_the_docs_have_examples():
    assert len(EXAMPLES) >= 8 and {page.name for page, _ in EXAMPLES} >= {"README.md", "gemm.md", "routines.md"}


@pytest.mark.parametrize("page, source", EXAMPLES,
                         ids=[f"{page.relative_to(ROOT)}-{i}" for i, (page, _) in enumerate(EXAMPLES)])
def test_example_runs(page, source, tmp_path):
    if "import torch" in source and not _torch_on_a_gpu():
        pytest.skip("the example multiplies torch tensors on a CUDA GPU")
    script = tmp_path / "example.py"
    script.write_text(source, encoding="utf-8")
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]


def _torch_on_a_gpu() -> bool:
    try:
        import torch
    except Exception:       # noqa: BLE001 - absent, or broken where it is installed
        return False
    return torch.cuda.is_available()


def test_the_site_builds_in_strict_mode(tmp_path):
    run = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert (tmp_path / "site" / "api" / "calls" / "index.html").read_text().count("gemm_batched") > 0


def test_the_code_is_ruff_clean():
    run = subprocess.run([sys.executable, "-m", "ruff", "check", "src", "tests", "tools"], cwd=ROOT,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-3000:]
