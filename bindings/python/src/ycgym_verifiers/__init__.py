"""The verifiers plugin module of ycgym (taskset, harness and env id ``ycgym-verifiers``).

verifiers imports a taskset id as a top-level module and takes its ``Taskset``, ``Harness`` and ``Env``
subclasses from ``__all__``; the implementation is :mod:`ycgym.integrations.verifiers`.
"""

from ycgym.integrations.verifiers import YCBenchEnv, YCBenchHarness, YCBenchTaskset

__all__ = ["YCBenchTaskset", "YCBenchHarness", "YCBenchEnv"]
