"""Benchmark the course_utils kernels and the course itself; write benchmarks/RESULTS.md.

    python benchmarks/bench.py              # everything (what `make bench` runs)
    python benchmarks/bench.py --no-course  # only the kernels
    python benchmarks/bench.py --repeats 9  # more repeats per timing

Each time is shown as the median over repeats of the wall-clock time, then of the process's user CPU
time. Each kernel is compared with the cheapest numpy operation producing an output of the same
size (its floor): one ``x * c`` pass for RoPE, one ``np.sin`` pass for the sinusoidal table; a
kernel and its floor are timed alternately, and both ratios are given. The wall-time ratio is what
a reader waits for and is the one judged against the targets; it includes the page faults of
fresh arrays (system time), which on a virtual machine vary between identical runs by up to a few
seconds per GiB. The user-CPU ratio leaves those out and counts only the passes over memory, so it
is larger for a kernel that makes more passes than its floor. On a shared machine the wall time
also counts waiting for a core; the load average is printed with the results. Peak memory is
measured with :mod:`tracemalloc` (numpy reports its array allocations to it) and includes the
result.
"""

from __future__ import annotations

import argparse
import datetime
import gc
import importlib.metadata as metadata
import math
import os
import pathlib
import platform
import re
import resource
import statistics
import subprocess
import sys
import time
import tracemalloc

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from course_utils.alibi import alibi_bias  # noqa: E402
from course_utils.relative import relative_positions, t5_relative_position_bucket  # noqa: E402
from course_utils.rope import apply_rope, rope_inv_freq  # noqa: E402
from course_utils.scaling import METHODS, rope_scaling  # noqa: E402
from course_utils.sinusoidal import (  # noqa: E402
    sinusoidal_encoding,
    sinusoidal_encoding_at,
    sinusoidal_frequencies,
)

RESULTS = ROOT / "benchmarks" / "RESULTS.md"
PYTEST_NB = ["--nbval", "--nbval-current-env", "--nbval-sanitize-with", "nbval_sanitize.cfg",
             "-p", "no:cacheprovider", "-q"]
MiB = 2**20


# ---------------------------------------------------------------------------- measuring
class Timing:
    """Median wall and user-CPU seconds of one function."""

    def __init__(self, wall, cpu):
        self.wall, self.cpu = wall, cpu

    def __str__(self):
        return f"{fmt_time(self.wall)} / {fmt_time(self.cpu)}"

    def ratios(self, floor):
        """(wall ratio, user-CPU ratio) of this timing to ``floor``'s."""
        return self.wall / floor.wall, self.cpu / floor.cpu


def _user_seconds():
    return resource.getrusage(resource.RUSAGE_SELF).ru_utime


def median_times(*functions, repeats):
    """Median wall and user CPU time of each function, calling them in turn ``repeats`` times."""
    samples = [([], []) for _ in functions]
    for _ in range(repeats):
        for (walls, cpus), function in zip(samples, functions, strict=True):
            gc.collect()
            start, start_cpu = time.perf_counter(), _user_seconds()
            result = function()
            cpus.append(_user_seconds() - start_cpu)
            walls.append(time.perf_counter() - start)
            del result
    return [Timing(statistics.median(w), statistics.median(c)) for w, c in samples]


def peak_memory(function):
    """Peak bytes allocated while ``function()`` runs, its result included."""
    gc.collect()
    tracemalloc.start()
    try:
        result = function()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    del result
    return peak


def fmt_time(seconds):
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.1f} ms"
    return f"{seconds * 1e6:.1f} µs"


def fmt_bytes(n):
    if n >= 2**30:
        return f"{n / 2**30:.2f} GiB"
    if n >= MiB:
        return f"{n / MiB:.0f} MiB"
    return f"{n / 1024:.1f} KiB"


def verdict(value, target):
    return "yes" if value <= target else "**no**"


def table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


# ---------------------------------------------------------------------------- the machine
def machine_header():
    cpu = platform.processor() or "unknown"
    try:
        for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count()
    try:
        pages = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        memory = fmt_bytes(pages)
    except (ValueError, OSError, AttributeError):
        memory = "unknown"
    versions = []
    for name in ("numpy", "course-utils", "pytest", "nbval", "nbclient", "ipykernel", "sphinx",
                 "myst-nb"):
        try:
            versions.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            versions.append(f"{name} not installed")
    blas = {k: os.environ.get(k, "unset") for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE",
                                                     "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")}
    return [
        f"- Date: {datetime.date.today().isoformat()}",
        f"- CPU: {cpu}; {os.cpu_count()} logical cores ({usable} usable); memory {memory}",
        f"- Python {platform.python_version()} on {platform.system()} {platform.release()}",
        "- " + ", ".join(versions),
        "- Environment: " + ", ".join(f"{k}={v}" for k, v in blas.items()),
    ]


def load_average():
    try:
        return ", ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


# ---------------------------------------------------------------------------- kernels
def rope_loop(x, positions, base=10000.0):
    """RoPE as many tutorials write it: one pair at a time, interleaved layout."""
    seq, dim = x.shape
    out = np.empty_like(x)
    for m in range(seq):
        for i in range(dim // 2):
            theta = positions[m] * base ** (-2 * i / dim)
            c, s = math.cos(theta), math.sin(theta)
            a, b = x[m, 2 * i], x[m, 2 * i + 1]
            out[m, 2 * i] = a * c - b * s
            out[m, 2 * i + 1] = a * s + b * c
    return out


def bench_rope(repeats):
    rng = np.random.default_rng(0)
    shape = (4, 16, 4096, 128)
    positions = np.arange(shape[-2])
    rows = []
    for dtype in (np.float64, np.float32):
        x = rng.standard_normal(shape).astype(dtype)
        c = rng.standard_normal(shape[-2:]).astype(dtype)  # a broadcast (seq, head_dim) table
        for layout in ("half", "interleaved"):
            kernel, floor = median_times(
                lambda x=x, layout=layout: apply_rope(x, positions, layout=layout),
                lambda x=x, c=c: x * c,
                repeats=repeats,
            )
            wall, cpu = kernel.ratios(floor)
            rows.append([f"`apply_rope` {layout}, {np.dtype(dtype).name}", f"{shape}",
                         str(kernel), f"`x * c`: {floor}", f"{wall:.2f}x / {cpu:.2f}x",
                         "<= 4x", verdict(wall, 4.0)])
        del x
    # A small case for the per-pair loop.
    small = rng.standard_normal((256, 64))
    pos = np.arange(256)
    loop_result = rope_loop(small, pos)
    error = float(np.max(np.abs(loop_result - apply_rope(small, pos, layout="interleaved"))))
    if error > 1e-12:
        raise AssertionError(f"the loop and apply_rope disagree by {error:.2e}")
    vectorised, loop = median_times(lambda: apply_rope(small, pos, layout="interleaved"),
                                    lambda: rope_loop(small, pos), repeats=repeats)
    wall, cpu = vectorised.ratios(loop)
    rows.append(["`apply_rope` interleaved vs a per-pair Python loop", "(256, 64)",
                 str(vectorised), f"loop: {loop}",
                 f"{wall:.4f}x / {cpu:.4f}x ({1 / wall:.0f} times faster)", "-", "-"])
    return rows


def bench_sinusoidal(repeats):
    n, d = 131072, 1024
    rows = []
    angles = np.multiply.outer(np.arange(n, dtype=np.float64),
                               np.repeat(sinusoidal_frequencies(d), 2))  # the table's own angles
    # Only the two compared calls alternate: each then runs right after the other freed an
    # array of the same size, so neither pays more than the other for first touching memory the
    # virtual machine has handed back to its host.
    table_time, sin_time = median_times(lambda: sinusoidal_encoding(n, d),
                                        lambda: np.sin(angles), repeats=repeats)
    t32, sin32_time = median_times(lambda: sinusoidal_encoding(n, d, dtype=np.float32),
                                   lambda: np.sin(angles, out=np.empty(angles.shape, np.float32),
                                                  casting="same_kind"), repeats=repeats)
    angles = None  # free the 1 GiB before measuring peak memory
    peak = peak_memory(lambda: sinusoidal_encoding(n, d))
    out_bytes = n * d * 8
    wall, cpu = table_time.ratios(sin_time)
    rows.append([f"`sinusoidal_encoding({n}, {d})` float64", str(table_time),
                 f"{fmt_bytes(peak)} ({peak / out_bytes:.2f}x the table)",
                 f"`np.sin` over {n * d:,} elements: {sin_time}", f"{wall:.2f}x / {cpu:.2f}x",
                 "<= 2x", verdict(wall, 2.0)])
    peak32 = peak_memory(lambda: sinusoidal_encoding(n, d, dtype=np.float32))
    wall, cpu = t32.ratios(sin32_time)
    rows.append([f"`sinusoidal_encoding({n}, {d}, dtype=np.float32)`", str(t32),
                 f"{fmt_bytes(peak32)} ({peak32 / (out_bytes / 2):.2f}x the table)",
                 f"`np.sin` of the float64 angles, written as float32: {sin32_time}",
                 f"{wall:.2f}x / {cpu:.2f}x", "<= 2x", verdict(wall, 2.0)])
    start = 10**6
    (t_slice,) = median_times(lambda: sinusoidal_encoding(4096, d, start=start), repeats=repeats)
    peak_slice = peak_memory(lambda: sinusoidal_encoding(4096, d, start=start))
    rows.append([f"`sinusoidal_encoding(4096, {d}, start=10**6)` (a slice)", str(t_slice),
                 fmt_bytes(peak_slice), "-", "-", "-", "-"])
    positions = np.random.default_rng(0).uniform(0, 1e6, 4096)
    (t_at,) = median_times(lambda: sinusoidal_encoding_at(positions, d), repeats=repeats)
    peak_at = peak_memory(lambda: sinusoidal_encoding_at(positions, d))
    rows.append([f"`sinusoidal_encoding_at` 4096 fractional positions, d={d}", str(t_at),
                 fmt_bytes(peak_at), "-", "-", "-", "-"])
    return rows


def bench_biases(repeats):
    n, heads = 8192, 8
    rows = []
    for causal in (True, False):
        (t,) = median_times(lambda causal=causal: alibi_bias(heads, n, causal=causal),
                            repeats=max(3, repeats // 2))
        peak = peak_memory(lambda causal=causal: alibi_bias(heads, n, causal=causal))
        rows.append([f"`alibi_bias({heads}, {n}, causal={causal})`", str(t), fmt_bytes(peak),
                     fmt_bytes(heads * n * n * 8)])
    rel = relative_positions(n)
    for bidirectional in (True, False):
        (t,) = median_times(
            lambda b=bidirectional: t5_relative_position_bucket(rel, bidirectional=b),
            repeats=repeats)
        peak = peak_memory(lambda b=bidirectional: t5_relative_position_bucket(rel, bidirectional=b))
        rows.append([f"`t5_relative_position_bucket` of {n} x {n}, bidirectional={bidirectional}",
                     str(t), fmt_bytes(peak), fmt_bytes(n * n * 8)])
    (t,) = median_times(lambda: relative_positions(n), repeats=repeats)
    rows.append([f"`relative_positions({n})` (the input above)", str(t),
                 fmt_bytes(peak_memory(lambda: relative_positions(n))), fmt_bytes(n * n * 8)])
    return rows


def bench_scaling(repeats):
    head_dim, n_pairs = 128, 64
    common = {"base": 500000.0, "factor": 8.0, "original_max_position_embeddings": 8192}
    extra = {
        "linear": {}, "ntk": {}, "dynamic": {"seq_len": 32768}, "yarn": {},
        "llama3": {"low_freq_factor": 1.0, "high_freq_factor": 4.0},
        "longrope": {"short_factor": [1.0] * n_pairs, "long_factor": [4.0] * n_pairs,
                     "seq_len": 32768},
    }
    rows = []
    for method in METHODS:
        kwargs = {**common, **extra.get(method, {})}

        def call(method=method, kwargs=kwargs):
            return rope_scaling(method, head_dim, **kwargs)

        (t,) = median_times(lambda call=call: [call() for _ in range(200)], repeats=repeats)
        rows.append([f"`rope_scaling({method!r}, 128, ...)`", fmt_time(t.cpu / 200),
                     fmt_bytes(peak_memory(call))])
    (t,) = median_times(lambda: [rope_inv_freq(128) for _ in range(200)], repeats=repeats)
    rows.append(["`rope_inv_freq(128)` (unscaled, for comparison)", fmt_time(t.cpu / 200),
                 fmt_bytes(peak_memory(lambda: rope_inv_freq(128)))])
    return rows


# ---------------------------------------------------------------------------- released model
MODEL_TARGET_S = 5.0  # a 512-token forward pass of chapter 13's model, on two cores


def bench_real_model(repeats, lengths=(512, 2048, 8192)):
    """Chapter 13's numpy forward pass (course_utils.real_model) beside transformers' on the same
    GGUF file (float32, its default attention), per token at each length; rows, or a reason."""
    from course_utils.real_model import files, load_model

    if not files.model_available():
        return None, f"not measured: the model file is missing (`{files.FETCH_COMMAND}`)"
    model = load_model()
    from course_utils.real_model.measures import corpus_ids

    ids = corpus_ids(model, max(lengths))
    (t512,) = median_times(lambda: model.forward(ids[:512]), repeats=repeats)
    rows = [["numpy `Model.forward`, 512 tokens", str(t512), f"< {MODEL_TARGET_S:.0f} s",
             verdict(t512.wall, MODEL_TARGET_S)]]
    try:
        import torch
        from transformers import LlamaForCausalLM

        path = files.require_model()
        hf = LlamaForCausalLM.from_pretrained(path.parent, gguf_file=path.name,
                                              dtype=torch.float32).eval()
    except ImportError:
        hf = None
    for n in lengths:
        runs = repeats if n <= 512 else 1
        (t,) = median_times(lambda n=n: model.forward(ids[:n]), repeats=runs)
        row = [f"{n} tokens: per token, numpy", fmt_time(t.wall / n)]
        if hf is not None:
            def run_hf(n=n):
                with torch.no_grad():
                    hf(input_ids=torch.tensor(ids[None, :n]), use_cache=False)

            (h,) = median_times(run_hf, repeats=runs)
            row += [f"transformers {fmt_time(h.wall / n)}", f"ratio {t.wall / h.wall:.1f}x"]
        else:
            row += ["transformers not installed", ""]
        rows.append(row)
    return rows, None


# ---------------------------------------------------------------------------- the course
LAB_TARGET_S = 120.0  # each lab notebook under nbval, on two cores
def bench_course(python):
    notebooks = sorted((ROOT / "notebooks").glob("*.ipynb"))
    rows, main_total, lab_total = [], 0.0, 0.0
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    for path in notebooks:
        start = time.perf_counter()
        proc = subprocess.run([python, "-m", "pytest", str(path.relative_to(ROOT)), *PYTEST_NB],
                              cwd=ROOT, env=env, capture_output=True, text=True)
        elapsed = time.perf_counter() - start
        summary = (proc.stdout.strip().splitlines() or ["(no output)"])[-1]
        summary = re.sub(r"\s+in [\d.]+s.*$", "", summary.strip("= "))
        is_lab = "lab" in path.stem
        if is_lab:
            lab_total += elapsed
        else:
            main_total += elapsed
        result = "pass" if proc.returncode == 0 else f"**FAIL** ({summary})"
        if is_lab:  # each lab has its own budget
            result += f"; target < {LAB_TARGET_S:.0f} s: {verdict(elapsed, LAB_TARGET_S)}"
        rows.append([path.name + (" (lab)" if is_lab else ""), f"{elapsed:.1f} s", result])
    return notebooks, rows, main_total, lab_total


def bench_book():
    makefile = (ROOT / "Makefile").read_text()
    if not re.search(r"^book:", makefile, flags=re.MULTILINE):
        return None, "not available (no `book` target in the Makefile)"
    start = time.perf_counter()
    proc = subprocess.run(["make", "--no-print-directory", "book"], cwd=ROOT,
                          capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["?"])[-1]
        return elapsed, f"**failed** after {elapsed:.1f} s: {tail}"
    return elapsed, f"{elapsed:.1f} s"


# ---------------------------------------------------------------------------- main
def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="timings per measurement (median)")
    parser.add_argument("--no-course", action="store_true", help="skip the notebooks and the site")
    parser.add_argument("--output", type=pathlib.Path, default=RESULTS)
    parser.add_argument("--model-only", action="store_true",
                        help="only time chapter 13's released model and print it (with --write: "
                             "replace its section in --output, keeping the rest)")
    parser.add_argument("--suite-only", action="store_true",
                        help="only time `make test` (the README's test command) and print it "
                             "(with --write: replace its section in --output)")
    parser.add_argument("--write", action="store_true",
                        help="with --model-only or --suite-only: write that section")
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error("--repeats must be >= 1")
    if args.suite_only:
        block = _suite_block("python benchmarks/bench.py --suite-only --write")
        print(block)
        if args.write:
            _replace_block(args.output, block, "test-suite")
            print(f"\nwrote the section into {args.output}")
        return 0
    if args.model_only:
        block = _model_block(args.repeats, "python benchmarks/bench.py --model-only --write")
        print(block)
        if args.write:
            _replace_block(args.output, block, "real-model")
            print(f"\nwrote the section into {args.output}")
        return 0

    load_before = load_average()
    out = ["# Benchmark results", "",
           "Produced by `make bench` (`benchmarks/bench.py`). Times are medians over "
           f"{args.repeats} runs, shown as wall / user CPU time; targets are judged on wall "
           "time (the script's docstring explains both).", "", *machine_header(),
           f"- Load average (1, 5, 15 min) at the start: {load_before}", ""]

    def section(title, body):
        out.extend([f"## {title}", "", body, ""])
        print(f"\n## {title}\n\n{body}", flush=True)

    print("\n".join(out), flush=True)
    section("RoPE: `apply_rope` against one elementwise pass",
            "The floor is `x * c` with a broadcast `(seq, head_dim)` table: one read and one "
            "write of the array, which no memory-bound kernel can beat.\n\n"
            + table(["kernel", "x shape", "time (wall / user CPU)", "floor / baseline",
                     "ratio (wall / user CPU)", "target (wall)", "met"],
                    bench_rope(args.repeats)))
    section("Sinusoidal tables",
            "The baseline is `np.sin` over an array of the table's own angles, one transcendental "
            "pass writing a new array of the table's size. On a virtual machine the system time "
            "of first touching a fresh GiB varies by seconds between identical runs, for the "
            "table and the baseline alike, so the wall ratio of the 1 GiB tables swings from run "
            "to run (0.6x to 2.4x seen here); the user-CPU ratio is the stable measure of the "
            "work.\n\n"
            + table(["call", "time (wall / user CPU)", "peak memory", "baseline",
                     "ratio (wall / user CPU)", "target (wall)", "met"],
                    bench_sinusoidal(args.repeats)))
    section("Attention biases at 8192 x 8192",
            table(["call", "time (wall / user CPU)", "peak memory", "result size"],
                  bench_biases(args.repeats)))
    section("RoPE scaling: `rope_scaling` for every method (head_dim 128)",
            "User CPU time per call (median over batches of 200 calls).\n\n"
            + table(["call", "time per call", "peak memory"], bench_scaling(args.repeats)))

    out.extend(["", _model_block(args.repeats, "make bench"), ""])
    print(out[-2], flush=True)

    if not args.no_course:
        notebooks, rows, main_total, lab_total = bench_course(sys.executable)
        rows.append(["**all except the labs**", f"**{main_total:.1f} s**",
                     f"target < 90 s: {verdict(main_total, 90.0)}"])
        if any("lab" in p.stem for p in notebooks):
            rows.append(["**the labs together**", f"**{lab_total:.1f} s**",
                         f"each lab under {LAB_TARGET_S:.0f} s (above)"])
        section("The course: each notebook under nbval",
                "Each notebook runs in its own `pytest --nbval` process (kernel start-up "
                "included), as `make nbval` runs them.\n\n"
                + table(["notebook", "wall time", "result"], rows))
        _, book = bench_book()
        section("The site", f"`make book` (no execution; the committed outputs): {book}")
        out.extend(["", _suite_block("make bench"), ""])
        print(out[-2], flush=True)
    out.append(f"Load average at the end: {load_average()}")
    print(out[-1])
    out += _kept_sections(args.output)
    args.output.write_text("\n".join(out) + "\n")
    print(f"\nwrote {args.output.relative_to(ROOT) if args.output.is_relative_to(ROOT) else args.output}")
    return 0


def _model_section(repeats):
    rows, reason = bench_real_model(repeats)
    if rows is None:
        return reason
    return ("SmolLM2-135M-Instruct (Q4_1 GGUF dequantized to float32), the first tokens of the "
            "four docstring PEPs chapter 13 reads (make model); wall / user CPU time. "
            "Lengths above 512 are timed once.\n\n"
            + table(["run", "time", "transformers / target", "ratio / met"], rows))


MODEL_TITLE = "Chapter 13's released model: numpy forward pass beside transformers'"


def _model_block(repeats, command):
    """The released model's section between ``real-model`` markers, with the load around it
    (``--model-only --write`` replaces just this block, on an idle machine)."""
    before = load_average()
    body = _model_section(repeats)
    return (f"<!-- real-model:begin -->\n## {MODEL_TITLE}\n\n"
            f"`{command}`, {datetime.date.today()}; load average "
            f"before {before}, after {load_average()}.\n\n{body}\n<!-- real-model:end -->")


SUITE_TARGET_S = 300.0  # `make test` within 5 minutes on two cores


def _suite_block(command):
    """``make test`` timed once (everything it runs: the unit tests and notebooks in one
    process per core, lint, the notebook checks), between ``test-suite`` markers."""
    before = load_average()
    start = time.perf_counter()
    proc = subprocess.run(["make", "--no-print-directory", "test"], cwd=ROOT,
                          capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    summary = [line for line in proc.stdout.splitlines()
               if re.match(r"^=+ .*(passed|failed|error)", line)]
    result = summary[-1].strip("= ") if summary else "no pytest summary"
    if proc.returncode != 0:
        result = f"**failed** (exit {proc.returncode}): {result}"
        failures = [line for line in proc.stdout.splitlines() if line.startswith(("FAILED",
                                                                                 "ERROR"))]
        print("\n".join(failures or proc.stdout.splitlines()[-40:] + proc.stderr.splitlines()[-20:]),
              file=sys.stderr)
    return (f"<!-- test-suite:begin -->\n## `make test`\n\n`{command}`, "
            f"{datetime.date.today()}; load average before {before}, after {load_average()}. "
            "As the README runs it, its `book` prerequisite included (Sphinx rebuilds only "
            "what changed); set-up excluded (`.venv` exists).\n\n"
            + table(["command", "wall time", "target", "met", "result"],
                    [["`make test`", f"{elapsed / 60:.1f} min ({elapsed:.0f} s)",
                      f"< {SUITE_TARGET_S / 60:.0f} min", verdict(elapsed, SUITE_TARGET_S),
                      result]])
            + "\n<!-- test-suite:end -->")


def _replace_block(path, block, name):
    """Put ``block`` in place of the ``name`` block of ``path`` (or at its end)."""
    text = path.read_text() if path.is_file() else "# Benchmark results\n"
    pattern = rf"<!-- {name}:begin -->.*?<!-- {name}:end -->"
    if re.search(pattern, text, flags=re.S):
        text = re.sub(pattern, lambda _: block, text, count=1, flags=re.S)
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    path.write_text(text)


def _kept_sections(path):
    """Sections other tools write between ``<!-- name:begin -->`` and ``<!-- name:end -->``
    (``make portability``, ``make lab-seeds``): kept when the benchmarks are rewritten."""
    text = path.read_text() if path.is_file() else ""
    kept = [block for block, name in
            re.findall(r"(<!-- ([a-z0-9-]+):begin -->.*?<!-- \2:end -->)", text, flags=re.S)
            if name not in ("real-model", "test-suite")]  # the full run writes these itself
    return ["", *kept] if kept else []


if __name__ == "__main__":
    sys.exit(main())
