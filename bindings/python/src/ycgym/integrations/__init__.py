"""Adapters from ycgym to the RL stacks people already use.

Each submodule imports its framework, so import only the one you installed:

* :mod:`ycgym.integrations.openenv` (extra ``[openenv]``): ycgym served as an OpenEnv environment
  (step env and the paper's turn protocol) plus OpenEnv clients for both.
* :mod:`ycgym.integrations.trl` (extra ``[trl]``): a class for TRL's ``GRPOTrainer(environment_factory=...)``.
* :mod:`ycgym.integrations.verifiers` (extra ``[verifiers]``, taskset id ``ycgym-verifiers``): a verifiers
  taskset and harness running the paper's protocol.

The score they share is :func:`ycgym.integrations.score.funds_multiple`.
"""
