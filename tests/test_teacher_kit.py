"""What a teacher needs to adopt the course: licences, a citation file, a CI workflow for a fork,
and launch links that exist only when a repository is configured.

The citation file and the workflow are validated offline against the schemas check-jsonschema
bundles (the Citation File Format 1.2.0 schema and SchemaStore's GitHub-workflow schema); each
validator is also shown to reject a deliberately broken copy, so the check can fail.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
WORKFLOW = ROOT / ".github" / "workflows" / "course.yml"


def _invalid(schema: str, paths: list[Path]) -> set[Path]:
    """The files among ``paths`` that check-jsonschema finds invalid under ``schema`` (one run
    for all of them: the command takes seconds to start)."""
    result = subprocess.run([sys.executable, "-m", "check_jsonschema", "--builtin-schema", schema,
                             "-o", "json", *map(str, paths)], capture_output=True, text=True,
                            timeout=120)
    report = json.loads(result.stdout)
    invalid = {Path(e["filename"]) for e in report["errors"] + report["parse_errors"]}
    assert (result.returncode != 0) == bool(invalid), result.stdout + result.stderr
    return invalid


def test_code_and_content_licences_are_present_and_named():
    mit = (ROOT / "LICENSE").read_text()
    content = (ROOT / "LICENSE-CONTENT").read_text()
    assert mit.startswith("MIT License") and "Permission is hereby granted, free of charge" in mit
    assert "Creative Commons Attribution 4.0 International Public License" in content
    assert "Section 3 -- License Conditions." in content  # the legal code, not only a link
    readme = (ROOT / "README.md").read_text()
    assert "LICENSE-CONTENT" in readme and "CC BY 4.0" in readme and "MIT" in readme
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert 'license = "MIT"' in pyproject and 'license-files = ["LICENSE", "LICENSE-CONTENT"]' in pyproject


def test_the_site_footer_names_both_licences_once():
    pytest.importorskip("sphinx")  # conf.py imports it; the oldest-versions run has no docs extra
    sys.path.insert(0, str(ROOT))
    try:
        import conf
    finally:
        sys.path.remove(str(ROOT))
    assert conf.copyright.count("CC BY 4.0") == 1 and conf.copyright.count("MIT") == 1
    options = conf.html_theme_options
    shown = options["footer_content_items"] + options["footer_start"] + options["footer_end"]
    assert shown.count("copyright.html") + shown.count("copyright") == 1


def test_citation_file_is_valid_cff(tmp_path):
    broken = tmp_path / "CITATION.cff"
    broken.write_text((ROOT / "CITATION.cff").read_text().replace("cff-version: 1.2.0", "cff-version: 9"))
    assert _invalid("vendor.citation-file-format", [ROOT / "CITATION.cff", broken]) == {broken}


def test_workflow_is_valid_and_a_broken_copy_is_not(tmp_path):
    text = WORKFLOW.read_text()
    broken = []
    for label, broken_text in (("no-runs-on", text.replace("    runs-on: ubuntu-latest\n", "", 1)),
                               ("misspelt-steps", text.replace("    steps:\n", "    step:\n", 1)),
                               ("bad-trigger", text.replace("  pull_request:\n", "  pull-request:\n"))):
        assert broken_text != text, label
        (tmp_path / label).mkdir()
        broken.append(tmp_path / label / "course.yml")
        broken[-1].write_text(broken_text)
    assert _invalid("vendor.github-workflows", [WORKFLOW, *broken]) == set(broken)


def test_workflow_runs_the_readme_commands_and_publishes_with_the_official_actions():
    text = WORKFLOW.read_text()
    readme = (ROOT / "README.md").read_text()
    for command in ("make book", "make test"):
        assert f"{command} " in readme and f"run: {command}\n" in text
    # the cache follows the lock file and the recipes that build the environment
    assert "hashFiles('constraints.txt', 'pyproject.toml', 'environment.yml', 'Makefile')" in text
    for action in ("actions/upload-pages-artifact@", "actions/deploy-pages@", "actions/configure-pages@"):
        assert action in text


def test_workflow_deploys_on_manual_runs_runs_once_per_change_and_trusts_only_an_exact_cache_hit():
    yaml = pytest.importorskip("yaml")
    workflow = yaml.safe_load(WORKFLOW.read_text())
    triggers = workflow.get(True, workflow.get("on"))  # YAML 1.1 reads the key `on` as True
    assert {"push", "pull_request", "workflow_dispatch"} <= set(triggers)
    test, deploy = workflow["jobs"]["test"], workflow["jobs"]["deploy"]
    # A pull request from a branch of this repository is skipped (its push ran); from a fork, not.
    assert "github.event.pull_request.head.repo.full_name != github.repository" in test["if"]
    # A manual run on the default branch publishes as a push does; a pull request never does.
    upload = next(step for step in test["steps"] if "upload-pages-artifact" in step.get("uses", ""))
    for condition in (upload["if"], deploy["if"]):
        assert "github.event_name != 'pull_request'" in condition
        assert "github.ref_name == github.event.repository.default_branch" in condition
    cache = next(step for step in test["steps"] if "actions/cache" in step.get("uses", ""))
    key = cache["with"]["key"]
    assert all(f"'{name}'" in key for name in ("constraints.txt", "pyproject.toml", "environment.yml"))
    assert "restore-keys" not in cache["with"]  # never an older environment under a newer key
    # The Makefile's stamp depends on exactly the files the key hashes.
    makefile = (ROOT / "Makefile").read_text()
    assert "$(STAMP): pyproject.toml constraints.txt environment.yml" in makefile
    touch = next(step for step in test["steps"] if step.get("if", "").startswith(
        f"steps.{cache['id']}.outputs.cache-hit == 'true'"))
    assert ".venv/.course-installed" in touch["run"]
    names = [step.get("run", "") for step in test["steps"]]
    assert names.index(touch["run"]) < names.index("make book")


def _build_page(tmp_path, env_extra):
    """Build the landing page and chapter 01 only, with the given environment."""
    pytest.importorskip("sphinx")
    pytest.importorskip("myst_nb")
    out = tmp_path / "html"
    env = {k: v for k, v in os.environ.items() if not k.startswith("COURSE_REPOSITORY_")}
    env.update(env_extra)
    result = subprocess.run(
        [sys.executable, "-m", "sphinx", "-b", "html", "-q", "-E", "-d", str(tmp_path / "doctrees"),
         "-D", "include_patterns=index.md,notebooks/01_position_problem.ipynb",
         str(ROOT), str(out)], capture_output=True, text=True, env=env, cwd=ROOT, timeout=600)
    assert (out / "notebooks" / "01_position_problem.html").is_file(), result.stderr[-2000:]
    return (out / "notebooks" / "01_position_problem.html").read_text()


def test_launch_links_appear_only_when_a_repository_is_configured(tmp_path):
    # An empty COURSE_REPOSITORY_URL means "no repository", whatever pyproject.toml says, so
    # this half holds on a fork that has set its URL there.
    plain = _build_page(tmp_path / "plain", {"COURSE_REPOSITORY_URL": ""})
    assert "mybinder.org" not in plain and "colab.research.google.com" not in plain
    configured = _build_page(tmp_path / "configured", {
        "COURSE_REPOSITORY_URL": "https://github.com/example-teacher/pe-course",
        "COURSE_REPOSITORY_BRANCH": "spring"})
    binder = re.search(r'href="(https://mybinder\.org/[^"]+)"', configured)
    colab = re.search(r'href="(https://colab\.research\.google\.com/[^"]+)"', configured)
    assert binder and "example-teacher/pe-course/spring" in binder.group(1)
    assert "notebooks/01_position_problem.ipynb" in binder.group(1).replace("%2F", "/")
    assert colab and colab.group(1).endswith(
        "github/example-teacher/pe-course/blob/spring/notebooks/01_position_problem.ipynb")
    shutil.rmtree(tmp_path, ignore_errors=True)


def test_a_repository_url_that_binder_cannot_open_is_refused(tmp_path):
    pytest.importorskip("sphinx")
    result = subprocess.run(
        [sys.executable, "-m", "sphinx", "-b", "html", "-q", "-E", "-d", str(tmp_path / "d"),
         "-D", "include_patterns=index.md", str(ROOT), str(tmp_path / "html")],
        capture_output=True, text=True, cwd=ROOT, timeout=600,
        env={**os.environ, "COURSE_REPOSITORY_URL": "git@github.com:someone/course.git"})
    assert result.returncode != 0 and "repository-url must look like https://github.com/" in (
        result.stdout + result.stderr)
