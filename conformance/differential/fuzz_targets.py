"""HypoFuzz targets: the differential search as a Hypothesis test (``fuzz.py`` runs them).

Collected only when named explicitly (``hypothesis fuzz -- conformance/differential/fuzz_targets.py``);
the settings come from the environment ``fuzz.main`` sets (``fuzz.ENV``). Outside a fuzz run
(no ``AUTOGRAD_CONFORMANCE_FUZZ_RUN``) the module defines no test.
"""
from __future__ import annotations

import os
from pathlib import Path

from conformance.differential import fuzz

if os.environ.get(fuzz.ENV["run"]):
    from hypothesis import HealthCheck, given, settings

    from conformance.differential.runner import InProcessTarget, make_target
    from conformance.differential.strategies import programs

    ADAPTER = os.environ.get(fuzz.ENV["adapter"], "torch")
    _PER_PROCESS: dict = {}

    def _targets():
        """The reference and the framework of this process: HypoFuzz forks its workers from
        the process that collected this module, and a worker subprocess's pipes must not be
        shared, so each process makes its own."""
        if _PER_PROCESS.get("pid") != os.getpid():
            oracle = InProcessTarget("reference")
            target = make_target(ADAPTER, os.environ.get(fuzz.ENV["python"]),
                                 plant=os.environ.get(fuzz.ENV["plant"]))
            _PER_PROCESS.update(pid=os.getpid(), oracle=oracle, target=target)
        return _PER_PROCESS["oracle"], _PER_PROCESS["target"]

    def _features():
        oracle, target = _targets()
        features = oracle.features & target.features
        target.close()
        _PER_PROCESS.clear()
        return features

    def _recorder() -> fuzz.Recorder:
        if _PER_PROCESS.get("pid") != os.getpid() or "record" not in _PER_PROCESS:
            oracle, target = _targets()
            _PER_PROCESS["record"] = fuzz.Recorder(
                oracle, target,
                Path(os.environ.get(fuzz.ENV["results"]) or fuzz.default_results(ADAPTER)),
                os.environ[fuzz.ENV["run"]])
        return _PER_PROCESS["record"]

    # HypoFuzz fuzzes only tests that use the default database: make the shared one the default.
    # It also skips derandomized tests, and Hypothesis derandomizes by default wherever a CI
    # variable is set (its "ci" profile, the parent of this one): a fuzz run is never derandomized.
    settings.register_profile("autograd-conformance-fuzz", derandomize=False, database=fuzz.database(
        os.environ.get(fuzz.ENV["database"], fuzz.DEFAULT_DATABASE), ADAPTER))
    settings.load_profile("autograd-conformance-fuzz")

    def differential(program):
        """A random program on the reference and the framework; a divergence is recorded."""
        _recorder()(program)

    def _lane():
        return settings(deadline=None, suppress_health_check=[
            HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large,
            HealthCheck.large_base_example])(given(FEATURES)(differential))

    # HypoFuzz gives each of its N processes tests of its own, so one test would keep one
    # process busy: the same search is offered as N tests ("lanes"). They share one inner
    # function, hence one database key (HypoFuzz sets the key's suffix from the node id of the
    # test collected last, which is always test_differential), so all lanes, on every machine,
    # grow and replay one corpus.
    FEATURES = programs(_features(), int(os.environ.get(fuzz.ENV["max_steps"], "16")))
    for _lane_number in range(1, int(os.environ.get(fuzz.ENV["lanes"], "1"))):
        globals()[f"test_differential_lane{_lane_number}"] = _lane()
    test_differential = _lane()
