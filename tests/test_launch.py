"""Launching a chapter outside the course's environment: the install cell, Binder, the URL.

Every notebook starts with the install cell that ``tools/notebooks.py install-cell`` writes from
pyproject.toml's repository URL. Where ``course_utils`` is installed it does nothing and prints
nothing; in a new virtual environment without the course (its dependencies borrowed from this
one) it installs it (here from this checkout, through ``COURSE_INSTALL_FROM``) and the chapter's
set-up cell then runs; that pip brings the package's own imports is checked statically; with no
repository configured it says what to do. Binder's requirements install the notebooks' needs,
not the site's or the tests' tools. CITATION.cff and the install cells carry the configured URL.
"""

from __future__ import annotations

import ast
import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import nbformat
import pytest
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import repository  # noqa: E402

import notebooks as nbtool  # noqa: E402

NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
# Chapters whose install cell is applied separately (tools/notebooks.py install-cell); remove a
# name once its notebook has the cell.
PENDING = ()


def _cells(path: Path) -> list:
    return nbformat.read(path, as_version=4).cells


@pytest.mark.parametrize("path", [p for p in NOTEBOOKS if not p.name.startswith(PENDING)], ids=lambda p: p.stem)
def test_every_notebook_starts_with_the_current_install_cell(path):
    assert nbtool.install_cell_problems(path) == []


def test_a_stale_or_missing_install_cell_is_reported(tmp_path):
    nb = nbformat.read(NOTEBOOKS[1], as_version=4)
    install = next(cell for cell in nb.cells if cell.get("id") == nbtool.INSTALL_CELL_ID)
    install.source = install.source.replace("importlib.invalidate_caches()", "pass")
    stale = tmp_path / NOTEBOOKS[1].name
    nbformat.write(nb, stale)
    assert any("not the one pyproject.toml" in p for p in nbtool.install_cell_problems(stale))
    nb.cells = [cell for cell in nb.cells if cell.get("id") != nbtool.INSTALL_CELL_ID]
    nbformat.write(nb, stale)
    assert any("is not the install cell" in p for p in nbtool.install_cell_problems(stale))
    assert nbtool.write_install_cell(stale) and nbtool.install_cell_problems(stale) == []
    assert not nbtool.write_install_cell(stale)  # a second run changes nothing


def test_the_install_cell_does_nothing_and_prints_nothing_where_the_course_is_installed():
    source = nbtool.install_cell_source("https://github.com/example/course", "main")
    result = subprocess.run([sys.executable, "-c", source], capture_output=True, text=True,
                            env={**os.environ, "COURSE_INSTALL_FROM": "/no/such/checkout"},
                            timeout=120)
    assert result.returncode == 0 and result.stdout == "" and result.stderr == ""


def test_without_a_repository_the_install_cell_says_what_to_do(tmp_path):
    source = nbtool.install_cell_source("", "main")
    env = {k: v for k, v in os.environ.items() if k != nbtool.INSTALL_VARIABLE}
    # -S: no site-packages, so course_utils cannot be found (as in a bare environment).
    result = subprocess.run([sys.executable, "-S", "-c", source], capture_output=True, text=True,
                            env=env, cwd=tmp_path, timeout=120)
    assert result.returncode != 0
    assert "course_utils is missing and no repository is configured" in result.stderr
    assert "pip install -e ." in result.stderr


def test_the_install_cell_names_the_configured_repository():
    source = nbtool.install_cell_source("https://github.com/example/course", "spring")
    assert '"git+https://github.com/example/course@spring"' in source
    assert all(len(line) <= nbtool.LINE_LENGTH for line in source.splitlines())


def _record_names() -> list[str]:
    return sorted(p.name for p in (ROOT / "course_utils" / "data" / "records").iterdir())


# A path that leaves the package: the repository's other folders are not there on Colab.
_OUTSIDE = re.compile(r"""["'](?:\.\./|benchmarks/|notebooks/|tools/)""")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_a_chapter_reads_no_file_outside_the_installed_package(path):
    """Opened alone (Colab), a chapter has the package and nothing else of the clone."""
    code = [cell.source for cell in _cells(path) if cell.cell_type == "code"]
    assert [line for source in code for line in source.splitlines() if _OUTSIDE.search(line)] == []


def test_the_stored_experiments_are_package_data():
    """Each record a chapter reads is in pyproject's package data, so pip installs it."""
    pyproject = repository.tomllib.loads((ROOT / "pyproject.toml").read_text())
    patterns = pyproject["tool"]["setuptools"]["package-data"]["course_utils.data"]
    for name in _record_names():
        assert any(Path("records", name).match(pattern) for pattern in patterns), name
    used = {name for path in NOTEBOOKS for cell in _cells(path) if cell.cell_type == "code"
            for name in re.findall(r'experiment_record_path\("([^"]+)"\)', cell.source)}
    assert used == {"lab1_results.json", "lab2_core.json", "lab2_grid.json", "lab2_reruns.json",
                    "lab2_test_set.json",
                    "long_context.json"}
    assert used <= set(_record_names())


# What the fresh environment borrows from this one: every installed distribution except the
# course itself and the packaging tools the new venv brings its own copies of.
_NOT_BORROWED = re.compile(r"^(course_utils|__editable__|pip|setuptools|wheel|_distutils_hack)"
                           r"([-._]|$)|\.pth$", re.I)


def _colab_like_environment(env_dir: Path) -> Path:
    """A new venv that sees this environment's installed packages but not the course. Like
    Colab, numpy, matplotlib and the rest are there and the course is not; unlike Colab, so are
    the test tools and torch, so an undeclared import would not fail here (the static test
    below covers the package's imports, the Binder test the notebooks'). Its python."""
    venv.EnvBuilder(with_pip=True).create(env_dir)
    borrowed = env_dir / "borrowed"
    borrowed.mkdir()
    for here in dict.fromkeys(Path(sysconfig.get_paths()[key]) for key in ("purelib", "platlib")):
        for entry in here.iterdir():
            if not _NOT_BORROWED.search(entry.name) and not (borrowed / entry.name).exists():
                (borrowed / entry.name).symlink_to(entry)
    python = env_dir / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()"
                              "['purelib'])"], capture_output=True, text=True, check=True)
    (Path(purelib.stdout.strip()) / "borrowed.pth").write_text(f"{borrowed}\n")
    return python


def test_a_chapter_launches_in_a_fresh_environment_through_its_install_cell(tmp_path):
    """Chapter 01's first cells in a new venv without the course (its dependencies borrowed
    from this environment): the install cell installs the course from this
    checkout and the set-up cell and the first cell after it run. That the course's own
    dependencies suffice is test_the_package_imports_only_its_declared_dependencies."""
    python = _colab_like_environment(tmp_path / "fresh")
    borrowing = subprocess.run([str(python), "-c", "import numpy, matplotlib"],
                               capture_output=True, text=True, cwd=tmp_path)
    assert borrowing.returncode == 0, "the new venv does not see this one's packages: " + (
        borrowing.stderr[-2000:])
    assert subprocess.run([str(python), "-c", "import course_utils"],
                          capture_output=True, cwd=tmp_path).returncode != 0
    code = [cell.source for cell in _cells(NOTEBOOKS[1]) if cell.cell_type == "code"][:3]
    assert "find_spec(\"course_utils\")" in code[0] and "use_course_style()" in code[1]
    script = tmp_path / "first_cells.py"
    # Chapters 09, 12 and 13 read stored experiments: the installed package must carry them.
    records = ("from course_utils.data import RECORDS_DIR, experiment_record_path\n"
               "names = sorted(p.name for p in RECORDS_DIR.iterdir())\n"
               f"assert names == {_record_names()!r}, names\n"
               "assert all(experiment_record_path(n).stat().st_size > 0 for n in names)\n"
               f"assert not str(RECORDS_DIR).startswith({str(ROOT)!r})\n")
    script.write_text("\n\n".join(code) + "\n" + records + "print('FIRST CELLS RAN')\n")
    # A copy of what the package is built from, so that pip's in-tree build leaves no build/
    # directory in the checkout.
    source = tmp_path / "course"
    source.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE", "LICENSE-CONTENT"):
        shutil.copy2(ROOT / name, source / name)
    shutil.copytree(ROOT / "course_utils", source / "course_utils",
                    ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    env = {**os.environ, nbtool.INSTALL_VARIABLE: str(source), "MPLBACKEND": "Agg",
           "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    env.pop("PYTHONPATH", None)
    result = subprocess.run([str(python), str(script)], capture_output=True, text=True, env=env,
                            cwd=tmp_path, timeout=900)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert result.stdout.rstrip().endswith("FIRST CELLS RAN")
    shown = subprocess.run([str(python), "-m", "pip", "show", "course-utils"],
                           capture_output=True, text=True, cwd=tmp_path)
    assert "Name: course-utils" in shown.stdout


def _requirements(path: Path) -> list[str]:
    return [line.split("#")[0].strip() for line in path.read_text().splitlines()
            if line.split("#")[0].strip()]


def test_binder_installs_what_the_notebooks_need_and_not_the_site_or_test_tools():
    lines = _requirements(ROOT / "binder" / "requirements.txt")
    assert lines[0] == "-c ../constraints.txt" and (ROOT / "binder" / lines[0][3:]).resolve() == (
        ROOT / "constraints.txt")
    assert "." in lines  # the course's package (its own dependencies come with it)
    pyproject = repository.tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = pyproject["optional-dependencies"]

    def names(requirements):
        return {re.split(r"[<>=!~\[ ;]", r, maxsplit=1)[0].lower() for r in requirements}

    others = [line for line in lines if not line.startswith("-") and line != "."]
    assert names(others) <= names(extras["notebooks"]), others
    for heavy in names(extras["docs"]) | names(extras["test"]) | names(extras["reference"]):
        assert heavy not in names(others), heavy
    # Every third-party module a notebook imports comes with the package or is listed here.
    needed = names(pyproject["dependencies"]) | names(others)
    imported = set()
    for path in NOTEBOOKS:
        for cell in _cells(path):
            if cell.cell_type == "code":
                imported |= set(re.findall(r"^(?:import|from) (\w+)", cell.source, re.M))
    third_party = {name for name in imported if name not in sys.stdlib_module_names}
    # IPython comes with every Jupyter kernel (Binder's, Colab's, ipykernel).
    assert third_party <= needed | {"course_utils", "IPython"}, third_party - needed
    runtime = (ROOT / "binder" / "runtime.txt").read_text().strip()
    assert re.fullmatch(r"python-3\.1[0-9]", runtime) and "3.11" in runtime  # as CI


def test_the_repository_url_has_one_source_and_its_copies_agree():
    url, _ = repository.configured()
    assert repository.citation_url((ROOT / "CITATION.cff").read_text()) == url
    problems = [p for p in repository.disagreements()
                if not p.startswith(tuple(f"notebooks/{n}" for n in PENDING) + ("fix:",))]
    assert problems == []


def test_setting_the_repository_url_writes_every_copy(tmp_path):
    url = "https://github.com/example-teacher/pe-course"
    citation = repository.with_citation_url((ROOT / "CITATION.cff").read_text(), url)
    assert repository.citation_url(citation) == url and f'\nurl: "{url}"\n' in citation
    path = tmp_path / "CITATION.cff"
    path.write_text(citation)
    result = subprocess.run([sys.executable, "-m", "check_jsonschema", "--builtin-schema",
                             "vendor.citation-file-format", str(path)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert repository.citation_url(repository.with_citation_url(citation, "")) == ""
    pyproject = repository.with_pyproject_url((ROOT / "pyproject.toml").read_text(), url, "spring")
    (tmp_path / "pyproject.toml").write_text(pyproject)
    assert repository.configured(tmp_path / "pyproject.toml") == (url, "spring")
    for bad in ("git@github.com:someone/course.git", "https://gitlab.com/a/b", "github.com/a/b"):
        with pytest.raises(ValueError, match="URL must look like https://github.com/"):
            repository.validated(bad, "main")
    assert repository.validated(url + ".git/", "main") == (url, "main")


def test_citation_names_the_course_as_its_author():
    text = (ROOT / "CITATION.cff").read_text()
    authors = re.search(r"^authors:\n((?:  .*\n)+)", text, re.M).group(1)
    assert "Positional encodings in transformers" in authors
    assert "maintainers of the course" not in authors


def _imported_when_loaded(tree) -> set[str]:
    """Top-level names a module imports, at load time or inside a function, except inside a
    ``try`` that catches ImportError (an optional import handles its own absence)."""
    optional = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Try) and any(
                isinstance(h.type, ast.Name) and h.type.id in ("ImportError", "ModuleNotFoundError")
                for h in node.handlers):
            optional |= {id(inner) for stmt in node.body for inner in ast.walk(stmt)}
    names = set()
    for node in ast.walk(tree):
        if id(node) in optional:
            continue
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


# Imported only after a check that it is installed (explain.defaults._transformers()): the
# inspector reads class defaults from transformers where it is there and says so where not.
_OPTIONAL = {"transformers"}


def _with_their_requirements(names: set[str]) -> set[str]:
    """``names`` and every distribution they require, as installed here (extras left out)."""
    seen, todo = set(), list(names)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        try:
            requirements = importlib.metadata.requires(name) or []
        except importlib.metadata.PackageNotFoundError:
            continue
        # Only what pip would install here: no extras, and markers (Python version, platform)
        # evaluated for this interpreter.
        todo += [_distribution(r) for r in requirements if _needed_here(r)]
    return seen


def _needed_here(requirement: str) -> bool:
    marker = Requirement(requirement).marker
    return marker is None or marker.evaluate({"extra": ""})


def _distribution(requirement: str) -> str:
    return re.split(r"[<>=!~\[ ;(]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def test_the_package_imports_only_its_declared_dependencies():
    """Every third-party module that course_utils imports (unless it is optional) belongs to a
    distribution that pip installs with the package: one in pyproject.toml's dependencies or
    one they require."""
    pyproject = repository.tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    installed_with = _with_their_requirements({_distribution(r) for r in pyproject["dependencies"]})
    distributions = importlib.metadata.packages_distributions()
    missing = {}
    for path in sorted((ROOT / "course_utils").rglob("*.py")):
        for name in _imported_when_loaded(ast.parse(path.read_text())):
            if name in sys.stdlib_module_names or name == "course_utils" or name in _OPTIONAL:
                continue
            owners = {_distribution(d) for d in distributions.get(name, [name])}
            if not owners & installed_with:
                missing.setdefault(name, []).append(path.relative_to(ROOT).as_posix())
    assert missing == {}


def test_an_undeclared_import_is_found():
    tree = ast.parse("import numpy\nfrom scipy import special\ntry:\n    import torch\n"
                     "except ImportError:\n    torch = None\ndef f():\n    import pandas\n"
                     "    from . import rope\n")
    assert _imported_when_loaded(tree) == {"numpy", "scipy", "pandas"}
