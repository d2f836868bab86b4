"""Every registered paper declares its METRICS (icml26.harness.metrics), and its claims and
substrate gates read only declared names; the runner checks the writes in every run."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import pytest

from icml26.harness.metrics import metric_schema
from icml26.harness.registry import implemented_papers
from icml26.harness.runner import build_config


class _Probe(Mapping):
    """Metrics that hold every declared arm and metric (3 distinct seeds), as a real run's can at
    most: records each read, of any name. Membership (``name in m``) is the declaration."""

    VALUES = [0.5, 0.625, 0.75]

    def __init__(self, schema) -> None:
        self.read: set[tuple[str, str]] = set()
        self.schema = schema

    def __getitem__(self, arm: str) -> _ProbeArm:
        return _ProbeArm(arm, self.read, self.schema)

    def __contains__(self, arm: object) -> bool:
        return isinstance(arm, str) and self.schema.arm_declared(arm)

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0


class _ProbeArm(Mapping):
    def __init__(self, arm: str, read: set[tuple[str, str]], schema) -> None:
        self._arm, self._read, self._schema = arm, read, schema

    def __getitem__(self, name: str) -> list[float]:
        self._read.add((self._arm, name))
        return list(_Probe.VALUES)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self._schema.declares(self._arm, name)

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0


PAPERS = [p.slug for p in implemented_papers()]


@pytest.mark.parametrize("slug", PAPERS)
def test_every_metric_a_claim_or_gate_reads_is_declared(slug):
    """Each claim's rule, control, beyond and positive control and each substrate gate run on
    metrics that contain every name; what they read must be in the paper's METRICS."""
    experiment = next(p for p in implemented_papers() if p.slug == slug).experiment()
    schema = metric_schema(experiment)
    assert schema is not None, f"{slug} declares no METRICS next to its CLAIMS"
    config = build_config(experiment, "quick", None, None)
    probe = _Probe(schema)
    for claim in experiment.CLAIMS:
        for rule in (claim.decide, claim.control, claim.beyond, claim.positive):
            if rule is None:
                continue
            try:
                rule(probe, config)
            except Exception:  # noqa: BLE001 - probe values may upset arithmetic; reads count
                pass
    for gate in getattr(experiment, "SUBSTRATE", ()):
        if gate.value is None:
            probe.read.add((gate.arm, gate.metric))
        else:
            try:
                gate.value(probe, config)
            except Exception:  # noqa: BLE001
                pass
    undeclared = sorted(f"{a}/{n}" for a, n in probe.read if not schema.declares(a, n))
    assert not undeclared, f"{slug}: rules or gates read undeclared metrics {undeclared[:10]}"
    assert probe.read, f"{slug}: the probe saw no read at all"


