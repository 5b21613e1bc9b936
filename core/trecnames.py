"""trec_eval's spellings of measures: its ``-m`` syntax (``P.5,10``, ``iprec_at_recall..10,.50``, ``11pt_avg``),
its names (``P_5``, ``ndcg_cut_10``, ``recip_rank``), its named sets (``official``), the order it prints them
in, and those it prints over all questions only."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from vx_eval.core import metrics
from vx_eval.core.errors import MetricError, quoted
from vx_eval.core.trecmeasures import IPREC_LEVELS, RPREC_MULTIPLES

TREC_CUTOFFS = {
    "p": (5, 10, 15, 20, 30, 100, 200, 500, 1000),
    "recall": (5, 10, 15, 20, 30, 100, 200, 500, 1000),
    "ndcg_cut": (5, 10, 15, 20, 30, 100, 200, 500, 1000),
    "map_cut": (5, 10, 15, 20, 30, 100, 200, 500, 1000),
    "success": (1, 5, 10),
    "relative_p": (5, 10, 15, 20, 30, 100, 200, 500, 1000),
    "unj": (5, 10, 20),
}
"""trec_eval's measures with cut-offs, and the cut-offs it computes when a name comes without any."""
_TREC_PARAMS = re.compile(r"^([A-Za-z_]+)\.(\d+(?:\.\d*)?(?:,\d+(?:\.\d*)?)*)$")
"""``P.5,10``; trec_eval reads a cut-off as a whole number, so ``ndcg_cut.23.4`` is ndcg_cut_23."""
_TREC_LEVELS = re.compile(r"^(iprec_at_recall|rprec_mult)\.([0-9.]+(?:,[0-9.]+)*)$", re.IGNORECASE)
_LEVELLED = {"iprec_at_recall": ("iprec", "recall"), "rprec_mult": ("rprec_mult", "m")}
"""trec_eval's measures whose parameters are fractions (recall levels, multiples of R): vx-eval's own
measure and the name of its parameter."""


def expand_trec(names: Iterable[str]) -> list[str]:
    """trec_eval's ``-m`` syntax as measure names: ``P.5,10`` is P_5 and P_10, ``ndcg_cut`` alone its nine
    default cut-offs (``success``: 1, 5, 10); every other name is kept as it is."""
    out: list[str] = []
    for name in names:
        text = name.strip()
        levels = _TREC_LEVELS.match(text)
        match = _TREC_PARAMS.match(text)
        if text.lower() == "11pt_avg":  # a name no parse can start with a digit
            out.append("iprec_avg")
        elif text.lower() in _LEVELLED or levels:
            kind = (levels[1] if levels else text).lower()
            own, param = _LEVELLED[kind]
            defaults = IPREC_LEVELS if kind == "iprec_at_recall" else RPREC_MULTIPLES
            given = [_number(text, v) for v in levels[2].split(",") if v.strip(".")] if levels else defaults
            out += [f"{own}({param}={v:g})" for v in sorted(set(given))]
        elif match and match[1].lower() in TREC_CUTOFFS:
            cutoffs = sorted({int(float(k)) for k in match[2].split(",")})
            out += [f"{match[1]}_{k}" for k in cutoffs]
        elif text.lower() in TREC_CUTOFFS:
            out += [f"{text}_{k}" for k in TREC_CUTOFFS[text.lower()]]
        else:
            out.append(text)
    return out


RELSTRING = re.compile(r"^relstring(?:\.(\d+))?$", re.IGNORECASE)
"""trec_eval's relstring (each question's first results as characters), ``relstring.20`` for 20; default 10."""


def relstrings(names: Sequence[str]) -> tuple[list[str], list[tuple[str, int]]]:
    """The names other than relstring, and the relstring asked for (its printed name and its length): as in
    trec_eval, the last naming wins (``-m all_trec -m relstring.20`` prints relstring_20 alone)."""
    rest: list[str] = []
    strings: list[tuple[str, int]] = []
    for name in names:
        match = RELSTRING.match(name.strip())
        if match is None:
            rest.append(name)
        else:
            strings = [(f"relstring_{match[1]}" if match[1] else "relstring", int(match[1] or 10))]
    return rest, strings


def _number(text: str, value: str) -> float:
    try:
        return float(value)
    except ValueError:
        raise MetricError(f"measure {quoted(text)}: {quoted(value)} is not a number (write e.g. .10,.50)") from None


TREC_COUNTS = ("runid", "num_q", "num_ret", "num_rel", "num_rel_ret")
"""trec_eval's counting lines, which `-m` may name alongside measures."""
_TREC_NAME = {
    "found": "success",
    "recall": "recall",
    "p": "P",
    "map": "map_cut",
    "ndcg": "ndcg_cut",
    "relative_p": "relative_P",
    "unj": "unj",
}
_TREC_WHOLE = {
    "mrr": "recip_rank",
    "map": "map",
    "gm_map": "gm_map",
    "ndcg": "ndcg",
    "rprec": "Rprec",
    "bpref": "bpref",
    "gm_bpref": "gm_bpref",
    "iprec_avg": "11pt_avg",
    "set_p": "set_P",
    "set_relative_p": "set_relative_P",
    "set_recall": "set_recall",
    "set_map": "set_map",
    "set_f": "set_F",
    "utility": "utility",
    "bin_g": "binG",
    "ndcg_rel": "ndcg_rel",
    "rndcg": "Rndcg",
    "g": "G",
    "infap": "infAP",
    "num_nonrel_judged_ret": "num_nonrel_judged_ret",
}
TREC_ORDER = (
    *TREC_COUNTS,
    *("map", "gm_map", "Rprec", "bpref", "recip_rank", "iprec_at_recall", "P", "relstring", "recall", "infAP"),
    *("gm_bpref", "Rprec_mult", "utility", "11pt_avg", "binG", "G", "ndcg", "ndcg_rel", "Rndcg", "ndcg_cut"),
    *("map_cut", "relative_P", "success", "set_P", "set_relative_P", "set_recall", "set_map", "set_F"),
    *("num_nonrel_judged_ret", "rbp", "rbp_resid", "unj"),
)
"""The order trec_eval prints its measures in (its measure table), whatever order -m names them in."""
SETS = {
    "official": (
        *TREC_COUNTS,
        *("map", "gm_map", "Rprec", "bpref", "recip_rank", "iprec_at_recall", "P"),
    ),
    "all_trec": TREC_ORDER,  # its whole measure table but the preference and jg measures: all vx-eval has
}
"""trec_eval's named sets of measures (``-m official``: what it prints when no -m is given)."""
SUMMARY_ONLY = {"gm_map", "gm_bpref"}
_TREC_RBP = {"rbp_trec": "rbp", "rbp_trec_resid": "rbp_resid"}
TREC_OWN = {"rbp": "rbp_trec", "rbp_resid": "rbp_trec_resid"}
"""trec_eval's names of measures that differ from vx-eval's of the same name (RBP's persistence and gains):
under trec_eval's name, in its format, trec_eval's measure."""
"""Measures trec_eval prints over all questions only, never per question."""


def trec_name(measure: metrics.Measure) -> str | None:
    """trec_eval's name of a measure (``P_5``, ``ndcg_cut_10``, ``recip_rank``, ``iprec_at_recall_0.10``),
    None where it has none."""
    name = measure.definition.name
    if measure.per_relevant:
        return None
    if name == "iprec":
        return f"iprec_at_recall_{measure.param or 0.0:.2f}"
    if name in _TREC_RBP and (measure.param is None or measure.param == 0.9):
        return _TREC_RBP[name]
    if name == "rprec_mult":
        return f"Rprec_mult_{1.0 if measure.param is None else measure.param:.2f}"
    if measure.k is None:
        return _TREC_WHOLE.get(name)
    prefix = _TREC_NAME.get(name)
    return f"{prefix}_{measure.k}" if prefix else None


def trec_place(m: metrics.Measure) -> tuple[int, float]:
    """Where trec_eval prints a measure: its place in the measure table, then its cut-off or level."""
    named = trec_name(m) or ""
    base = "iprec_at_recall" if named.startswith("iprec_at_recall") else named.rsplit("_", 1)[0]
    for candidate in (named, base):
        if candidate in TREC_ORDER:
            return TREC_ORDER.index(candidate), float(m.k or m.param or 0)
    return len(TREC_ORDER), 0.0


def trec_sorted(measures: Sequence[metrics.Measure]) -> list[metrics.Measure]:
    """The measures in trec_eval's printing order: its measure table, then cut-off or level ascending."""
    return sorted(measures, key=trec_place)


def expand_sets(names: Sequence[str]) -> list[str]:
    """trec_eval's named sets (``official``) as the measures they hold; other names as they are."""
    return [n for name in names for n in SETS.get(name.strip(), (name,))]
