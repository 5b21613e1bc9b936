"""`vx-eval golden`: check, template, write and import golden questions."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.markup import escape

from vx_eval.cli.common import err_console, location, new_file, out_console, shown_path
from vx_eval.cli.progress import RichProgress
from vx_eval.core.contracts.golden import LeftOut
from vx_eval.core.errors import GoldenError, quoted
from vx_eval.core.golden.files import dump_rows
from vx_eval.core.golden.importers import bedrock_golden_bytes
from vx_eval.core.golden.sources import (
    beir_golden_bytes,
    trec_folder_bytes,
    trec_golden_bytes,
)
from vx_eval.core.plugins import load_plugins
from vx_eval.core.stores import Stores, local_folder
from vx_eval.core.usecases.golden_check import GoldenCheckRequest, check_golden
from vx_eval.core.usecases.plan import Plan, drafting
from vx_eval.llm.drafting import parse_mix
from vx_eval.python.commands import template_rows, write_golden_rows

if TYPE_CHECKING:
    pass


@click.group()
def golden() -> None:
    """Write, check and import golden questions."""


@golden.command("check")
@click.argument("file")
@click.option(
    "--config",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Also look every expected id up: in the config's corpus file (nothing is built), else on its targets.",
)
@click.option("--split", default="test", show_default=True, help="A BEIR folder: the qrels split to read.")
def golden_check(file: str, config: Path | None, split: str) -> None:
    """Lint a golden FILE (or a BEIR folder's queries and qrels, or a TREC folder's topics and qrels): every
    defect on every line, at once."""
    plugins = load_plugins()
    err = err_console()
    request = GoldenCheckRequest(location(file) or file, split, config)
    check = check_golden(request, plugins, Stores(plugins), RichProgress(err))
    for part in check.left_out:
        err.print(escape(f"{file}: {part.render()}"), highlight=False)
    for defect in check.defects:
        err.print(escape(defect.render(file)), highlight=False)
    if check.corpus is not None:
        source, size = check.corpus
        said = f"{file}: ids checked against {shown_path(source)} ({size:,} documents); no index built"
        err.print(escape(said), highlight=False)
    for absent in check.absent:
        meant = f"; did you mean {quoted(absent.meant)}?" if absent.meant else ""
        err.print(
            escape(f"{file}: expected document {quoted(absent.doc)} is not in {absent.where}{meant}"), highlight=False
        )
    if check.problems:
        err.print(f"[red]{check.problems} problem{'s' * (check.problems != 1)}[/] in {escape(file)}")
        sys.exit(2)
    filled = check.filled
    unfilled = len(check.rows) - len(filled)
    unlabelled = sum(1 for r in filled if not r.expected)
    out_console().print(
        escape(
            f"{file}: {len(filled) - unlabelled} questions ok"
            + (f", {unlabelled} with a reference answer but no expected ids yet (not scored)" if unlabelled else "")
            + (f", {unfilled} rows still to fill" if unfilled else "")
        ),
        highlight=False,
    )


@golden.command("template")
@click.argument("configs", nargs=-1, required=True, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--out", "out_file", required=True, help="The golden file to write (never overwritten).")
@click.option("-n", "count", default=50, show_default=True, type=click.IntRange(1, 100_000), help="Rows to write.")
@click.option("--seed", default=0, show_default=True, help="Same seed + same collection = same rows.")
@click.option(
    "--by",
    type=click.Choice(["document", "page"]),
    default="document",
    show_default=True,
    help="A row per document drawn at random, or per page spread evenly through the collection.",
)
@click.option("--writer", default="template", show_default=True, help="Question writer plugin.")
@click.option("--force", is_flag=True, help="Overwrite an existing file.")
def golden_template(
    configs: tuple[Path, ...], out_file: str, count: int, seed: int, by: str, writer: str, force: bool
) -> None:
    """Rows to fill in from the collections of CONFIGS (one file for all): expected filled, a hint saying
    where the unit is and how it starts."""
    stores = Stores(load_plugins())
    target = new_file(stores, out_file, force)
    with RichProgress(err_console()) as progress:
        rows, names = template_rows(list(configs), count, seed=seed, by=by, writer_plugin=writer, progress=progress)
    stores.write(target, dump_rows(rows))
    out_console().print(f"Wrote {len(rows)} rows to {out_file} from {', '.join(names)}; fill in each `question`.")


@golden.command("write")
@click.argument("configs", nargs=-1, required=True, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--out", "out_file", required=True, help="The golden file to write (never overwritten).")
@click.option("-n", "count", default=50, show_default=True, type=click.IntRange(1, 10_000), help="Questions wanted.")
@click.option(
    "--writer", required=True, help="A model writer: local (offline) or chat (an OpenAI-compatible endpoint)."
)
@click.option("--seed", default=0, show_default=True, help="Same seed + same collection = same passages and prompts.")
@click.option("--by", type=click.Choice(["document", "page"]), default="document", show_default=True)
@click.option("--mix", metavar="KIND=SHARE,…", help="Kinds of question: fact, why, keyword, persona, two-passage.")
@click.option(
    "--threshold", default=3, show_default=True, type=click.IntRange(1, 5), help="The critic's lowest score (1-5)."
)
def golden_write(
    configs: tuple[Path, ...],
    out_file: str,
    count: int,
    writer: str,
    seed: int,
    by: str,
    mix: str | None,
    threshold: int,
) -> None:
    """Draft questions from the documents of one or several CONFIGs (spread over their collections) with a
    model, check each, let a critic judge it (rows marked draft: true); the writer's options come from the
    first config. Answers are cached: a rerun costs nothing and an interrupted one resumes."""
    shares = parse_mix(mix) if mix else None  # before anything is indexed
    stores = Stores(load_plugins())
    target = location(out_file) or out_file
    if stores.exists(target):
        raise GoldenError(f"{out_file} exists; a written golden file is never overwritten: choose another --out")
    with RichProgress(err_console()) as progress:
        progress.show_plan(Plan((drafting(count, f"the {writer} writer"),)))  # a corpus is read, never indexed
        rows, summary = write_golden_rows(
            configs, count, writer_plugin=writer, seed=seed, by=by, mix=shares, threshold=threshold, progress=progress
        )
    if not rows:
        raise GoldenError(f"no draft passed the checks and the critic ({summary.tries} tries); nothing written")
    stores.write(target, dump_rows(rows))
    failed = ", ".join(f"{k}: {v}" for k, v in sorted(summary.failed_checks.items())) or "none"
    err = err_console()
    err.print(
        f"wrote {len(rows)} draft questions to {out_file} ({summary.tries} drafts tried on {summary.passages} "
        f"passages; failed checks {failed}; refused by the critic {summary.critic_refused}, its answer unreadable "
        f"{summary.critic_unreadable}; model calls {summary.asked})",
        highlight=False,
    )
    if len(rows) < count:
        err.print(f"[yellow]warning:[/] {count} asked, {len(rows)} passed; try another --seed or a stronger --writer")


@golden.command("import")
@click.option("--from", "fmt", type=click.Choice(["beir", "bedrock", "trec"]), required=True, help="The source format.")
@click.argument("source", type=click.Path(exists=True, path_type=Path))
@click.option("--out", "out_file", required=True, help="The golden JSONL to write.")
@click.option("--split", default="test", show_default=True, help="beir: the qrels split to read.")
@click.option("--qrels", type=click.Path(exists=True, dir_okay=False, path_type=Path), help="trec: the qrels file.")
@click.option(
    "--field",
    type=click.Choice(["title", "desc"]),
    default="title",
    show_default=True,
    help="trec: which topic field is the question.",
)
@click.option("--force", is_flag=True, help="Overwrite an existing file.")
def golden_import(
    fmt: str, source: Path, out_file: str, split: str, qrels: Path | None, field: str, force: bool
) -> None:
    """Convert SOURCE into a golden file: a BEIR folder (queries.jsonl + qrels/SPLIT.tsv), a Bedrock evaluation
    dataset (JSONL conversations: questions with reference answers, unscored until labelled), or TREC topics
    (with --qrels, or a folder holding one topics and one qrels file)."""
    stores = Stores(load_plugins())
    target = new_file(stores, out_file, force)
    note = ""
    left_out: tuple[LeftOut, ...] = ()
    if fmt == "beir":
        if not local_folder(str(source)):
            raise GoldenError(f"{source} is not a BEIR folder (queries.jsonl + qrels/); name the folder")
        data, left_out = beir_golden_bytes(str(source), split)
    elif fmt == "bedrock":
        data, _ = bedrock_golden_bytes(source.read_bytes(), str(source))
        note = " with reference answers and no expected ids yet: they are counted, not scored, until labelled"
    elif qrels is None and local_folder(str(source)):
        data, left_out, _ = trec_folder_bytes(str(source), field)
    else:
        if qrels is None:
            raise GoldenError(
                "--from trec needs --qrels QRELS (the judgements for these topics), or a TREC folder as SOURCE"
            )
        try:
            qrels_text = qrels.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            raise GoldenError(f"{qrels} is not UTF-8 text; save the qrels as UTF-8") from None
        data, left_out = trec_golden_bytes(
            source.read_text(encoding="utf-8", errors="replace"), qrels_text, str(source), str(qrels), field
        )
    stores.write(target, data)
    out_console().print(f"Wrote {len(data.splitlines())} questions to {out_file}{note}", highlight=False)
    for part in left_out:
        out_console().print(part.render(), highlight=False, markup=False)
