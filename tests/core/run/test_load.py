"""How far a run's times can be trusted: other processes' load while timing, and timings that do not repeat."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from vx_eval.core.report.schema import Report, Settings, Timing
from vx_eval.core.run.load import LoadMeter, cpus, loaded, unsteady
from vx_eval.views.format import timing_doubt, timing_note


def test_timings_that_do_not_repeat_are_named_and_steady_ones_are_not():
    steady = [10.0, 11.0, 9.5, 10.2, 10.8, 9.9, 10.1, 10.4, 9.7, 10.0]
    assert unsteady(steady) is None
    assert unsteady([10.0] * 6 + [30.0] * 6) == pytest.approx(3.0)  # the later half took three times as long
    assert unsteady([30.0] * 6 + [10.0] * 6) == pytest.approx(1 / 3)
    assert unsteady([10.0, 40.0, None, 10.0]) is None  # too few to tell
    assert unsteady([10.0] * 5 + [14.0] * 5) is None  # within 1.5x


def test_a_machine_is_loaded_from_a_quarter_of_its_cores_and_half_a_core():
    assert loaded(0.5, 2) and loaded(1.0, 4) and not loaded(0.4, 2) and not loaded(0.9, 4)
    assert not loaded(None, 2)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the kernel's counters are read on Linux")
def test_another_process_burning_a_core_is_seen_as_load():
    meter = LoadMeter.start()
    burner = subprocess.Popen(
        [sys.executable, "-c", "import time\nend = time.time() + 1.5\nwhile time.time() < end: pass"]
    )
    try:
        burner.wait(timeout=30)
    finally:
        burner.kill()
    time.sleep(0.1)
    others = meter.others()
    assert others is not None and others >= 0.5  # at least the burner's core (more if the machine is busy)
    assert cpus() >= 1


def test_the_table_and_the_picks_say_when_times_were_taken_under_load_or_did_not_repeat():
    quiet = Report.model_construct(settings=Settings(timing=Timing(questions_timed=5, questions=5, cores=2)))
    assert timing_note(quiet) is None and timing_doubt(quiet) is None
    busy = Report.model_construct(
        settings=Settings(
            timing=Timing(
                questions_timed=5,
                questions=5,
                cores=2,
                others_cores=1.6,
                loaded=True,
                unsteady={"local.dense.minilm": 2.7},
            )
        )
    )
    note = timing_note(busy)
    assert "taken while other processes kept 1.6 of 2 cores busy" in note
    assert "local.dense.minilm 2.7×" in note
    assert timing_doubt(busy).startswith("the balance and time picks are uncertain: the machine was loaded")
