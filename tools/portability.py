"""Run every notebook under nbval as it would run on other CPUs, and report pass/fail per CPU.

    python tools/portability.py [--configs NAME ...] [--write]   # what `make portability` runs

A learner's computer adds floating-point numbers in another order than the one the committed
outputs were made on: numpy picks its SIMD loops (AVX-512, AVX2, SSE) from the CPU, and OpenBLAS
picks a matrix-product kernel for it. Both can be chosen on one machine with environment
variables, which emulates other CPUs well enough to catch outputs that depend on the machine:

* ``NPY_DISABLE_CPU_FEATURES``: numpy without its AVX-512 loops, or without AVX2 and AVX-512
  (numpy's "Runtime CPU dispatch" documentation);
* ``OPENBLAS_CORETYPE``: another OpenBLAS kernel (Haswell is what AMD Zen CPUs get, Sandybridge
  an older Intel one with AVX but no FMA), and both changes at once for an old CPU (numpy's SSE
  loops with OpenBLAS's Nehalem kernel).

Every configuration runs ``pytest notebooks --nbval`` with the options of ``make test``. A
table of pass/fail per configuration is printed and, with ``--write``, written into
``benchmarks/RESULTS.md`` between the portability markers. Exit status 1 if any configuration
fails. Not part of ``make test`` or CI, which run on the machine as it is.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import platform
import re
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

from results_section import write_section

ROOT = pathlib.Path(__file__).resolve().parent.parent
EMULATION_VARIABLES = ("NPY_DISABLE_CPU_FEATURES", "NPY_ENABLE_CPU_FEATURES", "OPENBLAS_CORETYPE",
                       "OPENBLAS_NUM_THREADS", "OPENBLAS_VERBOSE")
PYTEST_NB = ["--nbval", "--nbval-current-env", "--nbval-sanitize-with", "nbval_sanitize.cfg",
             "-p", "no:cacheprovider", "-q"]


def _numpy_dispatch() -> list[str]:
    """The CPU features numpy chooses among at run time (its baseline cannot be disabled)."""
    try:
        from numpy._core import _multiarray_umath as umath  # numpy >= 2
    except ImportError:  # numpy 1.x
        from numpy.core import _multiarray_umath as umath
    return [name for name in umath.__cpu_dispatch__ if umath.__cpu_features__.get(name)]


def configurations() -> dict[str, dict[str, str]]:
    """Name -> environment variables. Configurations that cannot apply here are left out."""
    dispatch = _numpy_dispatch()
    avx512 = [f for f in dispatch if f.startswith("AVX512") or f == "X86_V4"]
    avx2 = avx512 + [f for f in dispatch if f in ("X86_V3", "AVX2", "FMA3", "AVX", "F16C")]
    configs: dict[str, dict[str, str]] = {"this machine": {}}
    if avx512:
        configs["numpy without AVX-512"] = {"NPY_DISABLE_CPU_FEATURES": " ".join(avx512)}
    if avx2 != avx512:
        configs["numpy without AVX2 and AVX-512"] = {"NPY_DISABLE_CPU_FEATURES": " ".join(avx2)}
    if platform.machine().lower() in ("x86_64", "amd64"):
        for kernel in ("Haswell", "Sandybridge"):
            configs[f"OpenBLAS {kernel} kernel"] = {"OPENBLAS_CORETYPE": kernel}
        if avx2 != avx512:
            configs["old CPU: numpy SSE only, OpenBLAS Nehalem"] = {
                "NPY_DISABLE_CPU_FEATURES": " ".join(avx2), "OPENBLAS_CORETYPE": "Nehalem"}
    return configs


def _blas_core(env: dict[str, str]) -> str:
    """The OpenBLAS kernel numpy's bundled OpenBLAS picks under ``env`` (best effort)."""
    code = (
        "import ctypes, glob, os, numpy as np\n"
        "libs = glob.glob(os.path.join(os.path.dirname(np.__file__), os.pardir, 'numpy.libs',"
        " '*openblas*'))\n"
        "lib = ctypes.CDLL(libs[0])\n"
        "name = [n for n in ('scipy_openblas_get_corename64_', 'openblas_get_corename64_',"
        " 'openblas_get_corename') if hasattr(lib, n)][0]\n"
        "f = getattr(lib, name); f.restype = ctypes.c_char_p; print(f().decode())\n"
    )
    try:
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                             text=True, timeout=60, check=True)
        return out.stdout.strip() or "unknown"
    except (subprocess.SubprocessError, OSError):
        return "unknown"


def run(name: str, variables: dict[str, str], notebooks: list[str]) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in EMULATION_VARIABLES}
    env.update(variables)
    junit = ROOT / "_build" / f"portability-{re.sub(r'[^a-z0-9]+', '-', name.lower())}.xml"
    junit.parent.mkdir(exist_ok=True)
    print(f"== {name}: {' '.join(f'{k}={v!r}' for k, v in variables.items()) or '(no change)'}",
          flush=True)
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "pytest", *notebooks, *PYTEST_NB,
                           f"--junitxml={junit}"], cwd=ROOT, env=env, capture_output=True,
                          text=True)
    seconds = time.perf_counter() - start
    passed = failed = 0
    failing: dict[str, int] = {}
    if junit.is_file():
        for case in ET.parse(junit).getroot().iter("testcase"):
            if case.find("failure") is not None or case.find("error") is not None:
                failed += 1
                notebook = pathlib.Path(case.get("file") or case.get("classname", "?")).stem
                failing[notebook] = failing.get(notebook, 0) + 1
            elif case.find("skipped") is None:
                passed += 1
    if proc.returncode != 0 and not failed:
        failed = 1
        failing["pytest"] = proc.returncode
        print(proc.stdout[-3000:], proc.stderr[-3000:], sep="\n")
    result = {"name": name, "variables": variables, "blas": _blas_core(env), "passed": passed,
              "failed": failed, "failing": failing, "seconds": seconds}
    verdict = "PASS" if not failed else "FAIL"
    print(f"   {verdict}: {passed} cells passed, {failed} failed "
          f"({', '.join(f'{k}: {v}' for k, v in failing.items()) or 'no notebook failed'}); "
          f"OpenBLAS kernel {result['blas']}; {seconds:.0f} s", flush=True)
    return result


def table(results: list[dict]) -> str:
    lines = [
        "| configuration | environment | OpenBLAS kernel | notebook cells passed | failed | time |",
        "|---|---|---|---|---|---|",
    ]
    for r in results:
        env = "<br>".join(f"`{k}={v}`" for k, v in r["variables"].items()) or "(as it is)"
        failed = str(r["failed"]) if not r["failing"] else (
            f"{r['failed']} ({', '.join(r['failing'])})")
        lines.append(f"| {r['name']} | {env} | {r['blas']} | {r['passed']} | {failed} | "
                     f"{r['seconds']:.0f} s |")
    return "\n".join(lines)


def write(results: list[dict], notebooks: list[str], every: bool = True) -> None:
    """Write the table into RESULTS.md: the section of every notebook, or (``every=False``) a
    section of its own for the notebooks run, which leaves the full table as it was."""
    stems = [pathlib.Path(n).stem for n in notebooks]
    name = "portability" if every else "portability-" + "-".join(s.split("_")[0] for s in stems)
    title = ("every notebook" if every else ", ".join(f"`{s}`" for s in stems))
    command = ("make portability" if every else
               "python tools/portability.py --write --notebooks " + " ".join(notebooks))
    write_section(name, (
        f"## Portability: {title} under emulated CPUs\n\n"
        f"`{command}` ran {len(notebooks)} notebook{'s' * (len(notebooks) != 1)} under nbval in "
        "each configuration "
        f"on this machine ({platform.machine()}, {_cpu_name()}; Python "
        f"{platform.python_version()}, numpy {_version('numpy')}). A configuration passes when "
        f"every cell's output matches the committed one.\n\n{table(results)}"))


def _version(package: str) -> str:
    from importlib.metadata import version

    return version(package)


def _cpu_name() -> str:
    try:
        for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def main(argv: list[str] | None = None) -> int:
    configs = configurations()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--configs", nargs="*", choices=sorted(configs), metavar="NAME",
                        help=f"run only these (default: all): {'; '.join(configs)}")
    parser.add_argument("--notebooks", nargs="*",
                        default=sorted(str(p.relative_to(ROOT)) for p in (ROOT / "notebooks").glob("*.ipynb")))
    parser.add_argument("--write", action="store_true", help="write the table into benchmarks/RESULTS.md")
    args = parser.parse_args(argv)
    chosen = args.configs or list(configs)
    results = [run(name, configs[name], args.notebooks) for name in chosen]
    print()
    print(table(results))
    if args.write:
        every = sorted(args.notebooks) == sorted(parser.get_default("notebooks"))
        write(results, args.notebooks, every=every)
    return 1 if any(r["failed"] for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
