"""Chapter 12's prose numbers against the stored grid they are read from.

The chapter's text quotes numbers of ``course_utils/data/records/lab2_grid.json`` (means over the
seeds, differences, ranges over runs). Each test recomputes one statement from the record and
looks for it, formatted as the text writes it, in the chapter's markdown: a regenerated grid
that moves a number fails here until the sentence is reread.
"""

from __future__ import annotations

import json
import pathlib

import pytest

from course_utils.lab.extension import cell_values, paired_bootstrap, t_interval, verdict

ROOT = pathlib.Path(__file__).resolve().parents[1]
CHAPTER = ROOT / "notebooks" / "12_lab_context_extension.ipynb"
GRID = json.loads((ROOT / "course_utils" / "data" / "records" / "lab2_grid.json").read_text())
MAIN = GRID["main"]
BASE = GRID["bases"]["10000.0"]
LR = GRID["lr_variants"]


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
            f"against the position-blind {f2(mean(MAIN, 'blind', 2, 0))})") in text
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
    reads = [mean(BASE, m, 4, 0) for m in ("ntk", "dynamic", "yarn")]
    assert f"at {f2(min(reads))}–{f2(max(reads))} with no fine-tune" in text


def test_temperature_in_the_main_grid(text):
    d = cell_values(MAIN, "yarn", 4, 25) - cell_values(MAIN, "yarn_no_t", 4, 25)
    m, low, high = paired_bootstrap(d)
    quoted = f"{m:+.3f} [{low:+.3f}, {high:+.3f}]".replace("-", "−")
    assert f"either way ({quoted} in the grid" in text and round(max(-low, high), 2) <= 0.01


def test_passkey_and_no_fine_tune_order(text):
    best = max(mean(MAIN, m, 4, 200, "passkey") for m in MAIN["methods"])
    assert f"at most {f2(best)} after 200 steps" in text
    assert f"against {f2(mean(MAIN, 'pi', 4, 200))} for PI on the far split" in text
    assert f"the worst in the grid ({f2(mean(MAIN, 'rope', 4, 0))})" in text
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
    assert f"only {above[16000]} of 10 are above the position-blind reader" in text
    assert f"{['no', 'one', 'two', 'three'][above[8000] - above[16000]]} fewer than at 8000" in text
    assert f"on only {above[1000]} to {above[16000]} of 10 seeds" in text
    # PI past RoPE on the passkey: not "agrees" at two of the three learning rates
    words = [verdicts(run, ("pi", 4, 100), ("rope", 4, 100), "passkey")[0]
             for run in [MAIN, *LR.values()]]
    assert sum(w != "agrees" for w in words) == 2 and "disagrees" in words
    assert "on the passkey it is unclear or reversed at two" in text
    t = diff(BASE, ("yarn", 4, 25), ("yarn_no_t", 4, 25))
    assert f"{signed(t)} at base $10^4$, an interval above 0" in text
    assert verdicts(BASE, ("yarn", 4, 25), ("yarn_no_t", 4, 25))[0] == "agrees"


def test_the_rerun_on_another_cpu(text):
    reruns = GRID["reruns"].values()
    far = sum(r["far"]["verdicts"] for r in reruns)
    changed = [c for r in reruns for c in r["far"]["changed"]]
    assert f"{len(changed)} of {far} far-split verdicts change" in text
    ntk = [c for c in changed if c["claim"].startswith("NTK-aware over")]
    assert {c["run"] for c in ntk} == {"main (base 3.78, lr 0.001)", "lr 0.0003", "lr 0.003"}
    assert len({c["claim"] for c in ntk}) == 2
    yarn = [c for c in changed if c["claim"].startswith("YaRN before PI (4L")]
    assert len(yarn) == 2 and {c["to"] for c in yarn} == {"unclear"}
    temp = [c for c in changed if c["claim"].startswith("temperature")]
    assert [(c["run"], c["to"]) for c in temp] == [("lr 0.003", "agrees")]
    assert len(changed) == len(ntk) + len(yarn) + len(temp)
    assert not [c for c in changed if c["run"].startswith("base")]   # "none at base 10^4"
