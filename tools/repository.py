"""The course's repository URL: configured in one place, written everywhere it is needed.

    python tools/repository.py show                      # the configured URL and branch
    python tools/repository.py set URL [--branch main]   # what `make repository URL=...` runs
    python tools/repository.py check [--actual URL]      # exit 1 if a copy disagrees

The one place is ``[tool.course]`` in pyproject.toml (``repository-url``, ``repository-branch``).
Three things read it: the site's Binder and Colab links (conf.py, at build time), CITATION.cff
(``repository-code`` and ``url``), and the install cell at the top of every notebook (which
installs the course from ``git+URL@BRANCH`` where ``course_utils`` is missing, as on Colab).
The last two are files, so ``set`` rewrites them, and ``check`` (run by the tests) fails when
they no longer agree with pyproject.toml. A fork runs ``make repository
URL=https://github.com/<owner>/<repo>`` once and commits the result. ``check --actual URL``
also fails when the configured URL is not the repository the workflow runs in.
"""

from __future__ import annotations

import argparse
import pathlib
import re
import sys

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

ROOT = pathlib.Path(__file__).resolve().parent.parent
PYPROJECT = ROOT / "pyproject.toml"
CITATION = ROOT / "CITATION.cff"
URL_PATTERN = re.compile(r"https://github\.com/[\w.-]+/[\w.-]+")
BRANCH_PATTERN = re.compile(r"[\w./-]+")


def configured(pyproject: pathlib.Path = PYPROJECT) -> tuple[str, str]:
    """(repository URL or "", branch) from ``[tool.course]`` of pyproject.toml."""
    course = tomllib.loads(pyproject.read_text()).get("tool", {}).get("course", {})
    return ((course.get("repository-url") or "").strip().rstrip("/"),
            (course.get("repository-branch") or "main").strip())


def validated(url: str, branch: str) -> tuple[str, str]:
    url = url.strip().rstrip("/")
    if url.endswith(".git"):
        url = url[:-4]
    if url and not URL_PATTERN.fullmatch(url):
        raise ValueError(f"URL must look like https://github.com/<owner>/<repo> (Binder and "
                         f"Colab open GitHub repositories) or be empty, got {url!r}")
    if not BRANCH_PATTERN.fullmatch(branch):
        raise ValueError(f"branch must be a git branch name such as 'main', got {branch!r}")
    return url, branch


def citation_url(text: str) -> str:
    """The ``repository-code`` of a CITATION.cff text, or ""."""
    match = re.search(r"^repository-code:\s*\"?([^\"\n]*)\"?\s*$", text, re.MULTILINE)
    return match.group(1).strip() if match else ""


def with_citation_url(text: str, url: str) -> str:
    """CITATION.cff text with ``repository-code`` and ``url`` set to ``url`` (removed if empty)."""
    text = re.sub(r"^(repository-code|url):.*\n", "", text, flags=re.MULTILINE)
    if url:
        text = re.sub(r"^(version:.*\n)", rf'\1repository-code: "{url}"\nurl: "{url}"\n', text,
                      count=1, flags=re.MULTILINE)
    return text


def with_pyproject_url(text: str, url: str, branch: str) -> str:
    for key, value in (("repository-url", url), ("repository-branch", branch)):
        text, count = re.subn(rf'^{key} = ".*"$', f'{key} = "{value}"', text, count=1,
                              flags=re.MULTILINE)
        if count != 1:
            raise ValueError(f"pyproject.toml has no line '{key} = \"...\"' under [tool.course]")
    return text


def notebook_paths() -> list[pathlib.Path]:
    return sorted((ROOT / "notebooks").glob("*.ipynb"))


def disagreements(actual: str | None = None) -> list[str]:
    """Where a copy of the configured URL differs from pyproject.toml's (empty: all agree)."""
    sys.path.insert(0, str(ROOT / "tools"))
    from notebooks import install_cell_problems

    url, branch = configured()
    problems = []
    if citation_url(CITATION.read_text()) != url:
        problems.append(f"CITATION.cff: repository-code is {citation_url(CITATION.read_text())!r}"
                        f", pyproject.toml says {url!r}")
    for path in notebook_paths():
        problems += [f"{path.relative_to(ROOT)}: {p}" for p in install_cell_problems(path)]
    if actual is not None and actual.rstrip("/") != url:
        problems.append(f"this repository is {actual!r} but pyproject.toml's repository-url is "
                        f"{url!r}: its launch links and install cells point elsewhere")
    if problems:
        problems.append(f"fix: make repository URL={actual or url or 'https://github.com/<owner>/<repo>'}"
                        " (then commit pyproject.toml, CITATION.cff and notebooks/)")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("show")
    setter = sub.add_parser("set")
    setter.add_argument("url", help="https://github.com/<owner>/<repo>, or '' for none")
    setter.add_argument("--branch", default=None, help="default: the configured one (main)")
    checker = sub.add_parser("check")
    checker.add_argument("--actual", default=None, help="the repository this copy lives in")
    args = parser.parse_args(argv)
    if args.command == "show":
        url, branch = configured()
        print(f"repository-url    {url or '(none: no launch links, no install source)'}")
        print(f"repository-branch {branch}")
        return 0
    if args.command == "check":
        problems = disagreements(args.actual)
        for problem in problems:
            print(problem)
        if not problems:
            print("pyproject.toml, CITATION.cff and every notebook's install cell agree")
        return 1 if problems else 0
    try:
        url, branch = validated(args.url, args.branch or configured()[1])
    except ValueError as error:
        parser.error(str(error))
    PYPROJECT.write_text(with_pyproject_url(PYPROJECT.read_text(), url, branch))
    CITATION.write_text(with_citation_url(CITATION.read_text(), url))
    sys.path.insert(0, str(ROOT / "tools"))
    from notebooks import write_install_cell

    changed = [path for path in notebook_paths() if write_install_cell(path)]
    print(f"repository-url = {url!r}, branch {branch!r}: pyproject.toml, CITATION.cff and the "
          f"install cells of {len(changed)} notebooks updated")
    return 0


if __name__ == "__main__":
    sys.exit(main())
