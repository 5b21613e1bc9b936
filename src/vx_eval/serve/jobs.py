"""Runs the server starts: a queue kept on disk, run by a bounded pool of worker processes.

A request names an experiment the server knows (a config registered with it, by name) and may override its
golden questions (a dataset, its current version or one by sha256), its measures, their cut-offs and which
setups run. It is answered at once with the run's id; the run itself is ``vx-eval run`` in a process of its
own (`workers` at a time, each stopped with the server and started again when the server is), writing its
progress to a file the server reads. Every job is a JSON file in the jobs folder, written whole, so the
queue survives a restart: a pending run starts, an interrupted one resumes from its checkpoints under the
same id. Two requests for the same experiment, golden sha256 and overrides while one is pending or running
get that run. The queue is bounded (`serve.bounds.Limits`: in all, per person, per key), a full disk never
stops it (a write it refuses is made once it takes it; `health()` says so meanwhile), and finished jobs'
files are removed past a stated age and count.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any

from vx_eval._processes import child_setup
from vx_eval.core.errors import SEARCHES_FAILED, StoreError, service_text
from vx_eval.core.report.saving import REPORT_NAME, is_run_id, new_run_id, runs_folder
from vx_eval.core.run.checkpoints import Checkpoints
from vx_eval.core.stores import Stores, full_error, join
from vx_eval.serve.bounds import Limits
from vx_eval.serve.public import public_text
from vx_eval.serve.records import ACTIVE, Health, Job, Progress, QueueFull, RunRequest
from vx_eval.zeroconfig.autoconfig import QUESTIONS

__all__ = ["Job", "Jobs", "QueueFull", "RunRequest"]


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


LOOP_EVERY_S = 0.3
STALE_AFTER_S = 10.0
PROBE_EVERY_S = 5.0
RETIRE_EVERY_S = 60.0
JOB_FILES = (".json", ".log", ".progress", ".claim")


class Jobs:
    """The queue and its workers (see the module). `experiments` maps names to config files.

    The jobs waiting and running are kept in memory (an index, read from the folder once at start and kept
    up to date by every change this server makes), so the loop's cost does not grow with the queue. A job
    file another server adds to the same folder is found when the folder changes. A change is applied in
    memory first and written after: a write that fails (a full disk) is tried again every loop, and the
    loop itself survives any error, which `/healthz` reports.
    """

    def __init__(
        self,
        folder: Path,
        experiments: dict[str, Path],
        store: str,
        stores: Stores,
        workers: int = 2,
        targets: dict[str, str] | None = None,
        limits: Limits | None = None,
    ) -> None:
        self.folder, self.experiments, self.store, self.stores = folder, experiments, store, stores
        self.targets = dict(targets or {})
        self.limits = limits or Limits()
        self.workers = workers
        self.folder.mkdir(parents=True, exist_ok=True)
        self.lock = threading.RLock()
        self.running: dict[str, subprocess.Popen[Any]] = {}
        self.waiting: dict[str, Job] = {}
        """Pending and running jobs by id: the index the loop and the requests read."""
        self.ended: dict[str, str] = {}
        """Finished jobs whose files are kept: id -> when it finished (for retention)."""
        self.damaged: dict[str, str] = {}
        self.unsaved: dict[str, Job] = {}
        """Changes not yet written (the disk was full): written as soon as it takes them."""
        self.stop = threading.Event()
        self.last_loop = time.monotonic()
        self.problem: str | None = None
        self.writable = True
        self._probed = 0.0
        self._retired = 0.0
        self._folder_mtime = -1
        self._mtimes: dict[str, int] = {}
        """Each waiting job file's modification time when this server last wrote or read it."""
        for leftover in self.folder.glob(".*.partial"):
            leftover.unlink(missing_ok=True)  # a write a killed server did not finish
        self._scan()
        for job in list(self.waiting.values()):  # a restart: interrupted runs resume under their ids
            if job.status == "in_progress":
                self._change(job.model_copy(update={"status": "pending", "resume": True}))
        self.thread = threading.Thread(target=self._loop, name="vx-eval-jobs", daemon=True)
        self.thread.start()

    # ------------------------------------------------------------------------------------------ records

    def _path(self, run_id: str) -> Path:
        return self.folder / f"{run_id}.json"

    def _write(self, job: Job) -> None:
        """The job's file, written whole (a temporary file renamed); nothing is left behind when it fails."""
        partial = self.folder / f".{job.id}.json.partial"
        try:
            partial.write_text(job.model_dump_json(indent=1), encoding="utf-8")
            partial.replace(self._path(job.id))
            self._mtimes[job.id] = self._path(job.id).stat().st_mtime_ns
        except OSError as exc:
            partial.unlink(missing_ok=True)
            self.writable = False
            raise full_error(exc, str(self.folder)) or StoreError(
                f"cannot write the job file of run {job.id}: {exc.strerror or exc}"
            ) from None

    def _index(self, job: Job) -> None:
        if job.status in ACTIVE:
            self.waiting[job.id] = job
            self.ended.pop(job.id, None)
        else:
            self.waiting.pop(job.id, None)
            self._mtimes.pop(job.id, None)
            self.ended[job.id] = job.finished_at or job.created_at

    def _save(self, job: Job) -> Job:
        """Index and write `job`; a failed write is an error (the caller is told: a new run is not queued)."""
        self._write(job)
        with self.lock:
            self.unsaved.pop(job.id, None)
            self._index(job)
        return job

    def _change(self, job: Job) -> Job:
        """Index `job` and write it if the disk takes it; if not, it is written by a later loop."""
        with self.lock:
            self._index(job)
            self.unsaved[job.id] = job
        self._flush()
        return job

    def _flush(self) -> None:
        if not self.unsaved:
            return  # whether the folder takes writes is then `_probe`'s to say
        for run_id, job in list(self.unsaved.items()):
            try:
                self._write(job)
            except StoreError as exc:
                self.problem = str(exc)
                return
            if self.unsaved.get(run_id) is job:
                del self.unsaved[run_id]
        self.writable = True

    def _read(self, run_id: str) -> Job | None:
        try:
            job = Job.model_validate_json(self._path(run_id).read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            why = exc.strerror if isinstance(exc, OSError) else "it is not a job record"
            self.damaged[run_id] = f"its job file cannot be read ({why})"
            return None
        self.damaged.pop(run_id, None)
        return job

    def _scan(self) -> None:
        """Read the job files this server has not seen (all of them at start), and those of waiting jobs
        that another server changed: only when the folder changed, and only files whose time moved."""
        try:
            mtime = self.folder.stat().st_mtime_ns
            if mtime == self._folder_mtime:
                return
            entries = [e for e in os.scandir(self.folder) if e.name.endswith(".json")]
        except OSError:
            return
        self._folder_mtime = mtime
        for entry in entries:
            run_id = entry.name[: -len(".json")]
            if run_id in self.ended or run_id in self.running or run_id in self.unsaved:
                continue
            try:
                changed = entry.stat().st_mtime_ns
            except OSError:
                continue
            if self._mtimes.get(run_id) == changed:
                continue
            job = self._read(run_id)
            self._mtimes[run_id] = changed
            if job is not None:
                self._index(job)

    def get(self, run_id: str) -> Job | None:
        if not is_run_id(run_id):
            return None
        with self.lock:
            job = self.unsaved.get(run_id) or self.waiting.get(run_id)
        return job if job is not None else self._read(run_id)

    def active(self) -> list[Job]:
        """The pending and running jobs, oldest first, from the index (no file is read)."""
        with self.lock:
            return sorted(self.waiting.values(), key=lambda j: (j.created_at, j.id))

    # ------------------------------------------------------------------------------------------ requests

    def submit(
        self,
        request: RunRequest,
        golden: str | None,
        golden_sha: str | None,
        owner: str | None = None,
        key_id: str | None = None,
    ) -> tuple[Job, bool]:
        """The run for `request`: a new pending one, or the one already pending or running for the same
        experiment, golden sha256 and overrides (and False for "not new"). `QueueFull` past the limits;
        `StoreError` (`StoreFull` for a full disk) when the job cannot be written: then nothing is queued."""
        key = hashlib.sha256(
            json.dumps([request.model_dump(exclude={"dataset_version"}), golden_sha], sort_keys=True).encode()
        ).hexdigest()
        with self.lock:
            for job in self.waiting.values():
                if job.key == key:
                    return job, False
            self._check_room(owner, key_id)
            job = Job(
                id=new_run_id(), experiment=request.experiment, target=request.target, request=request, golden=golden,
                golden_sha256=golden_sha, key=key, created_at=_now(), owner=owner, key_id=key_id,
            )  # fmt: skip
            return self._save(job), True

    def _check_room(self, owner: str | None, key_id: str | None) -> None:
        limits = self.limits
        if len(self.waiting) >= limits.max_queued:
            raise QueueFull(f"the server has {len(self.waiting)} runs waiting or running, its limit; try again later")
        for who, mine, of in (("you have", owner, "owner"), ("this key has", key_id, "key_id")):
            if mine is None:
                continue
            count = sum(1 for j in self.waiting.values() if getattr(j, of) == mine)
            if count >= limits.max_queued_per_person:
                raise QueueFull(
                    f"{who} {count} runs waiting or running, the limit per person "
                    "(vx-eval serve --max-queued-per-person); wait for one to finish"
                )

    def cancel(self, run_id: str) -> Job | None:
        with self.lock:
            job = self.get(run_id)
            if job is None or job.status not in ACTIVE:
                return job
            if job.status == "pending":
                return self._change(job.model_copy(update={"status": "cancelled", "finished_at": _now()}))
            job = self._change(job.model_copy(update={"cancel": True}))
            process = self.running.get(run_id)
        if process is not None and process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)  # the run's checkpoints stay; its report is never written
        return job

    # ------------------------------------------------------------------------------------------ health

    def health(self) -> Health:
        """What `/healthz` says of the queue (memory only: answered at once however busy the server is)."""
        age = time.monotonic() - self.last_loop
        alive = self.thread.is_alive() and not self.stop.is_set()
        running = sum(1 for p in list(self.running.values()) if p.poll() is None)
        problem = self.problem
        if not alive:
            problem = "the queue's loop is not running"
        elif age > STALE_AFTER_S:
            problem = f"the queue's loop last ran {age:.0f} s ago"
        elif not self.writable:
            problem = problem or f"the jobs folder {self.folder.name} cannot be written"
        ok = alive and age <= STALE_AFTER_S and self.writable
        return Health(
            ok=ok, loop_age_s=round(age, 3), loop_alive=alive, workers=self.workers, running=running,
            pending=sum(1 for j in self.waiting.values() if j.status == "pending"), disk_writable=self.writable,
            problem=None if ok else problem, damaged=dict(list(self.damaged.items())[:20]),
        )  # fmt: skip

    def _probe(self) -> None:
        """Whether the jobs folder takes a write (every few seconds, and after a failed one)."""
        if time.monotonic() - self._probed < PROBE_EVERY_S and self.writable:
            return
        self._probed = time.monotonic()
        probe = self.folder / f".probe.{os.getpid()}.partial"
        try:
            probe.write_bytes(b"ok")
            self.writable = True
        except OSError as exc:
            self.writable = False
            full = full_error(exc, str(self.folder))
            self.problem = str(full) if full else f"the jobs folder cannot be written: {exc.strerror or exc}"
        finally:
            probe.unlink(missing_ok=True)
        if self.writable and not self.unsaved:
            self.problem = None

    # ------------------------------------------------------------------------------------------ retention

    def _retire(self) -> None:
        """Remove the files of finished jobs past `keep_jobs_days`, or past the newest `keep_jobs`."""
        if time.monotonic() - self._retired < RETIRE_EVERY_S:
            return
        self._retired = time.monotonic()
        cutoff = (dt.datetime.now(dt.UTC) - dt.timedelta(days=self.limits.keep_jobs_days)).isoformat()
        newest_first = sorted(self.ended.items(), key=lambda item: item[1], reverse=True)
        gone = [run_id for i, (run_id, when) in enumerate(newest_first) if i >= self.limits.keep_jobs or when < cutoff]
        for run_id in gone:
            if run_id in self.unsaved:
                continue  # not yet written: retired once it is
            for suffix in JOB_FILES:
                (self.folder / f"{run_id}{suffix}").unlink(missing_ok=True)
            del self.ended[run_id]

    # ------------------------------------------------------------------------------------------ workers

    def _loop(self) -> None:
        """Every 0.3 s: reap the finished workers, start waiting jobs, write what is unsaved. Any error is
        kept for `/healthz` and the loop goes on (a dead loop would leave every run waiting for good)."""
        while not self.stop.wait(LOOP_EVERY_S):
            try:
                with self.lock:
                    self._flush()
                    self._scan()
                    self._reap()
                    self._start()
                    self._retire()
                self._probe()
            except Exception as exc:  # a bug or the file system: said by /healthz and on stderr, never fatal
                self.problem = public_text(f"the queue's loop failed: {service_text(exc)}")
                traceback.print_exc()
            self.last_loop = time.monotonic()

    def _argv(self, job: Job) -> list[str]:
        request = job.request
        argv = [sys.executable, "-m", "vx_eval", "run", "--save-to", self.store]
        if job.target is not None:
            argv += ["--target", self.targets[job.target], "--questions", str(request.questions or QUESTIONS)]
        else:
            argv += [str(self.experiments[str(job.experiment)])]
        argv += ["--resume", job.id] if job.resume and self._checkpointed(job) else ["--run-id", job.id]
        argv += ["--progress-file", str(self.folder / f"{job.id}.progress")]
        if job.golden:
            argv += ["--golden", job.golden]
        for m in request.measure_names():
            argv += ["-m", m]
        for k in request.k_values:
            argv += ["-k", str(k)]
        for key in request.only:
            argv += ["--only", key]
        for method in request.skip:
            argv += ["--skip", method]
        return argv

    def _checkpointed(self, job: Job) -> bool:

        return Checkpoints(self.stores, self.store, job.id).manifest() is not None

    def _start(self) -> None:
        waiting = [j for j in self.active() if j.status == "pending"]
        for job in waiting[: max(0, self.workers - len(self.running))]:
            try:
                if not self._claim(job.id):
                    continue  # another server on this folder runs it
            except OSError:
                self.writable = False  # no claim can be written: it waits until the disk takes one
                return
            gone = job.target not in self.targets if job.target is not None else job.experiment not in self.experiments
            if gone:
                reason = f"the {job.request.what.split()[0]} is no longer known to this server"
                self._change(job.model_copy(update={"status": "failed", "reason": reason, "finished_at": _now()}))
                continue
            try:
                log = (self.folder / f"{job.id}.log").open("ab")
            except OSError:
                (self.folder / f"{job.id}.claim").unlink(missing_ok=True)
                self.writable = False
                return
            with log:
                process = subprocess.Popen(
                    self._argv(job), stdout=subprocess.DEVNULL, stderr=log, stdin=subprocess.DEVNULL,
                    preexec_fn=child_setup(os.getpid(), None), env={**os.environ, "COLUMNS": "120"},
                )  # fmt: skip
            self.running[job.id] = process
            self._change(job.model_copy(update={"status": "in_progress", "started_at": _now(), "cancel": False}))

    def _claim(self, run_id: str) -> bool:
        """This server takes the run: a claim file naming its PID, created only where none is, or where the
        server that wrote it is gone."""
        claim = self.folder / f"{run_id}.claim"
        try:
            fd = os.open(claim, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            try:
                owner = int(claim.read_text() or 0)
                os.kill(owner, 0)
                return owner == os.getpid()
            except (ValueError, ProcessLookupError, PermissionError):
                claim.write_text(str(os.getpid()))  # its server is gone: this one takes the run over
                return True
        with os.fdopen(fd, "w") as f:
            f.write(str(os.getpid()))
        return True

    def _reap(self) -> None:
        """Wait for each worker that ended (no zombie is left) and record how its run ended; a running one's
        progress is recorded when it moved."""
        for run_id, process in list(self.running.items()):
            job = self.unsaved.get(run_id) or self.waiting.get(run_id)
            ended = process.poll() is not None
            if job is None:  # its record was removed by hand: the worker is reaped all the same
                if ended:
                    del self.running[run_id]
                continue
            progress = self._progress(job)
            if not ended:
                if progress != job.progress:
                    self._change(job.model_copy(update={"progress": progress}))
                continue
            del self.running[run_id]
            (self.folder / f"{run_id}.claim").unlink(missing_ok=True)
            done = self.stores.exists(join(runs_folder(self.store), run_id, REPORT_NAME))
            if job.cancel:
                status, reason = "cancelled", "cancelled by request; its checkpoints are kept"
            elif process.returncode == 0 and done:
                status, reason = "completed", None
            elif process.returncode == SEARCHES_FAILED and done:  # finished, some searches failed: said
                status, reason = "completed", self._reason(run_id, process.returncode)
            else:
                status, reason = "failed", self._reason(run_id, process.returncode)
            update = {"status": status, "reason": reason, "finished_at": _now(), "progress": progress}
            self._change(job.model_copy(update=update))

    def _progress(self, job: Job) -> Progress:
        try:
            data = json.loads((self.folder / f"{job.id}.progress").read_text(encoding="utf-8"))
        except (FileNotFoundError, ValueError):
            return job.progress
        searching = data.get("stages", {}).get("Searching") or {}
        return Progress(
            stage=data.get("stage"),
            searches_done=int(searching.get("done") or 0),
            searches_total=searching.get("total"),
            setups=data.get("setups"),
            questions=data.get("questions"),
        )

    def _reason(self, run_id: str, code: int | None) -> str:
        try:
            lines = (self.folder / f"{run_id}.log").read_text(encoding="utf-8", errors="replace").splitlines()
        except FileNotFoundError:
            lines = []
        said = [line for line in lines if line.strip().startswith("error:")]
        return public_text((said or lines or [f"the run ended with code {code}"])[-1].strip())[:500]

    def close(self) -> None:
        """Stop starting runs and stop the running ones (they resume when the server starts again)."""
        self.stop.set()
        with self.lock:
            for process in self.running.values():
                if process.poll() is None:
                    os.killpg(process.pid, signal.SIGTERM)
