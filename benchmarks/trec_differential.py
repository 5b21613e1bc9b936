"""`vx-eval eval --trec-format` against the trec_eval program, line by line, on thousands of generated cases
(`vx_eval.testing.trec_cases`: grades -3 to 5, ties, documents listed twice, unanswered and unjudged
questions, ids in any script) and every option set trec_eval takes.

    python benchmarks/trec_differential.py --trec-eval PATH [--cases 2000] [--record FILE]
    python benchmarks/trec_differential.py [--cases 2000]          # against the recorded answers

With the program (``--trec-eval``, ``VX_EVAL_TREC_EVAL`` or ``trec_eval`` on the PATH) each case is run by both
and every line compared; ``--record`` keeps the program's answers (whether it answered, and a digest of its
lines) in FILE, which `tests/core/trec/test_trec_program.py` reads where no program is installed. Without it,
vx-eval's answers are compared with the recorded ones. Prints the cases, lines compared, lines that differ
(must be 0), and the time per case of each side; exit status 1 on any difference.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

from vx_eval.testing import trec_cases

RECORDED = Path(__file__).resolve().parents[1] / "tests" / "data" / "trec_program" / "answers.jsonl.gz"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trec-eval", default=os.environ.get("VX_EVAL_TREC_EVAL") or shutil.which("trec_eval"))
    parser.add_argument("--cases", type=int, default=2000)
    parser.add_argument("--first", type=int, default=0)
    parser.add_argument("--record", type=Path, help="keep the program's answers here")
    parser.add_argument("--recorded", type=Path, default=RECORDED, help="compare with these where no program is")
    args = parser.parse_args()
    numbers = range(args.first, args.first + args.cases)
    recorded = None if args.trec_eval else trec_cases.read_recorded(args.recorded)
    if recorded is None and not args.trec_eval:
        print("no trec_eval program and no recorded answers", file=sys.stderr)
        return 2
    folder = Path(tempfile.mkdtemp(prefix="vx-eval-differential-"))
    tally = trec_cases.Tally()
    answers: list[trec_cases.Recorded] = []
    for n in numbers:
        case = trec_cases.draw_case(n)
        for name, (flags, which) in trec_cases.OPTION_SETS.items():
            started = time.perf_counter()
            if args.trec_eval:
                rel, run = trec_cases.files(case, which, folder)
                theirs = trec_cases.program_answer(args.trec_eval, flags, rel, run)
                tally.program_s += time.perf_counter() - started
                answers.append(trec_cases.Recorded.of(n, name, theirs, trec_cases.undefined_lines(case, which)))
                differing = tally.compare(case, name, theirs, folder)
            else:
                assert recorded is not None
                if (n, name) not in recorded:
                    continue
                differing = tally.compare_recorded(case, name, recorded[n, name], folder)
            for line in differing[:3]:
                print(f"case {n}, {name}: {line}")
    shutil.rmtree(folder, ignore_errors=True)
    if args.record:
        trec_cases.write_recorded(args.record, answers)
    each = 1e3 / max(tally.compared, 1)
    print(
        f"{tally.compared} comparisons ({len(numbers)} cases x {len(trec_cases.OPTION_SETS)} option sets), "
        f"{tally.lines} lines compared, {tally.differing} differing; vx-eval {tally.ours_s * each:.1f} ms a comparison"
        + (f", trec_eval {tally.program_s * each:.1f} ms" if args.trec_eval else "")
    )
    return 1 if tally.differing else 0


if __name__ == "__main__":
    sys.exit(main())
