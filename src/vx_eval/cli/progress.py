"""Progress written to a JSON file as a run goes (`vx-eval run --progress-file`): what the server reads to say
how far a run it started has come. Written whole each time (a rename), at most twice a second."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


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
