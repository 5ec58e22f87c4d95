"""ycgym: YC-Bench (a startup-CEO benchmark for AI agents) as an exact Gymnasium environment.

The simulation runs in a TypeScript server spoken to over ZeroMQ (protocol v1, ``docs/protocol.md``);
this package is its Python binding:

* :class:`YCBenchEnv` (``gymnasium.make("ycgym/YCBench-v0")``): one session, one command per step.
* :class:`YCBenchVectorEnv` (``gymnasium.make_vec("ycgym/YCBench-v0", num_envs=N)``): N sessions
  stepped in one ``step_batch`` round trip.
* :class:`YCBenchDiscreteEnv` (``gymnasium.make("ycgym/YCBench-Discrete-v0")``): masked integer actions and
  fixed-size numeric observations for RL libraries; :class:`YCBenchDiscreteVectorEnv` batches N of them.
* :class:`ShardedVectorEnv` (``make_vec(..., servers=K)``): one vector env over K local servers stepped
  concurrently (more than one core).
* :class:`Client`: the raw protocol client (pipelining, timeouts, CURVE).
* :class:`LocalServer`: runs ``ycgym serve`` as a child process (used automatically when no endpoint
  is given).
* :mod:`ycgym.arrow`: trajectories as Arrow tables (needs ``pyarrow``).
"""

from __future__ import annotations

import gymnasium

from . import _gym_compat
from ._version import PROTOCOL_VERSION, __version__
from .client import Client, EpisodeOverError, ProtocolError, ServerExitedError, VectorStepError
from .discrete import YCBenchDiscreteEnv
from .discrete_vector import YCBenchDiscreteVectorEnv
from .env import YCBenchEnv
from .episode import EpisodeResult, run_episode
from .server import LocalServer, ServerStartError
from .sharded import ShardedVectorEnv
from .spaces import DOMAINS, UnicodeText
from .vector import YCBenchVectorEnv

__all__ = [
    "PROTOCOL_VERSION",
    "Client",
    "DOMAINS",
    "EpisodeResult",
    "LocalServer",
    "EpisodeOverError",
    "ProtocolError",
    "ServerExitedError",
    "VectorStepError",
    "ServerStartError",
    "UnicodeText",
    "YCBenchEnv",
    "YCBenchVectorEnv",
    "run_episode",
    "YCBenchDiscreteEnv",
    "YCBenchDiscreteVectorEnv",
    "ShardedVectorEnv",
    "ENV_ID",
    "DISCRETE_ENV_ID",
    "__version__",
]

ENV_ID = "ycgym/YCBench-v0"

if ENV_ID not in gymnasium.registry:
    gymnasium.register(
        id=ENV_ID,
        entry_point="ycgym.env:YCBenchEnv",
        vector_entry_point="ycgym.vector:YCBenchVectorEnv",
    )

DISCRETE_ENV_ID = "ycgym/YCBench-Discrete-v0"

if DISCRETE_ENV_ID not in gymnasium.registry:
    gymnasium.register(
        id=DISCRETE_ENV_ID,
        entry_point="ycgym.discrete:YCBenchDiscreteEnv",
        vector_entry_point="ycgym.discrete_vector:YCBenchDiscreteVectorEnv",
    )

# make_vec(..., vector_kwargs={"autoreset_mode": ...}) for the batched vector env (see ycgym._gym_compat).
_gym_compat.install()
