"""Generated inputs for comparing `vx-eval eval --trec-format` with the trec_eval program itself, line by line:
qrels, preference and run files drawn from a seed, and every option set trec_eval takes.

A case is drawn from its number alone, with Python's `random.Random(seed).random()` (whose stream Python keeps
the same across versions and machines) and nothing else, so a case is the same file everywhere. The drawing
covers what real and hostile files hold: grades from -3 to 5 (below 0 is "judged, pooled, not relevant" for
some measures and a level of its own for others), questions graded only 0 or only below 0, ties in scores,
documents listed twice (within and beyond the ``-M`` depth), judged questions the run does not answer and
answered ones nobody judged, ids in any script, and runs that answer no judged question.

`tests/core/trec/test_trec_program.py` runs the cases against the binary where one is found (or built from a
source tree), and against the program's own answers recorded in ``tests/data/trec_program/`` everywhere else;
`benchmarks/trec_differential.py` runs thousands of them.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import io
import itertools
import json
import random
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from vx_eval.cli import main

OPTION_SETS: dict[str, tuple[tuple[str, ...], str]] = {
    # name -> (trec_eval's flags, which judgements file: qrels, prefs, or jg)
    "official": ((), "qrels"),
    "all_trec -q": (("-q", "-m", "all_trec"), "qrels"),
    "all_trec -q -c": (("-q", "-c", "-m", "all_trec"), "qrels"),
    "all_trec -q -J": (("-q", "-J", "-m", "all_trec"), "qrels"),
    "all_trec -q -c -J": (("-q", "-c", "-J", "-m", "all_trec"), "qrels"),
    "all_trec -q -M4": (("-q", "-M", "4", "-m", "all_trec"), "qrels"),
    "all_trec -q -c -M2 -l2": (("-q", "-c", "-M2", "-l2", "-m", "all_trec"), "qrels"),
    "all_trec -q -l3 -N60": (("-q", "-l", "3", "-N", "60", "-m", "all_trec"), "qrels"),
    "all_trec -n -q -o": (("-n", "-q", "-o", "-m", "all_trec"), "qrels"),
    "parameters": (
        tuple(
            "-q -m P.1,3,7 -m recall.2,5 -m ndcg.1=3,2=9,-1=2 -m ndcg_cut.3,20 -m success.2 -m utility.2,-1,0,0 "
            "-m Rprec_mult.0.5,2.0 -m iprec_at_recall..1,.55 -m 11pt_avg..25,.5 -m relstring.6 -m map_cut.2,7 "
            "-m set_F.0.5".split()
        ),
        "qrels",
    ),
    "qrels_prefs": (("-q", "-R", "qrels_prefs", "-m", "all_prefs"), "qrels"),
    "qrels_prefs -c -M3": (("-q", "-c", "-M", "3", "-R", "qrels_prefs", "-m", "all_prefs"), "qrels"),
    "prefs": (("-q", "-R", "prefs", "-m", "all_prefs"), "prefs"),
    "qrels_jg": (("-q", "-R", "qrels_jg", "-m", "qrels_jg"), "jg"),
    "qrels_jg -c": (("-q", "-c", "-R", "qrels_jg", "-m", "qrels_jg"), "jg"),
    "all_trec -q -Z": (("-q", "-m", "all_trec", "-Z", "{zscores}"), "qrels"),
    "all_trec -q -c -Z": (("-q", "-c", "-m", "all_trec", "-Z", "{zscores}"), "qrels"),
}
"""Every option trec_eval takes but -D (its debug output) and -T (one format); ``{zscores}`` is the case's
z-score file (`zscores_of`)."""
ZSCORES = "{zscores}"
Z_MEASURES = ("map", "P_5", "P_10", "num_ret", "num_rel_ret", "recip_rank", "bpref", "ndcg", "ndcg_cut_10",
              "Rprec", "iprec_at_recall_0.00", "success_1", "gm_map", "set_F", "runid")  # fmt: skip
"""Measures a drawn z-score file gives a mean and deviation for (the rest print trec_eval's -1000000)."""

SCRIPTS = (
    "d",  # plain
    "DOC-",  # upper case and a dash
    "док",  # Cyrillic
    "文書",  # CJK
    "مستند",  # Arabic
    "é",  # a precomposed accent, sorting above ASCII by bytes
    "",  # digits alone: 10 sorts before 9 as bytes
)


@dataclass(frozen=True)
class Case:
    """One drawn case: its number and the bytes of each file."""

    number: int
    qrels: bytes
    prefs: bytes
    jg: bytes
    run: bytes

    def judgements(self, which: str) -> bytes:
        return {"qrels": self.qrels, "prefs": self.prefs, "jg": self.jg}[which]


class _Draw:
    """Draws from Python's Mersenne Twister through `random()` alone (the one call whose stream Python
    promises to keep): ints, choices, subsets and shuffles written on top of it."""

    def __init__(self, seed: int) -> None:
        self._random = random.Random(seed)

    def chance(self, p: float) -> bool:
        return self._random.random() < p

    def number(self, low: int, high: int) -> int:
        """An int in [low, high]."""
        return low + min(int(self._random.random() * (high - low + 1)), high - low)

    def pick(self, items: list[str] | tuple[str, ...]) -> str:
        return items[self.number(0, len(items) - 1)]

    def subset(self, items: list[str], low: int, high: int) -> list[str]:
        """Between low and high of `items`, distinct, in a drawn order."""
        pool = list(items)
        self.shuffle(pool)
        return pool[: self.number(min(low, len(pool)), min(high, len(pool)))]

    def shuffle(self, items: list[str]) -> None:
        for i in range(len(items) - 1, 0, -1):
            j = self.number(0, i)
            items[i], items[j] = items[j], items[i]


def draw_case(number: int) -> Case:
    """Case `number`: the same bytes on every machine and Python."""
    d = _Draw(20261207 * 1_000_003 + number)
    script = d.pick(SCRIPTS)
    docs = [f"{script}{i}" for i in range(d.number(2, 30))]
    questions = [f"{i:02d}" if d.chance(0.5) else f"q{i}" for i in range(d.number(1, 5))]
    grades = [str(g) for g in range(-3, 6)]
    qrels, prefs, jg = [], [], []
    for q in questions:
        if d.chance(0.12):
            continue  # nobody judged this question
        only = d.pick(["any", "any", "any", "any", "zero", "below"])
        judged = d.subset(docs, 1, len(docs))
        for doc in judged:
            grade = {"zero": "0", "below": d.pick(["-1", "-2", "-3"])}.get(only) or d.pick(grades)
            qrels.append(f"{q} 0 {doc} {grade}")
            for group in ("0", "1") if d.chance(0.5) else ("0",):
                jg.append(f"{q} {group} {doc} {grade if group == '0' else d.pick(grades)}")
        for person in range(d.number(1, 2)):
            for sub in range(d.number(1, 3)):
                for doc in d.subset(judged, 1, 6):
                    prefs.append(f"{q} {person} {sub} {doc} {d.pick(['0', '1', '2', '3', '0.5'])}")
    if not qrels:
        qrels.append(f"{questions[0]} 0 {docs[0]} 1")
        jg.append(f"{questions[0]} 0 {docs[0]} 1")
    if not prefs:
        prefs += [f"{questions[0]} 0 0 {docs[0]} 1", f"{questions[0]} 0 0 {docs[1]} 0"]
    if d.chance(0.04):  # a document judged twice for one question
        qrels.append(qrels[d.number(0, len(qrels) - 1)])
    if d.chance(0.04):
        prefs.append(prefs[d.number(0, len(prefs) - 1)])
    run = _run(d, questions, docs)
    return Case(number, _text(qrels), _text(prefs), _text(jg), _text(run))


def _run(d: _Draw, questions: list[str], docs: list[str]) -> list[str]:
    answered = [q for q in questions if not d.chance(0.15)]
    if d.chance(0.05):
        answered = []  # a run that answers no judged question
    if d.chance(0.3):
        answered.append("nobody-judged")
    if not answered:
        answered = ["nobody-judged"]
    scores = ["1", "2", "2.5", "0.1", "-1", "3", "0", "1e-3", "7.25"]
    lines = []
    for q in answered:
        listed = d.subset([*docs, "unjudged-a", "unjudged-b"], 1, len(docs) + 2)
        if d.chance(0.06):  # a document listed twice: within -M's depth, or beyond it
            listed.insert(d.number(0, len(listed)), listed[d.number(0, len(listed) - 1)])
        for rank, doc in enumerate(listed, start=1):
            score = d.pick(scores) if d.chance(0.6) else f"0.{d.number(0, 999):03d}"
            lines.append(f"{q} Q0 {doc} {rank} {score} run{d.number(1, 2) if d.chance(0.1) else 1}")
    d.shuffle(lines) if d.chance(0.2) else None
    return lines


def _text(lines: list[str]) -> bytes:
    return "".join(line + "\n" for line in lines).encode()


# --------------------------------------------------------------------------------------------- comparing


@dataclass(frozen=True)
class Answer:
    """What one program printed for one case and option set: whether it answered (exit 0), and its lines."""

    answered: bool
    out: bytes


def undefined_lines(case: Case, which: str) -> Callable[[bytes], bool]:
    """Which of trec_eval's lines for this case print a value its C code leaves undefined, read from the input
    files alone (so that vx-eval cannot excuse itself), each a known defect of trec_eval 10.0:

    - ``rbp``: scales its gains by a minimum and maximum it never sets (``m_rbp.c``): whatever the stack held;
    - ``prefs_avgjg_Rnonrel``(``_ret``) of a question judged at a level below 0: where the lowest level holds
      fewer documents than the relevant ones, it reads past the end of that level's table;
    - ``ndcg`` with a gain for a level below 0, of a question judged only below 0: its tables are sized by the
      question's highest grade + 1 (0 here), so it reads what an earlier question left in them.

    A question's ``all`` line goes with it."""
    below, only_below = _below_zero(case.judgements(which), 4 if which == "prefs" else 3)
    flags = (b"prefs_avgjg_Rnonrel", below), (b"ndcg_", only_below)

    def undefined(line: bytes) -> bool:
        if line.startswith(b"rbp"):
            return True
        fields = line.split(b"\t")
        name, qid = fields[0].strip(), fields[1] if len(fields) > 1 else b""
        for prefix, questions in flags:
            gain_below_zero = prefix != b"ndcg_" or b"=-" in name or b",-" in name
            asked = qid in questions or (qid == b"all" and bool(questions))
            if name.startswith(prefix) and gain_below_zero and asked:
                return True
        return False

    return undefined


def _below_zero(text: bytes, level: int) -> tuple[set[bytes], set[bytes]]:
    """The questions judged at some level below 0, and those judged only below 0."""
    highest: dict[bytes, float] = {}
    lowest: dict[bytes, float] = {}
    for line in text.splitlines():
        fields = line.split()
        if len(fields) > level:
            value = float(fields[level])
            highest[fields[0]] = max(highest.get(fields[0], value), value)
            lowest[fields[0]] = min(lowest.get(fields[0], value), value)
    return {q for q, v in lowest.items() if v < 0}, {q for q, v in highest.items() if v < 0}


def zscores_of(case: Case) -> bytes:
    """A z-score file for the case (``qid measure mean stddev``), drawn apart from its other files: most
    questions, most of `Z_MEASURES` for each, now and then a deviation of 0 (trec_eval then prints 0 where the
    value is the mean, else -1000000). Each question's list, and the file, end with a line whose id sorts
    after every other: trec_eval's binary search reads one entry past its table when looking for an id above
    all of them (`convert_zscores.c`), which no file should make it do."""
    d = _Draw(case.number * 7 + 11)
    ids = sorted({line.split()[0] for line in (case.qrels + case.run).decode().splitlines() if line.split()})
    lines = []
    for qid in ids:
        if d.chance(0.15):
            continue
        for measure in Z_MEASURES:
            if d.chance(0.2):
                continue
            mean = d.number(0, 10_000) / 10_000
            deviation = 0.0 if d.chance(0.1) else d.number(1, 5_000) / 10_000
            lines.append(f"{qid} {measure} {mean:.4f} {deviation:.4f}")
        lines.append(f"{qid} ~ 0 1")  # '~' sorts after every measure's name
    lines.append("\U0010ffff ~ 0 1")  # sorts after every id (its UTF-8 starts with 0xf4)
    return _text(lines)


def files(case: Case, which: str, folder: Path) -> tuple[Path, Path]:
    """The case's judgements (`which` of them) and run, written into `folder`, its z-score file beside them."""
    rel, run = folder / f"{case.number}.{which}", folder / f"{case.number}.run"
    rel.write_bytes(case.judgements(which))
    run.write_bytes(case.run)
    (folder / f"{case.number}.zscores").write_bytes(zscores_of(case))
    return rel, run


def _resolved(flags: tuple[str, ...], rel: Path) -> list[str]:
    """The flags with ``{zscores}`` as the case's z-score file (beside its judgements)."""
    zscores = rel.with_name(rel.name.split(".", 1)[0] + ".zscores")
    return [str(zscores) if flag == ZSCORES else flag for flag in flags]


def program_answer(binary: str, flags: tuple[str, ...], rel: Path, run: Path) -> Answer:
    """What the trec_eval program at `binary` prints."""
    done = subprocess.run([binary, *_resolved(flags, rel), str(rel), str(run)], capture_output=True, timeout=60)
    return Answer(done.returncode == 0, done.stdout if done.returncode == 0 else b"")


def vx_eval_answer(flags: tuple[str, ...], rel: Path, run: Path) -> tuple[Answer, str]:
    """What `vx-eval eval --trec-format` prints, in this process; and what it said on standard error."""
    out, err = io.BytesIO(), io.StringIO()
    stdout = io.TextIOWrapper(out, encoding="utf-8", write_through=True)
    code = 0
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(err):
        try:
            main(["eval", "--trec-format", *_resolved(flags, rel), str(rel), str(run)])
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
    stdout.flush()
    if code not in (0, 2):
        raise AssertionError(f"vx-eval eval exited {code} (a bug, not a refusal): {err.getvalue()[-2000:]}")
    return Answer(code == 0, out.getvalue() if code == 0 else b""), err.getvalue()


def differences(theirs: Answer, mine: Answer, undefined: Callable[[bytes], bool] = lambda line: False) -> list[str]:
    """The lines that differ (each side's), or why: one answered where the other refused. Lines `undefined`
    says trec_eval's C code leaves undefined are left out."""
    if theirs.answered != mine.answered:
        said = "answered" if theirs.answered else "refused"
        return [f"trec_eval {said}, vx-eval {'answered' if mine.answered else 'refused'}"]
    kept = [[line for line in side.out.splitlines() if not undefined(line)] for side in (theirs, mine)]
    if kept[0] == kept[1]:
        return []
    out = []
    for a, b in itertools.zip_longest(*kept, fillvalue=b"(no line)"):
        if a != b:
            out.append(f"trec_eval {a.decode('utf-8', 'replace')!r} vx-eval {b.decode('utf-8', 'replace')!r}")
    return out


# --------------------------------------------------------------------------------------------- recorded answers


@dataclass(frozen=True)
class Recorded:
    """The program's answer to one case and option set, kept where no program is installed: whether it
    answered, how many lines it printed that are compared, and a digest of those lines."""

    case: int
    option_set: str
    answered: bool
    lines: int
    digest: str

    @classmethod
    def of(cls, case: int, option_set: str, answer: Answer, undefined: Callable[[bytes], bool]) -> Recorded:
        kept = _kept(answer.out, undefined)
        return cls(case, option_set, answer.answered, len(kept), _digest(kept))


def _kept(out: bytes, undefined: Callable[[bytes], bool]) -> list[bytes]:
    return [line for line in out.splitlines() if not undefined(line)]


def _digest(lines: list[bytes]) -> str:
    return hashlib.sha256(b"\n".join(lines)).hexdigest()[:16]


def write_recorded(path: Path, answers: list[Recorded]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = "".join(
        json.dumps([a.case, a.option_set, int(a.answered), a.lines, a.digest], ensure_ascii=False) + "\n"
        for a in answers
    )
    path.write_bytes(gzip.compress(rows.encode(), mtime=0))


def read_recorded(path: Path) -> dict[tuple[int, str], Recorded] | None:
    """The answers kept at `path` by case and option set (None where there is no such file)."""
    if not path.exists():
        return None
    out = {}
    for row in gzip.decompress(path.read_bytes()).decode().splitlines():
        case, option_set, answered, lines, digest = json.loads(row)
        out[case, option_set] = Recorded(case, option_set, bool(answered), lines, digest)
    return out


@dataclass
class Tally:
    """What a comparison run found: comparisons, lines compared, lines differing, seconds on each side."""

    compared: int = 0
    lines: int = 0
    differing: int = 0
    ours_s: float = 0.0
    program_s: float = 0.0

    def _ours(self, case: Case, name: str, folder: Path) -> Answer:
        flags, which = OPTION_SETS[name]
        rel, run = files(case, which, folder)
        started = time.perf_counter()
        mine, _ = vx_eval_answer(flags, rel, run)
        self.ours_s += time.perf_counter() - started
        self.compared += 1
        return mine

    def compare(self, case: Case, name: str, theirs: Answer, folder: Path) -> list[str]:
        """vx-eval's answer against the program's `theirs`: the differing lines."""
        mine = self._ours(case, name, folder)
        undefined = undefined_lines(case, OPTION_SETS[name][1])
        found = differences(theirs, mine, undefined)
        self.lines += max(len(_kept(theirs.out, undefined)), 1)
        self.differing += len(found)
        return found

    def compare_recorded(self, case: Case, name: str, theirs: Recorded, folder: Path) -> list[str]:
        """vx-eval's answer against the program's recorded one: what differs (the lines themselves are not
        kept: run with the program to see them)."""
        mine = self._ours(case, name, folder)
        kept = _kept(mine.out, undefined_lines(case, OPTION_SETS[name][1]))
        self.lines += max(theirs.lines, 1)
        if mine.answered != theirs.answered:
            self.differing += 1
            said = "answered" if theirs.answered else "refused"
            return [f"trec_eval {said}, vx-eval {'answered' if mine.answered else 'refused'}"]
        if (len(kept), _digest(kept)) != (theirs.lines, theirs.digest):
            self.differing += max(abs(len(kept) - theirs.lines), 1)
            return [f"vx-eval printed {len(kept)} lines unlike trec_eval's {theirs.lines} (digests differ)"]
        return []
