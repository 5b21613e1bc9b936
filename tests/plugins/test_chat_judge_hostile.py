"""The chat judge against an endpoint that misbehaves in every way one does: slow past the timeout, a 200 that
is a gateway's HTML page, broken JSON, a completion without choices, errors (429, 500, 400), answers that are
not a grade ("grade 7", an empty message, a wall of text); and a graded run killed with SIGKILL while it
judges. The endpoint is a small server of this test (what it answers is the point; a real model's answers are
tested in test_chat.py). Each case asserts what the judge and the run do: a clear error naming the endpoint
and how often it asked, never a traceback or a grade the answer did not give; the grades already given kept,
and a rerun asking only the rest and scoring as a run never interrupted."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from vx_eval.core.errors import EngineError
from vx_eval.llm.chat import ChatOptions
from vx_eval.plugins.judges.chat import ChatJudge

PAIRS = [("Can I freeze a lost card?", "Freeze a lost card in the app."), ("What does a wire cost?", "Wires cost $35.")]


def _completion(model: str, text: str | None) -> dict:
    message = {"role": "assistant", "content": text}
    return {"id": "c", "object": "chat.completion", "model": model, "choices": [{"index": 0, "message": message}]}


ANSWERS: dict[str, Callable[[str], tuple[int, bytes, str]]] = {
    "html": lambda m: (200, b"<html><body>502 gateway</body></html>", "text/html"),
    "broken-json": lambda m: (200, b'{"choices": [', "application/json"),
    "no-choices": lambda m: (200, b'{"id": "c", "object": "chat.completion"}', "application/json"),
    "empty-choices": lambda m: (200, b'{"id": "c", "choices": []}', "application/json"),
    "a-list": lambda m: (200, b"[1, 2]", "application/json"),
    "error-500": lambda m: (500, b'{"error": {"message": "upstream died"}}', "application/json"),
    "error-429": lambda m: (429, b'{"error": {"message": "slow down"}}', "application/json"),
    "error-400": lambda m: (400, b'{"error": {"message": "context length exceeded"}}', "application/json"),
}
"""Answers that are not a completion, or refusals: by the model name asked for."""
TEXTS = {"seven": "grade 7", "final-seven": "##final score: 7", "nothing": None, "wall": "3" * 5000, "two": "2"}
"""Completions whose text is (or is not) a grade, by model name."""


class Endpoint:
    """An OpenAI-shaped chat endpoint on 127.0.0.1 in a thread of this process; the model name asked for says
    how it answers (`ANSWERS`, `TEXTS`; ``slow``: past any timeout under 3 s). `fail_after`: answer that many
    requests with the model's text, then 503 every one (a service that goes down mid-run); `latency`: seconds
    before each answer."""

    def __init__(self, latency: float = 0.0) -> None:
        self.asked: Counter[str] = Counter()
        self.latency = latency
        self.fail_after: int | None = None
        self._lock = threading.Lock()
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                return None

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)))
                status, data, kind = endpoint.answer(body["model"])
                with contextlib.suppress(ConnectionError):  # the caller gave up waiting (the slow answers)
                    self.send_response(status)
                    self.send_header("content-type", kind)
                    self.send_header("content-length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def answer(self, model: str) -> tuple[int, bytes, str]:
        with self._lock:
            self.asked[model] += 1
            down = self.fail_after is not None and sum(self.asked.values()) > self.fail_after
        time.sleep(3.0 if model == "slow" else self.latency)
        if down:
            return 503, b'{"error": {"message": "down"}}', "application/json"
        if model in ANSWERS:
            return ANSWERS[model](model)
        return 200, json.dumps(_completion(model, TEXTS.get(model, "2"))).encode(), "application/json"


@pytest.fixture(scope="module")
def endpoint() -> Iterator[Endpoint]:
    served = Endpoint()
    yield served
    served.server.shutdown()


def _judge(endpoint: Endpoint, model: str, **options: object) -> ChatJudge:
    return ChatJudge(ChatOptions(url=endpoint.url, model=model, timeout=1, retries=1, concurrency=2, **options))


@pytest.mark.parametrize(
    ("model", "said", "asked"),
    [
        ("html", "not a chat completion (a str, not a completion: '<html><body>502 gateway", 2),
        ("broken-json", "not a chat completion (unreadable JSON", 2),
        ("no-choices", "not a chat completion (no choices)", 2),
        ("empty-choices", "not a chat completion (an empty list of choices)", 2),
        ("a-list", "not a chat completion (a list, not a completion: '[1, 2]')", 2),
        ("error-500", "answered 500 (asked 2 times): InternalServerError", 2),
        ("error-429", "answered 429 (asked 2 times): RateLimitError", 2),
        ("error-400", "answered 400 (asked once: a refusal is not retried)", 1),
        ("slow", "did not answer within 1 s (asked 2 times): raise its timeout", 2),
    ],
)
def test_an_endpoint_that_answers_no_completion_is_a_clear_error_after_bounded_tries(endpoint, model, said, asked):
    before = endpoint.asked[model]
    with pytest.raises(EngineError) as raised:
        _judge(endpoint, model).grade(PAIRS[:1])
    assert said in str(raised.value) and endpoint.url in str(raised.value)
    assert endpoint.asked[model] - before == asked  # retries bounded: the option's 1, and none for a refusal


@pytest.mark.parametrize("model", ["seven", "final-seven", "nothing", "wall"])
def test_answers_that_are_not_a_grade_zero_to_three_are_never_taken_as_one(endpoint, model):
    verdicts = _judge(endpoint, model).grade(PAIRS)
    assert [v.grade for v in verdicts] == [None, None]
    assert all(len(v.raw) <= 200 for v in verdicts)  # kept to show, cut


def _corpus(project, questions: int = 12) -> None:
    """40 documents and `questions` questions, one expected document each: a run whose judge grades some
    60 unlabelled pairs, more than one batch of them."""
    words = ["wire", "loan", "card", "fee", "abroad", "payment", "disaster", "funds", "invest", "report"]
    docs = [
        {"id": f"d{i}", "text": f"{words[i % 10]} {words[(i * 3) % 10]} {words[(i * 7) % 10]} note {i}"}
        for i in range(40)
    ]
    golden = [
        {"id": f"q{i}", "question": f"{words[i % 10]} {words[(i * 3) % 10]} note {i}", "expected": [f"d{i}"]}
        for i in range(questions)
    ]
    (project / "docs.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    (project / "golden.jsonl").write_text("".join(json.dumps(g) + "\n" for g in golden))


def _config(project, endpoint: Endpoint, model: str):
    chat = {"provider": "openai", "kind": "chat", "model": model, "base_url": endpoint.url, "concurrency": 1}
    return project.write_config(
        evaluation={"metrics": ["found@10", "ndcg@10"], "depth": 10, "judge": "grader", "judge_depth": 6},
        models={"threads": 1, "scores": str(project / "scores.db"), "endpoints": {"grader": {**chat, "retries": 0}}},
    )


def vx(project, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "vx_eval", *args], cwd=project.root, capture_output=True, text=True, timeout=300
    )


def _graded(report: dict) -> tuple:
    (setup,) = report["setups"]
    return setup["summary"], setup["per_question"]["metrics"], setup["graded"]


@pytest.mark.slow
def test_a_run_whose_judge_goes_down_stops_clearly_keeps_the_grades_given_and_resumes_asking_only_the_rest(project):
    _corpus(project)
    served = Endpoint()
    try:
        whole = vx(project, "run", str(_config(project, served, "two")), "--json")
        assert whole.returncode == 0, whole.stderr
        expected = json.loads(whole.stdout)
        pairs = expected["judge"]["pairs"]
        assert pairs > 40 and expected["judge"]["unparsable"] == 0
        (project / "grades.db").unlink()  # the judge's grades, kept beside the scores

        served.asked.clear()
        served.fail_after = 35  # the first batch of 32 grades comes back; the service goes down in the second
        down = vx(project, "run", str(_config(project, served, "two")))
        assert down.returncode == 2 and "Traceback" not in down.stderr, (served.asked, down.stderr)
        assert f"error: the chat endpoint {served.url} answered 503 (asked 1 time)" in down.stderr
        assert len(list((project / "runs").rglob("report.json"))) == 1  # the whole run's, none from this one

        served.fail_after, asked_before = None, served.asked["two"]
        again = vx(project, "run", str(_config(project, served, "two")), "--json")
        assert again.returncode == 0, again.stderr
        report = json.loads(again.stdout)
        assert report["judge"]["from_cache"] == 32 and report["judge"]["asked"] == pairs - 32
        assert served.asked["two"] - asked_before == pairs - 32
        assert _graded(report) == _graded(expected)
    finally:
        served.server.shutdown()


@pytest.mark.slow
def test_a_graded_run_answered_not_a_grade_warns_and_scores_those_pairs_as_ungraded(project, endpoint):
    _corpus(project, questions=4)
    done = vx(project, "run", str(_config(project, endpoint, "seven")), "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    judge = report["judge"]
    assert judge["unparsable"] == judge["pairs"] > 0 and judge["grades_from"]["judge"] == 0
    assert f"warning: the chat judge answered {judge['pairs']} of {judge['pairs']} pairs with something " in done.stderr
    assert "(such as 'grade 7')" in done.stderr


@pytest.mark.slow
@pytest.mark.parametrize("stage", ["Indexing", "Searching", "Judging (chat)"])
def test_a_graded_run_killed_at_any_stage_leaves_no_report_and_a_rerun_scores_as_one_never_killed(project, stage):
    _corpus(project)
    served = Endpoint(latency=0.03)
    try:
        config = str(_config(project, served, "two"))
        whole = vx(project, "run", config, "--json", "--no-save")
        assert whole.returncode == 0, whole.stderr
        expected = json.loads(whole.stdout)
        (project / "grades.db").unlink()  # the judge's grades, kept beside the scores
        for leftover in (project / ".vx").glob("*"):
            leftover.unlink() if leftover.is_file() else None
        served.asked.clear()
        process = subprocess.Popen(
            [sys.executable, "-m", "vx_eval", "run", config],
            cwd=project.root,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert process.stderr is not None
        seen = []
        for line in process.stderr:
            seen.append(line)
            if line.startswith(stage):
                while stage.startswith("Judging") and sum(served.asked.values()) <= 40 and process.poll() is None:
                    time.sleep(0.005)  # killed once more than a batch of grades is given
                os.kill(process.pid, signal.SIGKILL)
                break
        process.wait(timeout=60)
        assert process.returncode == -signal.SIGKILL, "".join(seen)[-2000:]
        assert not list((project / "runs").rglob("report.json"))  # nothing half-written, no report

        again = vx(project, "run", config, "--json")
        assert again.returncode == 0, again.stderr
        report = json.loads(again.stdout)
        assert _graded(report) == _graded(expected)
        if stage == "Judging (chat)":
            assert report["judge"]["from_cache"] >= 32  # the batch graded before the kill was kept
    finally:
        served.server.shutdown()
