"""trec_eval's spellings of measures: its ``-m`` syntax (``P.5,10``, ``iprec_at_recall..10,.50``, ``11pt_avg``),
its names (``P_5``, ``ndcg_cut_10``, ``recip_rank``), its named sets (``official``), the order it prints them
in, and those it prints over all questions only."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from vx_eval.core.errors import MetricError, quoted
from vx_eval.core.measures import metrics
from vx_eval.core.measures.trec_only import IPREC_LEVELS, RPREC_MULTIPLES

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
_CUTOFFS = re.compile(r"^\d+(?:\.\d*)?(?:,\d+(?:\.\d*)?)*$")
"""``5,10``; trec_eval reads a cut-off as a whole number, so ``ndcg_cut.23.4`` is ndcg_cut_23."""
_LEVELLED = {"iprec_at_recall": ("iprec", "recall"), "rprec_mult": ("rprec_mult", "m")}
"""trec_eval's measures whose parameters are fractions (recall levels, multiples of R): vx-eval's own
measure and the name of its parameter."""


_TREC_VALUES = {
    "utility": "utility",
    "11pt_avg": "iprec_avg",
    "ndcg": "ndcg_gains",
    "dcg": "dcg_gains",
    "ideal_dcg": "ideal_dcg",
    "set_f": "set_f",
}
"""trec_eval's measures whose parameters are a list of values, and vx-eval's measure taking them as written:
``utility.2,-1,0,0``, ``11pt_avg..25,.5,.75`` (recall levels), ``ndcg.1=3,2=9`` (a gain per grade)."""


_PLAIN = re.compile(r"^[A-Za-z0-9_]+$")
"""A trec_eval measure's name, before the ``.`` that starts its parameters."""


def named_once(names: Iterable[str]) -> list[tuple[str, str]]:
    """Each measure named, once, in the order first named, as (its name, its parameters): as trec_eval reads
    repeated -m, every naming counts and the parameters are those of the last naming that gives any ('' where
    none does), so ``-m all_trec -m P.5`` is P with 5 alone and ``-m relstring.20 -m relstring`` relstring
    with 20. A name that is not trec_eval's ``name.params`` (vx-eval's ``ndcg@10``, ``rbp(p=0.9)``) is a
    measure of its own."""
    found: dict[str, tuple[str, str]] = {}
    for name in names:
        text = name.strip()
        base, dot, params = text.partition(".")
        if not dot or not _PLAIN.match(base):
            base, params = text, ""
        if params or base.lower() not in found:
            found[base.lower()] = (base, params)
    return list(found.values())


def expand_trec(names: Iterable[str]) -> list[str]:
    """trec_eval's ``-m`` syntax as measure names: ``P.5,10`` is P_5 and P_10, ``ndcg_cut`` alone its nine
    default cut-offs (``success``: 1, 5, 10), ``utility.2,-1,0,0`` utility with those coefficients; every
    other name is kept as it is. A measure named twice is computed once, as trec_eval does (`named_once`)."""
    out: list[str] = []
    for base, params in named_once(names):
        key, text = base.lower(), f"{base}.{params}" if params else base
        if key == "11pt_avg" or key in _LEVELLED or key in TREC_CUTOFFS or (key in _TREC_VALUES and params):
            out += _expanded(text, key, params)
        else:
            out.append(text)
    return out


def cutoffs_given(text: str, params: str) -> list[int]:
    """A measure's cut-offs as trec_eval reads them (``5,10,23.4``: 5, 10 and 23), ascending, each once."""
    if not _CUTOFFS.match(params):
        raise MetricError(
            f"measure {quoted(text)}: write its cut-offs as whole numbers, e.g. {text.partition('.')[0]}.5,10"
        )
    return sorted({int(float(v)) for v in params.split(",")})


def levels_given(text: str, params: str, defaults: Sequence[float]) -> list[float]:
    """A measure's fractions (recall levels, multiples of R) as written (``..10,.20``), ascending, each once;
    `defaults` where none are given."""
    levels = [_number(text, v) for v in params.split(",") if v.strip(".")] if params else defaults
    return sorted(set(levels))


def _expanded(text: str, key: str, params: str) -> list[str]:
    """One trec_eval measure named with its parameters (or none: its defaults) as vx-eval's names."""
    if key in _TREC_VALUES and params:
        read = metrics.REGISTRY[_TREC_VALUES[key]].values
        if read is not None:
            read(params)  # refused here, in the words it was written in
        return [f"{_TREC_VALUES[key]}({params})"]
    if key == "11pt_avg":
        return ["iprec_avg"]
    if key in _LEVELLED:
        own, param = _LEVELLED[key]
        defaults = IPREC_LEVELS if key == "iprec_at_recall" else RPREC_MULTIPLES
        return [f"{own}({param}={v:g})" for v in levels_given(text, params, defaults)]
    if not params:
        return [f"{text}_{k}" for k in TREC_CUTOFFS[key]]
    return [f"{text.partition('.')[0]}_{k}" for k in cutoffs_given(text, params)]


RELSTRING = re.compile(r"^relstring(?:\.(\d+))?$", re.IGNORECASE)
"""trec_eval's relstring (each question's first results as characters), ``relstring.20`` for 20; default 10."""


def relstrings(names: Sequence[str]) -> tuple[list[str], list[tuple[str, int]]]:
    """The names other than relstring, and the relstring asked for (its printed name and its length), from
    names `expand_trec` gave (so relstring comes once, with its last parameters)."""
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
    "dcg": "dcg",
    "dcg_gains": "dcg",
    "ideal_dcg": "ideal_dcg",
    "yaap": "yaap",
}
TREC_ORDER = (
    *TREC_COUNTS,
    *("map", "gm_map", "Rprec", "bpref", "recip_rank", "iprec_at_recall", "P", "relstring", "recall", "infAP"),
    *("gm_bpref", "Rprec_mult", "utility", "11pt_avg", "binG", "G", "dcg", "ideal_dcg", "ndcg", "ndcg_rel"),
    *("Rndcg", "ndcg_cut", "map_cut", "relative_P", "success", "set_P", "set_relative_P", "set_recall"),
    *("set_map", "set_F", "num_nonrel_judged_ret", "yaap", "rbp", "rbp_resid", "unj"),
)
"""The order trec_eval prints its measures in (its measure table, less the preference and judgement-group
measures, which `core.trec.prefs` and `core.trec.groups` print), whatever order -m names them in."""
SETS = {
    "official": (
        *TREC_COUNTS,
        *("map", "gm_map", "Rprec", "bpref", "recip_rank", "iprec_at_recall", "P"),
    ),
    "set": (*TREC_COUNTS, "utility", "set_P", "set_recall", "set_relative_P", "set_map", "set_F"),
    "all_trec": tuple(n for n in TREC_ORDER if n not in ("dcg", "ideal_dcg", "yaap")),  # as its all_trec
    "all_prefs": (
        *("runid", "num_q", "prefs_num_prefs_poss", "prefs_num_prefs_ful", "prefs_num_prefs_ful_ret"),
        *("prefs_simp", "prefs_pair", "prefs_avgjg", "prefs_avgjg_Rnonrel", "prefs_simp_ret", "prefs_pair_ret"),
        *("prefs_avgjg_ret", "prefs_avgjg_Rnonrel_ret", "prefs_simp_imp", "prefs_pair_imp", "prefs_avgjg_imp"),
    ),
    "prefs": (
        *("runid", "num_q", "prefs_num_prefs_poss", "prefs_num_prefs_ful", "prefs_num_prefs_ful_ret"),
        *("prefs_simp", "prefs_pair", "prefs_avgjg"),
    ),
    "qrels_jg": ("runid", "num_q", "map_avgjg", "P_avgjg", "Rprec_mult_avgjg"),
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
    if measure.values is not None:
        spelled = {"iprec_avg": "11pt_avg", "ndcg_gains": "ndcg", "dcg_gains": "dcg", "set_f": "set_F"}.get(name, name)
        return f"{spelled}_{measure.values}" if spelled and measure.k is None else None
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
