"""The inspector stays a small package: no function or method of course_utils/explain/ is
longer than 60 lines (decorators and docstring included), measured with ast."""

import ast
import pathlib

import course_utils.explain

LIMIT = 60
PACKAGE = pathlib.Path(course_utils.explain.__file__).parent


def _function_lengths():
    for path in sorted(PACKAGE.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                first = min([node.lineno] + [d.lineno for d in node.decorator_list])
                yield f"{path.name}:{node.lineno} {node.name}", node.end_lineno - first + 1


def test_package_is_split_into_modules():
    modules = {p.stem for p in PACKAGE.glob("*.py")}
    assert {"__init__", "__main__", "read", "defaults", "layers", "plan", "format", "plot",
            "cli"} <= modules, modules
    assert not (PACKAGE.parent / "explain.py").exists()


def test_no_function_over_60_lines():
    lengths = dict(_function_lengths())
    assert len(lengths) > 50, f"too few functions found in {PACKAGE}: {len(lengths)}"
    too_long = {name: n for name, n in lengths.items() if n > LIMIT}
    assert not too_long, f"functions over {LIMIT} lines: {too_long}"


def test_the_measure_catches_a_long_function(tmp_path, monkeypatch):
    # a 61-line function is reported: the measure itself can fail
    body = "\n".join(f"    x{i} = {i}" for i in range(60))
    (tmp_path / "long.py").write_text(f"def f():\n{body}\n", encoding="utf-8")
    monkeypatch.setattr(__import__(__name__), "PACKAGE", tmp_path)
    assert dict(_function_lengths()) == {"long.py:1 f": 61}


def test_public_api_is_re_exported():
    for name in course_utils.explain.__all__:
        assert callable(getattr(course_utils.explain, name)), name
    from course_utils.explain import _Defaults  # patched by tools/recorders/explain.py

    assert _Defaults.__module__ == "course_utils.explain.defaults"
