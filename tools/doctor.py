"""Check the course environment: installed versions against the ranges in pyproject.toml.

    python tools/doctor.py        # what `make doctor` runs (with .venv/bin/python when it exists)

Prints one line per dependency (the range pyproject.toml asks for, the version installed, the
version constraints.txt was tested with) and, when something is off, what to do about it.
Exits 1 if a required package is missing or outside its range; the optional reference
implementations (torch, transformers; `make reference`) only produce a note.
"""

from __future__ import annotations

import importlib.metadata as metadata
import os
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
VENV = ROOT / ".venv"
OPTIONAL_EXTRAS = ("reference",)  # installed by `make reference`, not by `make setup`

try:
    import tomllib
except ModuleNotFoundError:  # Python < 3.11
    tomllib = None

try:
    from packaging.requirements import Requirement
    from packaging.specifiers import SpecifierSet
    from packaging.version import Version
except ModuleNotFoundError:  # outside the course environment: a small fallback for ">=1.2,<3"
    Requirement = SpecifierSet = Version = None


def _split_requirement(text: str) -> tuple[str, list[str], str]:
    """(name, extras, specifier) of a requirement string such as ``numpy>=1.24``."""
    if Requirement is not None:
        req = Requirement(text)
        return req.name, sorted(req.extras), str(req.specifier)
    match = re.match(r"^\s*([A-Za-z0-9_.-]+)\s*(?:\[([^\]]*)\])?\s*(.*)$", text)
    if not match:
        raise ValueError(f"cannot parse the requirement {text!r}")
    name, extras, spec = match.groups()
    return name, [e.strip() for e in (extras or "").split(",") if e.strip()], spec.strip()


def _version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", text.split("+")[0])[:4])


def satisfies(version: str, specifier: str) -> bool:
    """Whether ``version`` is inside ``specifier`` (e.g. ``>=1.24,<3``)."""
    if not specifier:
        return True
    if SpecifierSet is not None:
        return Version(version) in SpecifierSet(specifier)
    ops = {">=": lambda a, b: a >= b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b,
           "<": lambda a, b: a < b, "==": lambda a, b: a == b, "!=": lambda a, b: a != b}
    have = _version_tuple(version)
    for clause in specifier.split(","):
        match = re.match(r"^\s*(>=|<=|==|!=|>|<)\s*([\w.]+)\s*$", clause)
        if not match:
            raise ValueError(f"cannot check the specifier {clause!r} without `packaging`")
        op, wanted = match.groups()
        width = max(len(have), len(_version_tuple(wanted)))
        a = have + (0,) * (width - len(have))
        b = _version_tuple(wanted) + (0,) * (width - len(_version_tuple(wanted)))
        if not ops[op](a, b):
            return False
    return True


def requirements(pyproject: dict) -> list[tuple[str, str, str]]:
    """(name, specifier, group) for every dependency, the ``dev`` extra's self-references expanded."""
    project = pyproject["project"]
    own = project["name"].lower().replace("_", "-")
    extras = project.get("optional-dependencies", {})
    found: dict[str, tuple[str, str, str]] = {}

    def add(texts, group, seen=()):
        for text in texts:
            name, wanted_extras, spec = _split_requirement(text)
            if name.lower().replace("_", "-") == own:  # "course-utils[notebooks,test]"
                for extra in wanted_extras:
                    if extra not in seen:
                        add(extras.get(extra, []), extra, (*seen, extra))
                continue
            found.setdefault(name.lower(), (name, spec, group))

    add(project.get("dependencies", []), "core")
    for extra, texts in extras.items():
        add(texts, extra, (extra,))
    return list(found.values())


def tested_versions() -> dict[str, str]:
    pins = {}
    path = ROOT / "constraints.txt"
    if path.is_file():
        for line in path.read_text().splitlines():
            if "==" in line and not line.lstrip().startswith("#"):
                name, version = line.split("==", 1)
                pins[name.strip().lower().replace("_", "-")] = version.strip()
    return pins


def main() -> int:
    print(f"Python {sys.version.split()[0]} at {sys.executable}")
    in_venv = pathlib.Path(sys.prefix).resolve() == VENV.resolve()
    if not VENV.exists():
        print("The course environment .venv does not exist. Run: make setup")
        return 1
    if not in_venv and (VENV / "bin" / "python").exists():
        print(f"Checking the course environment instead: {VENV / 'bin' / 'python'}")
        sys.stdout.flush()
        os.execv(VENV / "bin" / "python", [str(VENV / "bin" / "python"), __file__, *sys.argv[1:]])
    if tomllib is None:
        print("Python >= 3.11 is needed to read pyproject.toml (tomllib). Run: make clean setup")
        return 1
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    problems, notes = [], []
    requires_python = pyproject["project"].get("requires-python", "")
    python_ok = satisfies(sys.version.split()[0], requires_python)
    if not python_ok:
        problems.append(f"Python {sys.version.split()[0]} is outside requires-python "
                        f"{requires_python!r}")

    pins = tested_versions()
    rows = [("package", "group", "pyproject range", "installed", "tested (constraints.txt)",
             "status")]
    for name, spec, group in sorted(requirements(pyproject), key=lambda r: (r[2], r[0].lower())):
        key = name.lower().replace("_", "-")
        try:
            installed = metadata.version(name)
        except metadata.PackageNotFoundError:
            installed = None
        optional = group in OPTIONAL_EXTRAS
        if installed is None:
            status = "not installed" + (" (optional)" if optional else "")
            (notes if optional else problems).append(f"{name} is not installed")
        elif not satisfies(installed, spec):
            status = "OUTSIDE RANGE"
            (notes if optional else problems).append(f"{name} {installed} is outside {spec}")
        elif key in pins and _version_tuple(installed) != _version_tuple(pins[key]):
            status = "ok (differs from the tested version)"
        else:
            status = "ok"
        rows.append((name, group, spec or "any", installed or "-", pins.get(key, "-"), status))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())

    try:
        import course_utils

        where = pathlib.Path(course_utils.__file__).resolve().parent
        if where != ROOT / "course_utils":
            problems.append(f"course_utils is imported from {where}, not from this repository")
    except Exception as exc:  # any import failure is a finding to report, not a crash
        problems.append(f"course_utils does not import: {type(exc).__name__}: {exc}")
    try:
        from jupyter_client.kernelspec import KernelSpecManager

        kernel_python = KernelSpecManager().get_kernel_spec("python3").argv[0]
        if in_venv and pathlib.Path(kernel_python).name.startswith("python") and \
                pathlib.Path(kernel_python).resolve() != pathlib.Path(sys.executable).resolve() and \
                kernel_python not in ("python", "python3", "{python}"):
            notes.append(f"the notebooks' python3 kernel runs {kernel_python}, not {sys.executable}")
    except Exception as exc:  # jupyter missing is reported above as a missing package
        notes.append(f"could not find the python3 kernel: {type(exc).__name__}: {exc}")

    print()
    for note in notes:
        print(f"note: {note}")
    if problems:
        for problem in problems:
            print(f"PROBLEM: {problem}")
        print("\nTo fix: `make clean setup` rebuilds .venv from pyproject.toml and constraints.txt "
              "(then `make reference` if you run the agreement tests).")
        return 1
    if any(n.endswith("is not installed") for n in notes):
        print("The reference implementations are optional; `make reference` installs them for the "
              "agreement tests.")
    print("Environment OK: every required package is inside its range.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
