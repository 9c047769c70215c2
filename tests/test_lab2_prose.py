"""Chapter 12's prose numbers against the stored grid they are read from.

The chapter's text quotes numbers of ``course_utils/data/records/lab2_grid.json`` (means over the
seeds, differences, ranges over runs). Each test recomputes one statement from the record and
looks for it, formatted as the text writes it, in the chapter's markdown: a regenerated grid
that moves a number fails here until the sentence is reread.
"""

from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest

from course_utils.lab.extension import (
    CLAIMS,
    cell_values,
    grid_runs,
    paired_bootstrap,
    path_steps,
    path_verdicts,
    rerun_test,
    stated_on_paths,
    stated_verdicts,
    t_interval,
    verdict,
)

ROOT = pathlib.Path(__file__).resolve().parents[1]
CHAPTER = ROOT / "notebooks" / "12_lab_context_extension.ipynb"
GRID = json.loads((ROOT / "course_utils" / "data" / "records" / "lab2_grid.json").read_text())
MAIN = GRID["main"]
BASE = GRID["bases"]["10000.0"]
LR = GRID["lr_variants"]
MAIN_LABEL = next(iter(grid_runs(GRID)))
RERUNS = json.loads((ROOT / "course_utils" / "data" / "records" / "lab2_reruns.json").read_text())


def physical(cell):
    """The floating-point paths of a stated verdict: here and each rerun's CPU (the part of its
    name before the first comma; one CPU's reruns of several parts are one path)."""
    return {"here"} | {where.split(",")[0] for where in cell["paths"]}


@pytest.fixture(scope="module")
def text():
    cells = json.loads(CHAPTER.read_text())["cells"]
    return "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")


def mean(run, who, mult, steps, split="far"):
    return float(cell_values(run, who, mult, steps, split).mean())


def diff(run, a, b, split="far"):
    return float((cell_values(run, *a, split) - cell_values(run, *b, split)).mean())


def verdicts(run, a, b, split="far"):
    """The bootstrap and the t verdict of A - B."""
    d = cell_values(run, *a, split) - cell_values(run, *b, split)
    return verdict(*paired_bootstrap(d)[1:]), verdict(*t_interval(d)[1:])


def f2(x):
    return f"{x:.2f}"


def signed(x, digits=2):
    return f"{x:+.{digits}f}"


def test_far_query_order_after_figure_2(text):
    dips = [diff(MAIN, (m, 2, 25), (m, 2, 0)) for m in ("ntk", "yarn")]
    assert f2(dips[0]) == f2(dips[1]) and f"({f2(dips[0])} each;".replace("-", "−") in text
    assert verdicts(MAIN, ("ntk", 2, 25), ("ntk", 2, 0)) == ("disagrees", "unclear")
    assert verdicts(MAIN, ("yarn", 2, 25), ("yarn", 2, 0)) == ("disagrees", "disagrees")
    gains = {m: diff(MAIN, (m, 2, 200), (m, 2, 0)) for m in MAIN["methods"]}
    assert min(gains, key=gains.get) == "rope"      # "gains least"
    assert (f"unchanged RoPE gains least on the mean ({f2(mean(MAIN, 'rope', 2, 200))} after 200 steps, "
            f"against the position-blind {f2(mean(MAIN, 'blind', 2, 0))},") in text
    pi, dyn = mean(MAIN, "pi", 4, 200), mean(MAIN, "dynamic", 4, 200)
    ntk, yarn = mean(MAIN, "ntk", 4, 200), mean(MAIN, "yarn", 4, 200)
    assert f"({f2(pi)} and {f2(dyn)})" in text and f"({f2(ntk)}, {f2(yarn)})" in text
    assert f"the unchanged RoPE ({f2(mean(MAIN, 'rope', 4, 200))})" in text
    order = sorted(("pi", "dynamic", "ntk", "yarn", "rope"), key=lambda m: -mean(MAIN, m, 4, 200))
    assert order == ["pi", "dynamic", "ntk", "yarn", "rope"]
    for a, b in zip(order[:-1], order[1:], strict=True):   # each ahead of the next, interval > 0
        assert verdicts(MAIN, (a, 4, 200), (b, 4, 200))[0] == "agrees", (a, b)
    for m in ("pi", "dynamic"):          # "pass the position-blind line between 50 and 100"
        assert verdicts(MAIN, (m, 4, 50), ("blind", 4, 0))[0] != "agrees"
        assert verdicts(MAIN, (m, 4, 100), ("blind", 4, 0))[0] == "agrees"


def test_extrapolation_and_pi_across_learning_rates(text):
    gain = diff(MAIN, ("rope", 4, 100), ("rope", 4, 0))
    assert f"{signed(gain, 3)} at $4L$ after 100 steps" in text
    runs = [MAIN] + list(LR.values())
    past = [diff(run, ("pi", 4, 100), ("rope", 4, 100)) for run in runs]
    assert f"by {f2(min(past))} to {f2(max(past))}" in text
    quoted = f"({diff(BASE, ('pi', 4, 100), ('rope', 4, 100)):+.2f})".replace("-", "−")
    assert f"At base $10^4$ PI past RoPE is unclear {quoted}" in text
    assert verdicts(BASE, ("pi", 4, 100), ("rope", 4, 100))[0] == "unclear"
    assert min(past) > 0


def test_yarn_against_pi_ranges(text):
    beta = GRID["yarn_beta"]["run"]
    toy = [-diff(run, ("yarn", 2, n), ("pi", 2, n)) for run in [MAIN, *LR.values(), beta]
           for n in (25, 50)]
    assert f"PI ahead by {f2(min(toy))} to {f2(max(toy))}" in text and min(toy) > 0
    base = [diff(BASE, ("yarn", m, n), ("pi", m, n)) for m in (2, 4) for n in (25, 50)]
    assert f"YaRN ahead by {f2(min(base))} to {f2(max(base))}" in text and min(base) > 0


def test_ntk_aware_and_temperature_at_base_1e4(text):
    over_pi = [diff(BASE, ("ntk", m, 0), ("pi", m, 0)) for m in (2, 4)]
    assert f"({signed(over_pi[0])}, {signed(over_pi[1])})" in text
    assert f"of that reader ({signed(diff(BASE, ('ntk', 4, 0), ('blind', 4, 0)))})" in text
    assert f"{signed(diff(BASE, ('yarn', 4, 25), ('yarn_no_t', 4, 25)))} at base $10^4$" in text


def test_temperature_in_the_main_grid(text):
    d = cell_values(MAIN, "yarn", 4, 25) - cell_values(MAIN, "yarn_no_t", 4, 25)
    m, low, high = paired_bootstrap(d)
    quoted = f"{m:+.3f} [{low:+.3f}, {high:+.3f}]".replace("-", "−")
    assert (f"is not shown to move far accuracy at $4L$ at the toy's base ({quoted} after 25 steps "
            "in the main grid") in text
    ends = {n: [end for p in path_verdicts(GRID, RERUNS, MAIN_LABEL, ("yarn", 4, n),
                                           ("yarn_no_t", 4, n)).values() for end in p[1:3]]
            for n in MAIN["checkpoints"]}
    assert max(map(abs, ends[25])) < 0.02 and max(abs(e) for v in ends.values() for e in v) < 0.04
    assert all(lo < 0 < hi for v in ends.values() for lo, hi in zip(v[::2], v[1::2], strict=True))
    assert "every interval within ±0.02 after 25 steps and ±0.04 at any checkpoint" in text


def test_stretched_methods_gain_more_than_rope_at_4l():
    """Quiz 12-fine-tune: at 4L every stretched method gains more than the unchanged RoPE by
    200 steps, on every floating-point path."""
    for m in ("pi", "ntk", "dynamic", "yarn", "yarn_no_t"):
        for run in [MAIN] + [r[MAIN_LABEL] for r in RERUNS.values() if MAIN_LABEL in r]:
            gain = (cell_values(run, m, 4, 200) - cell_values(run, m, 4, 0)
                    - cell_values(run, "rope", 4, 200) + cell_values(run, "rope", 4, 0))
            assert verdict(*paired_bootstrap(gain)[1:]) == "agrees", m


def test_passkey_and_no_fine_tune_order(text):
    best = max(mean(MAIN, m, 4, 200, "passkey") for m in MAIN["methods"])
    assert f"at most {f2(best)} after 200 steps" in text
    assert f"against {f2(mean(MAIN, 'pi', 4, 200))} for PI on the far split" in text
    assert f"the worst of the methods ({f2(mean(MAIN, 'rope', 4, 0))})" in text
    assert f"dynamic NTK is next ({f2(mean(MAIN, 'dynamic', 4, 0))})" in text
    order = sorted(MAIN["methods"], key=lambda m: mean(MAIN, m, 4, 0))
    assert order[:2] == ["rope", "dynamic"]
    assert (f"({f2(mean(MAIN, 'ntk', 4, 0))} and {f2(mean(MAIN, 'pi', 4, 0))}, which the grid "
            "cannot tell apart)") in text
    assert verdicts(MAIN, ("ntk", 4, 0), ("pi", 4, 0))[0] == "unclear"


def test_section_3_3_rule_prefix_by_prefix(text):
    claims = {"rope": ("rope", 4, 0), "short": ("ntk_short", 4, 0), "blind": ("blind", 4, 0),
              "ntk": ("ntk", 4, 0)}
    a = ("dynamic_prefix", 4, 0)
    toy = {k: diff(MAIN, a, b) for k, b in claims.items()}
    base = {k: diff(BASE, a, b) for k, b in claims.items()}

    def q(x):
        return signed(x).replace("-", "−")

    assert f"unchanged RoPE ({q(toy['rope'])}; {q(base['rope'])} at base $10^4$)" in text
    assert f"NTK-aware set for $2L$ ({q(toy['short'])}; {q(base['short'])})" in text
    assert f"only at base $10^4$ ({q(base['blind'])}; {q(toy['blind'])} at the toy's)" in text
    assert f"below NTK-aware set for $4L$ ({q(toy['ntk'])}; {q(base['ntk'])})" in text
    words = {k: verdicts(MAIN, a, b)[0] for k, b in claims.items()}
    assert words == {"rope": "agrees", "short": "agrees", "blind": "disagrees",
                     "ntk": "disagrees"}
    words = {k: verdicts(BASE, a, b)[0] for k, b in claims.items()}
    assert words == {"rope": "agrees", "short": "agrees", "blind": "agrees", "ntk": "disagrees"}


def test_the_model_trained_long_and_the_passkey_scope(text):
    k = MAIN["multipliers"].index(4)
    blind = MAIN["baselines"]["blind"]["far"][k]
    curve = {1000: MAIN["scratch_accuracy"]["far"]["per_seed"][k]}
    curve |= {int(n): v["far"] for n, v in MAIN["ceiling_curve"].items()}
    means = [f2(sum(v) / len(v)) for _, v in sorted(curve.items())]
    assert f"the model reads far queries at {', '.join(means[:-1])} and {means[-1]}" in text
    above = {n: sum(x > blind for x in v) for n, v in curve.items()}
    assert f"{above[16000]} of 10 above the position-blind reader at 16 000 steps" in text
    assert above[16000] < above[8000]           # "no ceiling": fewer seeds as it trains on
    # PI past RoPE on the passkey: not "agrees" at two of the three learning rates
    words = [verdicts(run, ("pi", 4, 100), ("rope", 4, 100), "passkey")[0]
             for run in [MAIN, *LR.values()]]
    assert sum(w != "agrees" for w in words) == 2 and "disagrees" in words
    assert "on the passkey it is unclear or reversed at two" in text
    t = diff(BASE, ("yarn", 4, 25), ("yarn_no_t", 4, 25))
    assert f"{signed(t)} at base $10^4$, an interval above 0" in text
    assert verdicts(BASE, ("yarn", 4, 25), ("yarn_no_t", 4, 25))[0] == "agrees"


def test_the_reruns_on_other_cpus(text):
    in_sample = [rerun_test(GRID, w) for w, r in GRID["reruns"].items() if not r["held_out"]]
    stated = sum(n for _, n, _ in in_sample)
    lost = [c for *_, changed in in_sample for c in changed]
    assert {after for *_, after in lost} == {"unclear"}              # "none reversed"
    assert stated >= len(lost) == 3
    assert "On an emulated old CPU 3 far-split verdicts decided here became unclear" in text
    assert {(claim, label) for claim, label, *_ in lost} == {
        ("NTK-aware over PI (2L, 0 steps)", MAIN_LABEL),
        ("YaRN before PI (4L, 25 steps)", "lr 0.0003"),
        ("YaRN before PI (4L, 50 steps)", "YaRN beta rescaled")}
    far = stated_verdicts(GRID)
    cells = [c for by_run in far.values() for c in by_run.values() if not c["same_as"]]
    decided = sum(c["stated"] != "unclear" for c in cells)
    assert f"{decided} of {len(cells)} far-split measurements keep a verdict" in text
    (held_out,) = [w for w, r in GRID["reruns"].items() if r["held_out"]]
    held, n, _ = rerun_test(GRID, held_out)
    assert n == decided and held == n and f"keeps all {n}" in text
    held, n, _ = rerun_test(GRID, held_out, "passkey")
    assert f"(on the passkey {held} of {n})" in text
    kept = []      # the steps-to-threshold verdicts stated before the held-out rerun
    for label in grid_runs(GRID):
        for mult in (2, 4):
            paths = path_steps(GRID, RERUNS, label, mult)
            before = stated_on_paths({w: p for w, p in paths.items() if w != held_out})
            if before != "unclear":
                kept.append(paths[held_out][3] == before)
    assert f"the steps-to-threshold verdicts, put under the rule afterwards, keep {sum(kept)} of " \
           f"{len(kept)}" in text
    assert f"kept all {decided} far-split claim verdicts stated before it" in text and held < n


def test_verdicts_the_text_states_are_the_stated_ones(text):
    far, key = stated_verdicts(GRID), stated_verdicts(GRID, "passkey")
    toy = [MAIN_LABEL, "lr 0.0003", "lr 0.003"]
    # NTK-aware against PI with no fine-tune at the toy's base: unclear, below 0 on one path
    ntk = far["NTK-aware over PI (2L, 0 steps)"][MAIN_LABEL]
    assert ntk["stated"] == "unclear" and ntk["here"] == "disagrees"
    assert set(ntk["paths"].values()) == {"unclear"} and len(physical(ntk)) == 3
    assert (f"(−{f2(-ntk['mean'])} at $2L$, below 0 on one floating-point path of three)"
            in text)
    for label in toy:
        for claim in ("NTK-aware over PI (2L, 0 steps)", "NTK-aware over PI (4L, 0 steps)",
                      "temperature helps YaRN (4L, 25)"):
            assert far[claim][label]["stated"] == "unclear", (claim, label)
    assert "NTK-aware over PI with no fine-tune and the temperature are unclear on far " \
           "queries" in text
    for claim in ("YaRN before PI (2L, 25 steps)", "NTK-aware over PI (2L, 0 steps)",
                  "temperature helps YaRN (4L, 25)"):
        assert far[claim]["base 10000"]["stated"] == "agrees"
    # section 3.3 on the passkey: "unclear"
    for claim in ("3.3 dynamic over RoPE (4L, 0 steps)",
                  "3.3 dynamic over NTK set for 2L (4L, 0)"):
        assert {c["stated"] for c in key[claim].values()} == {"unclear"}
    key = path_verdicts(GRID, RERUNS, MAIN_LABEL, ("dynamic_prefix", 4, 0), ("ntk_short", 4, 0),
                        "passkey")
    assert sorted(p[3] for p in key.values()) == ["disagrees", "disagrees", "unclear"]
    assert (f"as section 3.3 argues (on the passkey {signed(key['here'][0])}, below 0 on two of "
            "three paths: unclear)").replace("-0.03", "−0.03") in text
    # the learning rates: each verdict after fine-tuning keeps its direction or becomes
    # unclear, but one
    tuned = {name for name, _, a, b in CLAIMS if a[2] or b[2]}
    new = [(claim, label) for claim in tuned & set(far) for label in toy[1:]
           if label in far[claim] and far[claim][label]["stated"] != "unclear"
           and far[claim][label]["stated"] != far[claim][MAIN_LABEL]["stated"]]
    assert new == [("YaRN before PI (4L, 50 steps)", "lr 0.003")]
    assert ("keeps its direction or becomes unclear, except YaRN at $4L$ after 50 steps at "
            "$3\\times10^{-3}$, which disagrees, as do YaRN's steps to the position-blind reader "
            "at $3\\times10^{-4}$") in text
    steps = {label: stated_on_paths(path_steps(GRID, RERUNS, label, 4))
             for label in (MAIN_LABEL, "lr 0.0003")}
    assert steps == {MAIN_LABEL: "unclear", "lr 0.0003": "disagrees"}
    assert far["YaRN before PI (4L, 50 steps)"]["lr 0.003"]["stated"] == "disagrees"


def test_statements_on_other_intervals_hold_on_every_path(text):
    def words(a, b):
        return [v[3] for v in path_verdicts(GRID, RERUNS, MAIN_LABEL, a, b).values()]

    # the dips at 2L: below 0 on two paths, unclear on the third
    for m in ("ntk", "yarn"):
        assert sorted(words((m, 2, 25), (m, 2, 0))) == ["disagrees", "disagrees", "unclear"]
    assert "each dip is unclear on one of the three floating-point paths" in text
    # no method above the position-blind reader with no fine-tune; RoPE below it at 200 steps
    for m in MAIN["methods"]:
        for mult in MAIN["multipliers"]:
            assert "agrees" not in words((m, mult, 0), ("blind", mult, 0)), (m, mult)
    for mult in MAIN["multipliers"]:
        assert set(words(("rope", mult, 200), ("blind", mult, 0))) == {"disagrees"}
    assert "no method is shown above the position-blind reader with no fine-tune" in text
    # PI and dynamic NTK pass the position-blind line between 50 and 100 steps, at 4L
    for m in ("pi", "dynamic"):
        assert "agrees" not in words((m, 4, 50), ("blind", 4, 0))
        assert set(words((m, 4, 100), ("blind", 4, 0))) == {"agrees"}
    # and end in this order at 4L after 200 steps, each ahead of the next on every path
    order = ["pi", "dynamic", "ntk", "yarn", "rope"]
    for a, b in zip(order[:-1], order[1:], strict=True):
        assert set(words((a, 4, 200), (b, 4, 200))) == {"agrees"}, (a, b)


def test_the_model_trained_at_4l_at_a_base_for_4l(text):
    import math

    curves = GRID["long_base"]["curves"]
    for_4l, llama = list(curves)
    share = math.log(4096 / (2 * math.pi)) / math.log(1e4)        # eq. (2), at 4L = 64 tokens
    assert float(for_4l) == pytest.approx((64 / (2 * math.pi)) ** (1 / share), rel=1e-12)
    assert float(llama) == 1e4

    def turns(base):        # the slowest pair (i = 3 of d = 8) within 4L
        return 64 * base ** (-6 / 8) / (2 * math.pi)

    assert f"slowest pair turns {turns(GRID['toy_base']):.2f} times within $4L$" in text
    assert f"to {float(for_4l):.2f} (the rule of" in text and f"{turns(float(for_4l)):.2f} turns)" in text
    k = MAIN["multipliers"].index(4)
    blind = MAIN["baselines"]["blind"]["far"][k]
    steps = sorted(curves[for_4l], key=int)
    means = [f2(sum(curves[for_4l][n]["far"]) / len(curves[for_4l][n]["far"])) for n in steps]
    assert (f"reads them at {', '.join(means[:-1])} and {means[-1]} after "
            f"{', '.join(steps[:-1])} and {steps[-1]} steps") in text
    every = [all(x > blind for x in curves[for_4l][n]["far"]) for n in steps]
    assert every == [False, False, True, True]      # "every seed ... from 1000 steps"
    assert "every seed above the position-blind reader from 1000 steps" in text
    assert float(means[-1]) - float(means[-2]) < 0.05                 # "flattening"
    pi = cell_values(MAIN, "pi", 4, 200).mean()
    assert (f"At the toy's base PI after 200 steps reads far queries at $4L$ far better ({f2(pi)}) "
            f"than the model trained at $4L$ ({f2(mean(MAIN, 'scratch', 4, 0))})") in text
    at_1e4 = curves[llama]["500"]["far"]
    pi_1e4 = cell_values(BASE, "pi", 4, 200).mean()
    assert (f"At base $10^4$ the model trained at $4L$ reads them at {f2(sum(at_1e4) / len(at_1e4))} "
            f"after 500 steps, on fewer tokens than PI's pre-training and fine-tune, PI after "
            f"200 steps at {f2(pi_1e4)}, and NTK-aware, dynamic NTK and YaRN at 1.00") in text
    assert all(f2(cell_values(BASE, m, 4, 200).mean()) == "1.00" for m in ("ntk", "dynamic", "yarn"))
    # "PI below it, seed-matched, on both paths that trained it"
    sb = [w for w in RERUNS if "base 10000" in RERUNS[w]]
    for where, curve in GRID["long_base"]["reruns"].items():
        run = RERUNS[[w for w in sb if w.split(",")[0] == where.split(",")[0]][-1]]["base 10000"]
        for pi, model in ((BASE, curves[llama]), (run, curve[llama])):
            d = cell_values(pi, "pi", 4, 200) - np.array(model["500"]["far"])
            assert verdict(*paired_bootstrap(d)[1:]) == "disagrees"
    assert "and NTK-aware, dynamic NTK and YaRN at 1.00 (PI below it, seed-matched, on both " \
           "paths that trained it)" in text
    s = MAIN["settings"]
    long_tokens = 500 * s["scratch_batch"] * 4 * s["train_length"]
    pi_tokens = s["steps"] * s["batch"] * s["train_length"] + 200 * s["tune_batch"] * 4 * s[
        "train_length"]
    assert long_tokens < pi_tokens


def test_the_ceiling_statements_hold_on_every_path():
    """Chapter 12's statements on the model trained at 4L at a base for 4L, on the rerun too:
    every seed above the position-blind reader from 1000 steps, far accuracy rising to its
    last step by less than 0.05 (flattening), and above PI after 200 steps on the mean."""
    long_base = GRID["long_base"]
    assert long_base.get("reruns")                    # run on another floating-point path
    k = MAIN["multipliers"].index(4)
    blind = MAIN["baselines"]["blind"]["far"][k]
    pi_on = {"here": cell_values(MAIN, "pi", 4, 200).mean()}
    pi_on |= {w.split(",")[0]: cell_values(r[MAIN_LABEL], "pi", 4, 200).mean()
              for w, r in RERUNS.items() if MAIN_LABEL in r}
    for where, curves in {"here": long_base["curves"], **long_base["reruns"]}.items():
        curve = curves[next(iter(curves))]             # the base for 4L
        steps = sorted(curve, key=int)
        assert [all(x > blind for x in curve[n]["far"]) for n in steps] == [
            False, False, True, True], where
        means = [sum(curve[n]["far"]) / len(curve[n]["far"]) for n in steps]
        assert 0 <= means[-1] - means[-2] < 0.05, where
        assert means[-1] > pi_on[where.split(",")[0]], where


def test_gains_attention_and_temperature_scope(text):
    runs = [MAIN] + [r[MAIN_LABEL] for r in RERUNS.values() if MAIN_LABEL in r]

    def gain(run, m, mult):
        return cell_values(run, m, mult, 200) - cell_values(run, m, mult, 0)

    # at 2L the unchanged RoPE gains less than PI and dynamic NTK, on every path
    for m in ("pi", "dynamic"):
        for run in runs:
            d = gain(run, m, 2) - gain(run, "rope", 2)
            assert verdict(*paired_bootstrap(d)[1:]) == "agrees", m
    assert "less than PI and dynamic NTK on every path" in text
    # the passkey accuracy of NTK-aware and YaRN, 0 -> 200 steps at 4L
    words = [f"{f2(mean(MAIN, m, 4, 0, 'passkey'))} to {f2(mean(MAIN, m, 4, 200, 'passkey'))}"
             for m in ("ntk", "yarn")]
    assert f"although their passkey accuracy rises ({words[0]}, {words[1]})" in text
    for m in ("ntk", "yarn"):       # "rises": an interval above 0, on every path
        for run in runs:
            d = cell_values(run, m, 4, 200, "passkey") - cell_values(run, m, 4, 0, "passkey")
            assert verdict(*paired_bootstrap(d)[1:]) == "agrees", m
    # the order of the grid's table does not hold at 3e-4: dynamic NTK behind NTK-aware
    words = path_verdicts(GRID, RERUNS, "lr 0.0003", ("dynamic", 4, 200), ("ntk", 4, 200))
    assert {w[3] for w in words.values()} == {"disagrees"}
    quoted = signed(words["here"][0]).replace("-", "−")
    assert (f"(at $3\\times10^{{-4}}$ dynamic NTK ends behind NTK-aware at $4L$, {quoted}, below "
            "0 on every path)") in text
    # the temperature at learning rate 3e-3: single paths on either side of 0
    label = "lr 0.003"
    ends = [p[1:3] for n in LR["0.003"]["checkpoints"] for p in path_verdicts(
        GRID, RERUNS, label, ("yarn", 4, n), ("yarn_no_t", 4, n)).values()]
    assert any(lo > 0 for lo, _ in ends) and any(hi < 0 for _, hi in ends)
    words = {n: [p[3] for p in path_verdicts(GRID, RERUNS, label, ("yarn", 4, n),
                                             ("yarn_no_t", 4, n)).values()]
             for n in LR["0.003"]["checkpoints"][1:]}
    assert words[25].count("agrees") == 2 and "disagrees" not in words[25]
    assert [words[n].count("disagrees") for n in (50, 100, 200)] == [0, 1, 1]
    assert [words[n].count("agrees") for n in (50, 100, 200)] == [0, 0, 0]
    assert ("at the other two rates some paths fall outside 0: at $3\\times10^{-3}$ two of three "
            "above it after 25 steps, one below at 100 and at 200;") in text
    ends = [p[1:3] for n in LR["0.0003"]["checkpoints"] for p in path_verdicts(
        GRID, RERUNS, "lr 0.0003", ("yarn", 4, n), ("yarn_no_t", 4, n)).values()]
    assert any(lo > 0 or hi < 0 for lo, hi in ends)
    base = [p[1] for p in path_verdicts(GRID, RERUNS, "base 10000", ("yarn", 4, 25),
                                        ("yarn_no_t", 4, 25)).values()]
    assert min(base) > 0 and "it raises it by +0.03 at base $10^4$" in text


def test_the_quiz_scopes_the_temperature_and_the_slowest_model_to_the_toys_base():
    quiz = {q["id"]: q for q in json.loads(
        (ROOT / "course_utils" / "data" / "quizzes" / "12.json").read_text())}
    temperature = quiz["12-temperature"]
    assert "at the toy's base" in temperature["question"]
    gain = diff(BASE, ("yarn", 4, 25), ("yarn_no_t", 4, 25))
    paths = path_verdicts(GRID, RERUNS, "base 10000", ("yarn", 4, 25), ("yarn_no_t", 4, 25))
    assert stated_on_paths(paths) == "agrees"
    better = next(a for a in temperature["answers"] if a["key"] == "better")
    assert f"(at base 1e4 it is {signed(gain)})" in better["feedback"]
    # the unchanged RoPE gains least at the toy's base and 1e-3 (paired, every method ahead of
    # it), not at base 1e4
    assert "At the toy's base and learning rate 1e-3" in quiz["12-fine-tune"]["question"]
    assert "by 200 fine-tune steps" in quiz["12-fine-tune"]["question"]
    for run in [MAIN] + [r[MAIN_LABEL] for r in RERUNS.values() if MAIN_LABEL in r]:
        for m in MAIN["methods"][1:]:       # at 4L, paired, on every path
            gain = cell_values(run, m, 4, 200) - cell_values(run, m, 4, 0)
            rope = cell_values(run, "rope", 4, 200) - cell_values(run, "rope", 4, 0)
            assert verdict(*paired_bootstrap(gain - rope)[1:]) == "agrees", m
    gains = {m: diff(MAIN, (m, 2, 200), (m, 2, 0)) for m in MAIN["methods"]}   # 2L, the mean
    assert min(gains, key=gains.get) == "rope"
    assert "at 2L on the mean" in quiz["12-fine-tune"]["answers"][0]["feedback"]
    gains = {m: diff(BASE, (m, 4, 200), (m, 4, 0)) for m in BASE["methods"]}
    assert min(gains, key=gains.get) != "rope"


def test_each_methods_own_ceiling(text):
    """The model trained at 4L from scratch with each method's own frequencies (part
    long_methods): its far accuracy, its turns, and each method after 200 fine-tune steps below
    it, seed-matched, on every path that trained it (far and passkey)."""
    import math

    from course_utils.lab.extension import method_config, own_ceiling
    from course_utils.lab.model import ModelConfig, rope_frequencies

    part = GRID["long_methods"]
    curves = part["curves"]
    assert list(curves) == ["pi", "ntk", "yarn"] and part["reruns"]

    def far(method, steps):
        values = curves[method][steps]["far"]
        return f2(sum(values) / len(values))

    assert {far(m, "2000") for m in curves} == {"0.99"}
    after_1000 = ", ".join(far(m, "1000") for m in curves)
    assert f"reads them at 0.99 after 2000 steps (after 1000: {after_1000})" in text
    toy = ModelConfig(scheme="rope", vocab_size=14, rope_base=GRID["toy_base"])
    turns = {f2(64 * rope_frequencies(method_config(toy, m, 4, 16), 64)[0].min() / (2 * math.pi))
             for m in curves}
    assert len(turns) == 1 and f"(the slowest pair turns {turns.pop()} times)" in text
    gaps = []
    for m, name in (("pi", "PI"), ("ntk", "NTK-aware"), ("yarn", "YaRN")):
        for split in ("far", "passkey"):
            paths = own_ceiling(GRID, RERUNS, m, split=split)
            assert len(paths) == 2 and stated_on_paths(paths) == "disagrees", (m, split)
        gaps.append(f"{name} " + signed(own_ceiling(GRID, RERUNS, m)["here"][0]).replace("-", "−"))
    assert (f"each method is below it ({', '.join(gaps)}; seed-matched, intervals below 0 on "
            "both paths that trained them, on the passkey too, where its curve still rises)") \
        in text
    for m in curves:        # the passkey still rises from 1000 to 2000 steps
        key = [sum(curves[m][n]["passkey"]) / 10 for n in ("1000", "2000")]
        assert key[1] - key[0] > 0.05, m
    # the token budgets: 2000 steps of 8 sequences of 4L against PI's pre-training and fine-tune
    s = MAIN["settings"]
    pi_tokens = s["steps"] * s["batch"] * 16 + 200 * s["tune_batch"] * 64
    ratio = 2000 * s["scratch_batch"] * 64 / pi_tokens
    assert 500 * s["scratch_batch"] * 64 < pi_tokens
    assert (f"worse than one trained there with PI's own frequencies ({far('pi', '2000')} after "
            f"2000 steps, on {ratio:.1f} times PI's tokens; after 500 steps, on fewer, "
            f"{far('pi', '500')}, not distinguishable)") in text
    assert stated_on_paths(own_ceiling(GRID, RERUNS, "pi", ceiling_steps=500)) == "unclear"
    # the summary: after 500 steps the model with a method's frequencies is above none of them
    assert all(stated_on_paths(own_ceiling(GRID, RERUNS, m, ceiling_steps=500)) != "disagrees"
               for m in curves)
    assert (f"it reads them at 0.99 after 2000 steps ({ratio:.1f} times the tokens), above each "
            "method after 200 fine-tune steps; after 500 steps, on fewer tokens, above none") \
        in text


def test_the_fresh_test_set(text):
    """The same models scored on other test sequences (record "test_set", runs in
    lab2_test_set.json): the stated verdicts it keeps, and the 2L dips unclear on it."""
    from course_utils.lab.extension import test_set_check

    fresh = json.loads((ROOT / "course_utils" / "data" / "records" / "lab2_test_set.json")
                       .read_text())
    assert sorted(fresh) == GRID["test_set"]["runs"]
    far, key = test_set_check(GRID, "far"), test_set_check(GRID, "passkey")
    assert far[0] == far[1] and key[0] == key[1]
    assert (f"all {far[1]} far-split and {key[1]} passkey verdicts stated keep theirs") in text
    assert far[1] == rerun_test(GRID, list(GRID["reruns"])[-1])[1]      # "and so did"
    assert "kept all 34 far-split claim verdicts stated before it (2 of them near 0), and so " \
           "did a fresh test set" in text
    for m in ("ntk", "yarn"):
        d = cell_values(fresh[MAIN_LABEL], m, 2, 25) - cell_values(fresh[MAIN_LABEL], m, 2, 0)
        assert verdict(*paired_bootstrap(d)[1:]) == "unclear", m
    assert "each dip is unclear on one of the three floating-point paths and on a fresh test " \
           "set" in text


def test_the_far_splits_distances_and_the_fresh_baseline(text):
    """How far back the far split's keys lie at 4L (the test sequences every model shares), and
    the position-blind reader's far accuracy at 2L on the fresh test set."""
    import numpy as np

    from course_utils.lab.extension import baselines_by_distance
    from course_utils.lab.tasks import make_task

    task = make_task("recall_latest", n_keys=4, n_values=8)
    counts = baselines_by_distance(task, 64, from_position=16, window=16,
                                   n_sequences=128)["total"][16:]
    far = np.repeat(np.arange(16, 64), counts.astype(int))
    assert f"at $4L$ a median of {np.median(far):.0f} back, 90 % within " \
           f"{np.percentile(far, 90):.0f})" in text
    fresh = json.loads((ROOT / "course_utils" / "data" / "records" / "lab2_test_set.json")
                       .read_text())[MAIN_LABEL]
    k = MAIN["multipliers"].index(2)
    here, other = MAIN["baselines"]["blind"]["far"][k], fresh["baselines"]["blind"]["far"][k]
    assert f"against the position-blind {f2(here)}, {f2(other)} on a fresh test set;" in text
    # "about 90 verdicts": the measurements the far and passkey splits state or leave unclear
    n = sum(len({c["same_as"] or label for label, c in cells.items()})
            for split in ("far", "passkey") for cells in stated_verdicts(GRID, split).values())
    assert 80 <= n <= 100 and "With about 90 verdicts at 95 %, a few may be chance." in text


def test_the_attention_on_the_answer_and_the_passkey_in_the_summary(text):
    """Cell 40's attention statements on every path, and the summary's passkey bounds."""
    import numpy as np

    runs = [MAIN] + [r[MAIN_LABEL] for r in RERUNS.values() if MAIN_LABEL in r]
    k, end = MAIN["multipliers"].index(4), MAIN["checkpoints"].index(200)

    def att(run, m):
        return np.array(run["needle_attention"]["per_seed"])[run["methods"].index(m), k, :, 1]

    for m, word in (("pi", "agrees"), ("dynamic", "agrees"), ("ntk", "unclear"),
                    ("yarn", "unclear")):
        for run in runs:
            a = att(run, m)
            assert verdict(*paired_bootstrap(a[end] - a[0])[1:]) == word, m
    times = {m: att(MAIN, m)[end].mean() / att(MAIN, m)[0].mean() for m in ("pi", "dynamic")}
    assert 2.5 < times["pi"] < 3.5 and 1.5 < times["dynamic"] < 2.5       # "about"
    assert ("PI about triples the attention on the answer and dynamic NTK about doubles it "
            "(intervals above 0); NTK-aware and YaRN keep it flat (intervals across 0; both on "
            "every path)") in text
    best = {lr: max(mean(run, m, 4, 200, "passkey") for m in run["methods"])
            for lr, run in (("1e-3", MAIN), ("3e-3", LR["0.003"]))}
    own = [sum(c["2000"]["passkey"]) / 10 for c in GRID["long_methods"]["curves"].values()]
    assert (f"fine-tuned for 200 steps at most {f2(best['1e-3'])} at learning rate $10^{{-3}}$ "
            f"({f2(best['3e-3'])} at $3\\times10^{{-3}}$), trained at $4L$ with a method's "
            f"frequencies {f2(min(own))}–{f2(max(own))}") in text
    assert max(mean(LR["0.0003"], m, 4, 200, "passkey") for m in MAIN["methods"]) < best["3e-3"]


def test_the_held_out_reruns_power(text):
    """Of the far-split verdicts stated before the held-out rerun, how many were near 0 (an
    interval end within 0.03 of it): the ones a path could plausibly have moved."""
    order = list(GRID["reruns"])
    (held_out,) = [w for w in order if GRID["reruns"][w]["held_out"]]
    before = {**GRID, "reruns": {w: GRID["reruns"][w] for w in order[:order.index(held_out)]}}
    near = [c for cells in stated_verdicts(before, "far").values() for c in cells.values()
            if not c["same_as"] and c["stated"] != "unclear"
            and (c["low"] if c["stated"] == "agrees" else -c["high"]) < 0.03]
    kept, stated, _ = rerun_test(GRID, held_out)
    assert kept == stated
    assert f"keeps all {stated}, only {len(near)} of them within 0.03 of 0" in text
