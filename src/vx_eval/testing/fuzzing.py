"""Hostile inputs for every reader vx-eval has, as hypothesis strategies, shared by the fuzz tests (a fixed,
seeded budget) and `benchmarks/fuzz.py` (10,000+ inputs per reader, with time and memory per input).

Each reader takes bytes and must either read them or raise a `VxEvalError` (a clear message, exit 2);
anything else it raises is a bug. The strategies start from valid files and break them the ways found in
the wild and by earlier fuzzing: huge integers and deep nesting in JSON, YAML timestamps, tags, aliases
and capitalised keys, TREC lines with odd field counts, non-UTF-8 bytes, nan and huge ids, escape
sequences, and random byte edits of each.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from vx_eval.cli import main
from vx_eval.core.config.experiment import parse_config
from vx_eval.core.errors import VxEvalError
from vx_eval.core.golden.files import lint, parse_golden
from vx_eval.core.golden.sources import FileCorpus
from vx_eval.core.plugins import load_plugins
from vx_eval.core.trec.files import evaluate_run, read_judgements, read_run

# --------------------------------------------------------------------------------------------- pieces

ODD_TEXT = st.sampled_from(
    [
        "",
        " ",
        "\x1b[31mred\x1b[0m",
        "\x1b]0;title\x07",
        "\u202eevil",
        "\x00",
        "nan",
        "inf",
        "-0",
        "1e309",
        "9" * 4400,
        "x" * 5000,
        "2001-13-45",
        "25:61:61",
        "!!float xyz",
        "{{",
        "]]",
        "\ufffd",
        "q1",
        "d1",
        "ndcg@10",
    ]
)
WORDS = st.one_of(ODD_TEXT, st.text(max_size=30), st.from_regex(r"[A-Za-z0-9_.@:-]{1,12}", fullmatch=True))
NUMBERS = st.one_of(
    st.integers(),
    st.integers(min_value=10**30, max_value=10**40),
    st.floats(allow_nan=True, allow_infinity=True),
)
HUGE_INTEGER = "9" * 4400
"""Past Python's 4,300-digit limit for reading an integer (json.loads and int() raise ValueError)."""
JSON_LEAF = st.one_of(st.none(), st.booleans(), NUMBERS, WORDS)
JSON_VALUE = st.recursive(
    JSON_LEAF,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(WORDS, inner, max_size=4)),
    max_leaves=12,
)


def _dumps(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False)
    except ValueError:  # an integer past Python's printing limit: write its digits by hand
        return HUGE_INTEGER


@st.composite
def _deep(draw: Callable[..., Any]) -> str:
    depth = draw(st.integers(min_value=50, max_value=3000))
    opener, closer = draw(st.sampled_from([("[", "]"), ('{"a":', "}")]))
    return opener * depth + "1" + closer * draw(st.integers(0, depth))


@st.composite
def edited(draw: Callable[..., Any], base: bytes) -> bytes:
    """`base` with a few random byte edits (insert, delete, replace, duplicate a slice)."""
    data = bytearray(base)
    for _ in range(draw(st.integers(1, 4))):
        if not data:
            data += draw(st.binary(min_size=1, max_size=8))
            continue
        at = draw(st.integers(0, len(data) - 1))
        kind = draw(st.sampled_from(["insert", "delete", "replace", "duplicate"]))
        if kind == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=8))
        elif kind == "delete":
            del data[at : at + draw(st.integers(1, 16))]
        elif kind == "replace":
            data[at] = draw(st.integers(0, 255))
        else:
            data[at:at] = data[at : at + draw(st.integers(1, 64))] * draw(st.integers(1, 20))
    return bytes(data)


def _lines(rows: st.SearchStrategy[str], max_size: int = 8) -> st.SearchStrategy[bytes]:
    return st.lists(rows, min_size=0, max_size=max_size).map(lambda lines: "\n".join(lines).encode("utf-8", "replace"))


def _with_bad_bytes(strategy: st.SearchStrategy[bytes]) -> st.SearchStrategy[bytes]:
    return st.one_of(
        strategy,
        st.tuples(strategy, st.binary(min_size=1, max_size=4)).map(lambda t: t[0] + b"\xff\xfe" + t[1]),
    )


# ---------------------------------------------------------------------------------------------- files

GOOD_GOLDEN = (
    b'{"id": "q1", "question": "How do I defer a payment?", "expected": ["deferment"]}\n'
    b'{"id": "q2", "question": "Wire limits?", "relevance": {"wire": 2, "fees": 1}}\n'
)
GOOD_CORPUS = (
    b'{"id": "deferment", "title": "Deferring", "text": "You may defer a payment."}\n'
    b'{"id": "wire", "pages": ["Wire transfers", "Limits apply."], "metadata": {"topic": "wire"}}\n'
)
GOOD_CONFIG = b"""name: fuzz
golden: golden.jsonl
corpus: docs.jsonl
targets:
  - name: Local
    engine: sqlite
    options: {dense_models: [], path: .vx/x.db}
evaluation:
  metrics: [found@10, ndcg@10]
  depth: 20
  seed: 1
"""
GOOD_QRELS = b"q1 0 deferment 1\nq1 0 wire 0\nq2 0 wire 2\n"
GOOD_RUN = b"q1 Q0 deferment 1 2.5 run\nq1 Q0 wire 2 1.0 run\nq2 Q0 wire 1 3 run\n"

_golden_row = st.fixed_dictionaries(
    {"id": JSON_LEAF, "question": JSON_VALUE},
    optional={"expected": JSON_VALUE, "relevance": JSON_VALUE, "metadata": JSON_VALUE, "answer": JSON_VALUE},
).map(_dumps)
_corpus_row = st.fixed_dictionaries(
    {"id": JSON_LEAF},
    optional={"title": JSON_VALUE, "text": JSON_VALUE, "pages": JSON_VALUE, "metadata": JSON_VALUE, "_id": JSON_LEAF},
).map(_dumps)
_json_line = st.one_of(
    JSON_VALUE.map(_dumps),
    _deep(),
    st.just('{"id": ' + HUGE_INTEGER + "}"),
    st.just('{"id": "q", "question": "x", "expected": ["d"], "n": ' + HUGE_INTEGER + "}"),
)

GOLDEN = _with_bad_bytes(
    st.one_of(_lines(st.one_of(_golden_row, _json_line)), edited(GOOD_GOLDEN), st.just(GOOD_GOLDEN))
)
CORPUS = _with_bad_bytes(
    st.one_of(_lines(st.one_of(_corpus_row, _json_line)), edited(GOOD_CORPUS), st.just(GOOD_CORPUS))
)

_KEYS = ["name", "Name", "golden", "corpus", "targets", "evaluation", "save_to", "judges", "writers", "stores"]
_EVAL_KEYS = ["metrics", "depth", "Depth", "seed", "primary", "balance", "time", "judge", "timing_sample", "bootstrap"]
_YAML_SCALAR = st.one_of(
    st.sampled_from(
        [
            "2001-13-45",
            "2001-01-01",
            "25:61:61",
            "!!float xyz",
            "!!int abc",
            "!!binary '%%'",
            "!!python/object:os.system x",
            "9" * 4400,
            "0x" + "f" * 200,
            ".nan",
            "~",
            "'\x1b[2J'",
            '"\\e[31m"',
            "*undefined",
            "[[[[",
            "{a: [b, {c: d}]}",
        ]
    ),
    WORDS.map(json.dumps),
    NUMBERS.map(_dumps),
)


@st.composite
def _yaml_mapping(draw: Callable[..., Any]) -> bytes:
    lines = []
    for key in draw(st.lists(st.sampled_from(_KEYS), max_size=6)):
        if key == "evaluation":
            inner = draw(st.dictionaries(st.sampled_from(_EVAL_KEYS), _YAML_SCALAR, max_size=4))
            lines.append("evaluation: {" + ", ".join(f"{k}: {v}" for k, v in inner.items()) + "}")
        elif key == "targets":
            engine = draw(st.sampled_from(["sqlite", "qdrant", "opensearch", "azure-search", "sqlit", "Sqlite"]))
            option = draw(st.sampled_from(["dense_models", "path", "mode", "url", "Dense_models", "api_key"]))
            lines.append(f"targets: [{{name: T, engine: {engine}, options: {{{option}: {draw(_YAML_SCALAR)}}}}}]")
        elif key in ("judges", "writers", "stores"):
            name = draw(st.sampled_from(["cross-encoder", "cross-encodr", "chat", "chta", "s3", "local", "x"]))
            lines.append(f"{key}: {{{name}: {{{draw(WORDS.map(json.dumps))}: {draw(_YAML_SCALAR)}}}}}")
        else:
            lines.append(f"{key}: {draw(_YAML_SCALAR)}")
    return "\n".join(lines).encode("utf-8", "replace")


def _alias_bomb(levels: int) -> bytes:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]")
    lines.append(f"name: *a{levels - 1}")
    return "\n".join(lines).encode()


CONFIG = _with_bad_bytes(
    st.one_of(
        _yaml_mapping(),
        edited(GOOD_CONFIG),
        st.just(GOOD_CONFIG),
        st.integers(2, 9).map(_alias_bomb),
        st.just(b"options: &a {x: *a}\nname: *a\n"),
        st.integers(50, 2000).map(lambda n: ("a: " + "[" * n + "]" * n).encode()),
        st.integers(50, 2000).map(lambda n: b"".join(b"  " * i + b"k:\n" for i in range(n))),
    )
)

_TREC_TOKEN = st.one_of(
    st.from_regex(r"[a-z0-9]{1,6}", fullmatch=True),
    st.sampled_from(["Q0", "0", "1", "2", "-1", "1.5", "nan", "inf", "-inf", "1e0", "+1", "x" * 20000, "9" * 4400]),
    WORDS.filter(lambda w: w.strip() != "" and " " not in w and "\n" not in w and "\t" not in w),
)
_trec_line = st.one_of(
    st.lists(_TREC_TOKEN, min_size=0, max_size=8).map(" ".join),
    st.just("# a comment"),
    st.just("\r"),
)
QRELS = _with_bad_bytes(st.one_of(_lines(_trec_line, 12), edited(GOOD_QRELS), st.just(GOOD_QRELS)))
RUN = _with_bad_bytes(st.one_of(_lines(_trec_line, 12), edited(GOOD_RUN), st.just(GOOD_RUN)))

# -------------------------------------------------------------------------------------------- readers


def read_golden_bytes(raw: bytes) -> None:

    lint(raw)
    parse_golden(raw, "golden.jsonl")


def read_corpus_bytes(raw: bytes) -> None:

    for _ in FileCorpus(raw, "docs.jsonl"):
        pass


def read_config_bytes(raw: bytes, plugins: Any = None) -> None:

    parse_config(raw, plugins or _plugins(load_plugins), path=Path(tempfile.gettempdir()) / "fuzz.yaml")


_loaded: list[Any] = []


def _plugins(load: Callable[[], Any]) -> Any:
    if not _loaded:
        _loaded.append(load())
    return _loaded[0]


def _in_file(raw: bytes, name: str, read: Callable[[Path], Any]) -> Any:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / name
        path.write_bytes(raw)
        return read(path)


def read_qrels_bytes(raw: bytes) -> None:

    judgements = _in_file(raw, "qrels.txt", read_judgements)
    run = _in_file(GOOD_RUN, "run.txt", read_run)
    evaluate_run(judgements, run, ["ndcg_cut.10", "P.5", "map"])


def read_run_bytes(raw: bytes) -> None:

    judgements = _in_file(GOOD_QRELS, "qrels.txt", read_judgements)
    run = _in_file(raw, "run.txt", read_run)
    evaluate_run(judgements, run, ["ndcg_cut.10", "P.5", "map", "recip_rank"])


_FILES = {"golden.jsonl": GOLDEN, "docs.jsonl": CORPUS, "config.yaml": CONFIG, "qrels.txt": QRELS, "run.txt": RUN}
_ARG = st.one_of(
    st.sampled_from([*_FILES, "missing.jsonl", ".", "latest", "--json", "--limit", "0", "-1", "--no-save", "--"]),
    st.sampled_from(["-m", "--mix", "--only", "--skip", "--resume", "--out", "--config", "--writer", "-n"]),
    WORDS.filter(lambda w: "\x00" not in w),
)
_COMMANDS = [
    ["golden", "check"],
    ["eval"],
    ["run"],
    ["runs", "list"],
    ["runs", "show"],
    ["compare"],
    ["golden", "write"],
    ["judge", "check"],
    ["plugins"],
]


@dataclass(frozen=True)
class Invocation:
    """A command line and the files it may name, written into a fresh folder before it runs."""

    argv: list[str]
    files: dict[str, bytes]

    def __len__(self) -> int:
        return sum(map(len, self.argv)) + sum(map(len, self.files.values()))


CLI = st.builds(
    lambda command, args, files: Invocation([*command, *args], files),
    st.sampled_from(_COMMANDS),
    st.lists(_ARG, max_size=6),
    st.fixed_dictionaries({}, optional={name: strategy for name, strategy in _FILES.items()}),
)


def run_cli(invocation: Invocation) -> None:
    """`vx-eval ARGV` in a fresh folder holding the files; exit 0 or 2 is handled, a bug raises."""

    with tempfile.TemporaryDirectory() as folder:
        for name, raw in invocation.files.items():
            (Path(folder) / name).write_bytes(raw)
        here = os.getcwd()
        os.chdir(folder)
        try:
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()) as err:
                main(invocation.argv)
        except SystemExit as exc:
            if exc.code not in (0, 2, None):
                raise AssertionError(f"exit {exc.code}: {err.getvalue()[-300:]}") from None
        finally:
            os.chdir(here)


GOOD_CLI = Invocation(["golden", "check", "golden.jsonl"], {"golden.jsonl": GOOD_GOLDEN})


@dataclass(frozen=True)
class Reader:
    name: str
    inputs: st.SearchStrategy[Any]
    read: Callable[[Any], None]
    good: Any
    """A valid input of the kind, which the benchmark times beside the hostile ones."""


READERS = [
    Reader("golden", GOLDEN, read_golden_bytes, GOOD_GOLDEN),
    Reader("corpus", CORPUS, read_corpus_bytes, GOOD_CORPUS),
    Reader("config", CONFIG, read_config_bytes, GOOD_CONFIG),
    Reader("qrels", QRELS, read_qrels_bytes, GOOD_QRELS),
    Reader("run", RUN, read_run_bytes, GOOD_RUN),
    Reader("cli", CLI, run_cli, GOOD_CLI),
]


def handled(read: Callable[[Any], None], raw: Any) -> BaseException | None:
    """None when `read` took `raw` or refused it clearly (a `VxEvalError`); the exception otherwise."""
    try:
        read(raw)
    except VxEvalError:
        return None
    except Exception as exc:  # the point: anything else is a bug to report
        return exc
    return None
