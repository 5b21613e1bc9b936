"""Progress as a run goes: bars in a terminal, plain lines in a log (`RichProgress`), and a JSON file
(`vx-eval run --progress-file`, `FileProgress`): what the server reads to say how far a run it started has
come, written whole each time (a rename), at most twice a second."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskProgressColumn,
    TextColumn,
    TimeRemainingColumn,
)

from vx_eval.views.format import duration, plan_lines

if TYPE_CHECKING:
    from vx_eval.core.usecases.plan import Plan


class FileProgress:
    """A `Progress` that keeps, per stage, how much is done of how much, and the notes, in a JSON file."""

    def __init__(self, path: Path, also: Any = None) -> None:
        self.path, self.also = path, also
        self.stages: dict[str, dict[str, int | None]] = {}
        self.notes: list[str] = []
        self.lock = threading.Lock()
        self.written = 0.0
        self.current: str | None = None
        self.size: dict[str, int] = {}
        self._write(force=True)

    def plan(self, setups: int, questions: int) -> None:
        """The run's size: its setups and its questions (called once searching is planned)."""
        with self.lock:
            self.size = {"setups": setups, "questions": questions}
        self._write(force=True)

    def start(self, description: str, total: int | None) -> Callable[[int], None]:
        inner = self.also.start(description, total) if self.also is not None else None
        with self.lock:
            self.stages[description] = {"done": 0, "total": total}
            self.current = description
        self._write(force=True)

        def advance(n: int) -> None:
            if inner is not None:
                inner(n)
            with self.lock:
                stage = self.stages[description]
                done = int(stage["done"] or 0) + n
                stage["done"] = done
                finished = total is not None and done >= total
            self._write(force=finished)

        return advance

    def note(self, message: str) -> None:
        if self.also is not None:
            self.also.note(message)
        with self.lock:
            self.notes.append(message)
        self._write(force=True)

    def _write(self, force: bool = False) -> None:
        now = time.monotonic()
        with self.lock:
            if not force and now - self.written < 0.5:
                return
            self.written = now
            data = {"stage": self.current, "stages": self.stages, "notes": self.notes[-20:], **self.size}
            partial = self.path.with_name(f".{self.path.name}.{os.getpid()}.partial")
            try:
                partial.write_text(json.dumps(data), encoding="utf-8")
                partial.replace(self.path)
            except OSError:  # a full disk: progress is told again at the next step; the run goes on
                partial.unlink(missing_ok=True)


class RichProgress:
    """The `Progress` the CLI passes to the core: a bar per stage, notes printed above the bars; where the
    output is not a terminal (a CI log, a file), plain lines instead: each stage's start, then how far it is
    with an estimate of the time left every `every` seconds, and its end."""

    def __init__(self, console: Console, every: float = 15.0) -> None:
        self.console = console
        self.plain = not console.is_terminal
        self.every = every
        self.bars = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TaskProgressColumn(),
            TextColumn("{task.fields[rate]}"),
            TimeRemainingColumn(),
            console=console,
            transient=False,
            disable=self.plain,
        )

    def __enter__(self) -> RichProgress:
        self.bars.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.bars.stop()

    def start(self, description: str, total: int | None) -> Callable[[int], None]:
        if self.plain:
            return self._lines(description, total)
        task = self.bars.add_task(description, total=total, rate="")

        def advance(n: int) -> None:
            self.bars.advance(task, n)
            speed = self.bars.tasks[task].speed
            if speed:
                self.bars.update(task, rate=f"{speed:,.0f}/s")

        return advance

    def _lines(self, description: str, total: int | None) -> Callable[[int], None]:
        began = last = time.monotonic()
        done = 0
        self.console.print(f"{description}: started{f' ({total:,})' if total else ''}", highlight=False)

        def advance(n: int) -> None:
            nonlocal done, last
            done += n
            now = time.monotonic()
            finished = total is not None and done >= total
            if not finished and now - last < self.every:
                return
            last = now
            spent = now - began
            text = f"{description}: {done:,}" + (f"/{total:,} ({done / total:.0%})" if total else "")
            text += f", {duration(spent)}"
            if total and not finished and done:
                text += f", about {duration(spent / done * (total - done))} left"
            self.console.print(text + (", done" if finished else ""), highlight=False)

        return advance

    def note(self, message: str) -> None:
        self.bars.console.print(f"[yellow]warning:[/] {escape(message)}", highlight=False)

    def show_plan(self, plan: Plan) -> None:
        """The run's long work and its estimates (`RunOptions.on_plan`), then what cannot work as named."""
        for line in plan_lines(plan):
            self.bars.console.print(f"[bold]plan:[/] {escape(line)}", highlight=False)
        for warning in plan.warnings:
            self.note(warning)
