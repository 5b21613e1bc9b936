"""`vx-eval eval`: score a TREC run file against qrels (or a golden file), as ``trec_eval -c`` does.

This command imports only numpy and the measures: it starts as fast as the scoring it does.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import click

from vx_eval.core.errors import VxEvalError, quoted
from vx_eval.core.trec.columns import as_bytes
from vx_eval.core.trec.files import DEFAULT_MEASURES, Shape, evaluate_run, read_judgements
from vx_eval.core.trec.output import Printing, ZScores, jg_output, prefs_output, run_tag, trec_eval_output


@click.command("eval")
@click.argument("qrels", type=click.Path(path_type=Path))
@click.argument("run_file", metavar="RUN", type=click.Path(path_type=Path))
@click.option(
    "-m",
    "--measure",
    "measures",
    multiple=True,
    metavar="MEASURE",
    help="A measure (repeatable): vx-eval's names (ndcg@10) or trec_eval's (ndcg_cut.10, P.5,10, "
    "iprec_at_recall..1,.5, official). Default: ndcg@10 map recall@100 mrr p@10; with --trec-format, trec_eval's "
    "own default (official).",
)
@click.option(
    "-l",
    "--level",
    "threshold",
    default=1,
    show_default=True,
    type=click.IntRange(1),
    help="Grade from which a document counts as relevant for binary measures (trec_eval -l).",
)
@click.option("-q", "--per-query", is_flag=True, help="Also print every question's values.")
@click.option(
    "-c",
    "--complete",
    is_flag=True,
    help="With --trec-format: average over every judged question, one the run does not answer scoring 0 "
    "(trec_eval -c); without it, over the judged questions the run answers, as trec_eval. vx-eval's own "
    "output always averages over every judged question.",
)
@click.option(
    "--answered-only",
    is_flag=True,
    help="With --trec-format and no -c: average over the judged questions the run answers, as trec_eval 9 did. "
    "trec_eval 10 stops at the first judged question the run does not answer, and so does vx-eval without it.",
)
@click.option(
    "--score-below-zero",
    is_flag=True,
    help="With --trec-format: score a question judged only below 0 (it scores 0), where trec_eval 10 stops, or "
    "crashes, on one and so does vx-eval without it.",
)
@click.option(
    "-M",
    "--max-per-query",
    type=click.IntRange(1),
    help="Evaluate only each question's first N results (trec_eval -M).",
)
@click.option(
    "-J",
    "--judged-only",
    is_flag=True,
    help="Evaluate only the judged results, relevant or not: unjudged ones are taken out and the rest move up "
    "(trec_eval -J; Sakai's condensed lists).",
)
@click.option(
    "-N",
    "--documents",
    default=0,
    type=click.IntRange(0),
    help="The collection's size: what utility's fourth coefficient counts the non-relevant documents left out "
    "from (trec_eval -N; default 0, as there).",
)
@click.option(
    "-Z",
    "--zscores",
    type=click.Path(path_type=Path, exists=True, dir_okay=False),
    help="With --trec-format: print every value as a z-score against FILE's 'question measure mean stddev' lines "
    "(trec_eval -Z).",
)
@click.option(
    "-R",
    "--rel-format",
    type=click.Choice(["qrels", "prefs", "qrels_prefs", "qrels_jg"]),
    default="qrels",
    show_default=True,
    help="With --trec-format: how QRELS is read (trec_eval -R): TREC qrels; preferences (qid jg jsg docno level) "
    "or qrels read as preferences, for the prefs_* measures (-m all_prefs); or qrels with judgement groups "
    "(qid jg docno rel) for map_avgjg, P_avgjg and Rprec_mult_avgjg (-m qrels_jg).",
)
@click.option(
    "-D",
    "--debug-level",
    default="0",
    metavar="N",
    help="Accepted for trec_eval's command lines (-D); vx-eval prints no debugging trace of its measures.",
)
@click.option("-n", "--no-summary", is_flag=True, help="With --trec-format and -q: no summary (`all`) lines.")
@click.option(
    "-T",
    "--results-format",
    type=click.Choice(["trec_results"]),
    default="trec_results",
    help="How RUN is read (trec_eval -T): trec_results, the one format trec_eval has.",
)
@click.option("-o", "--old-output", is_flag=True, hidden=True, help="Accepted as trec_eval accepts it (-o): no effect.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON: measure -> mean (with -q, per question too).")
@click.option(
    "--trec-format",
    is_flag=True,
    help="Print exactly what `trec_eval` prints (its names, P_5, ndcg_cut_10; its measure order, questions "
    "sorted; its layout; with no -m its official set), for scripts written for it; -m may name runid, num_q, "
    "num_ret, num_rel and num_rel_ret too.",
)
def eval_command(
    qrels: Path,
    run_file: Path,
    measures: tuple[str, ...],
    threshold: int,
    per_query: bool,
    complete: bool,
    answered_only: bool,
    score_below_zero: bool,
    max_per_query: int | None,
    judged_only: bool,
    documents: int,
    zscores: Path | None,
    rel_format: str,
    debug_level: str,
    no_summary: bool,
    results_format: str,
    old_output: bool,
    as_json: bool,
    trec_format: bool,
) -> None:
    """Score a TREC RUN file (- for standard input) against QRELS (TREC qrels or a golden file), as `trec_eval -c`
    does."""

    request = EvalRequest(
        qrels=qrels,
        run=_run_path(run_file),
        measures=measures,
        threshold=threshold,
        per_query=per_query,
        complete=complete,
        answered_only=answered_only,
        score_below_zero=score_below_zero,
        shape=Shape(max_per_query, judged_only, documents),
        zscores=zscores,
        rel_format=rel_format,
        no_summary=no_summary,
        as_json=as_json,
    )
    if debug_level.split(".")[0] not in ("", "0"):
        click.echo("note: -D asks trec_eval for a trace of its measures' workings; vx-eval prints none", err=True)
    if zscores is not None and not trec_format:
        raise VxEvalError("-Z prints trec_eval's z-score lines: add --trec-format")
    if rel_format != "qrels" and not trec_format:
        raise VxEvalError(f"-R {rel_format} prints trec_eval's own measures for those judgements: add --trec-format")
    if trec_format:
        _as_trec_eval(request)
    else:
        _as_vx_eval(request)


@dataclass(frozen=True)
class EvalRequest:
    """What `vx-eval eval` was asked, parsed: the files, the measures and how to print them."""

    qrels: Path
    run: Path
    measures: tuple[str, ...]
    threshold: int
    per_query: bool
    complete: bool
    answered_only: bool
    score_below_zero: bool
    shape: Shape
    zscores: Path | None
    rel_format: str
    no_summary: bool
    as_json: bool


def _as_trec_eval(request: EvalRequest) -> None:
    """What trec_eval prints: its names, order and layout (with no -m, its official set)."""
    printing = Printing(
        request.per_query,
        run_tag(request.run),
        request.complete,
        request.shape,
        ZScores.read(request.zscores) if request.zscores else None,
        score_below_zero=request.score_below_zero,
        answered_only=request.answered_only,
    )
    qrels, run, measures, threshold = request.qrels, request.run, request.measures, request.threshold
    warnings: tuple[str, ...] = ()
    if request.rel_format == "qrels_jg":
        output = jg_output(qrels, run, measures or ("qrels_jg",), printing, threshold=threshold)
    elif request.rel_format != "qrels":
        noticed: list[str] = []
        is_qrels = request.rel_format == "qrels_prefs"
        output = prefs_output(qrels, run, measures or ("prefs",), printing, noticed, qrels=is_qrels)
        warnings = tuple(noticed)
    else:  # with no -m, what trec_eval prints with none: its official set
        output, warnings = trec_eval_output(
            read_judgements(qrels), run, measures or ("official",), printing, threshold=threshold
        )
    for warning in warnings:
        click.echo(f"warning: {warning}", err=True)
    _print(_summary_dropped(output) if request.no_summary else output)


def _as_vx_eval(request: EvalRequest) -> None:
    """vx-eval's names, as lines or JSON, the means and (with -q) every question's values."""
    evaluation = evaluate_run(
        read_judgements(request.qrels),
        request.run,
        request.measures or DEFAULT_MEASURES,
        threshold=request.threshold,
        shape=request.shape,
    )
    for warning in evaluation.warnings:
        click.echo(f"warning: {warning}", err=True)
    means = evaluation.means()
    per_question = zip(evaluation.question_ids, evaluation.values, strict=True)
    if request.as_json:
        if request.per_query:
            rows = {q: dict(zip(evaluation.measures, map(float, v), strict=True)) for q, v in per_question}
            click.echo(json.dumps({"all": means, "per_query": rows}, indent=1))
        else:
            click.echo(json.dumps(means, indent=1))
        return
    lines = []
    if request.per_query:
        for qid, values in per_question:
            lines += [
                f"{name:<16}\t{qid}\t{value:.4f}\n" for name, value in zip(evaluation.measures, values, strict=True)
            ]
    lines.append(f"{'num_q':<16}\tall\t{len(evaluation.question_ids)}\n")
    lines += [f"{name:<16}\tall\t{value:.4f}\n" for name, value in means.items()]
    _print("".join(lines))


def _print(text: str) -> None:
    """Lines holding ids as read: bytes that are not UTF-8 are written back as they were read (as trec_eval
    writes them), whatever encoding the terminal or pipe declares."""

    sys.stdout.flush()
    buffer = getattr(sys.stdout, "buffer", None)
    if buffer is None:  # a text-only stream (some notebook front ends)
        sys.stdout.write(as_bytes(text).decode("utf-8", "replace"))
        return
    buffer.write(as_bytes(text))
    buffer.flush()


def _summary_dropped(output: str) -> str:
    """trec_eval -n: the questions' lines only, no ``all`` lines."""
    return "".join(line for line in output.splitlines(keepends=True) if line.split("\t")[1:2] != ["all"])


def _run_path(run_file: Path) -> Path:
    """The run file, said to be missing (or a folder) before anything is read; ``-`` reads the run from
    standard input (as trec_eval 10 does), kept in a temporary file the command removes when it ends."""

    if str(run_file) == "-":
        handle, name = tempfile.mkstemp(prefix="vx-eval-stdin-", suffix=".run")
        click.get_current_context().call_on_close(lambda: os.unlink(name))
        with os.fdopen(handle, "wb") as spool:
            shutil.copyfileobj(sys.stdin.buffer, spool)
        return Path(name)
    try:
        if not run_file.exists():
            raise VxEvalError(f"run file {quoted(run_file, 200)} does not exist")
        if run_file.is_dir():
            raise VxEvalError(f"run file {quoted(run_file, 200)} is a folder, not a file")
    except OSError as exc:  # a name too long to be a file
        raise VxEvalError(f"run file {quoted(run_file, 200)} cannot be read: {exc.strerror or exc}") from None
    return run_file
