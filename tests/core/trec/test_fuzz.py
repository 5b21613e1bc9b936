"""Every reader, fed hostile bytes (vx_eval.testing.fuzzing), reads them or refuses them with a clear
`VxEvalError`; nothing else escapes. Seeded, with a fixed budget per reader so CI stays fast;
`benchmarks/fuzz.py` runs the same strategies for 10,000+ inputs each."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, seed, settings

from vx_eval.testing.fuzzing import READERS, Reader, handled

BUDGET = 120


@pytest.mark.parametrize("reader", READERS, ids=[r.name for r in READERS])
def test_a_reader_reads_or_refuses_clearly_whatever_it_is_given(reader: Reader):
    @seed(20261201)
    @settings(
        max_examples=BUDGET,
        deadline=None,
        database=None,
        derandomize=False,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
    )
    @given(reader.inputs)
    def check(raw: bytes) -> None:
        escaped = handled(reader.read, raw)
        assert escaped is None, f"{reader.name}: {type(escaped).__name__}: {escaped} for {raw[:200]!r}"

    check()
