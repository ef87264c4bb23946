"""A Python guest that probes the sandbox's WASI, for the host's tests.

What it does is chosen by the agent's personality:
- ``clock``: logs wall time, monotonic time and random numbers (they must be the tick's time
  and seeded from the agent and the tick, so two runs log the same lines);
- ``file``: opens a file; ``socket``: opens a TCP connection; ``env``: reads the environment;
- ``quiet``: returns no orders;
- no personality (the upload's dry tick): raises, so an upload of the probe is refused.
"""

import os
import random
import time

import wit_world
from wit_world.imports import host, types


class WitWorld(wit_world.WitWorld):
    def on_tick(self, ctx: types.TickContext) -> types.TickOutput:
        probe = ctx.config.personality
        if probe == "clock":
            host.log(host.Level.INFO, f"time {time.time():.3f}")
            host.log(host.Level.INFO, f"monotonic {time.monotonic_ns() > 0}")
            host.log(host.Level.INFO, f"random {random.random():.12f} {os.urandom(8).hex()}")
        elif probe == "file":
            with open("/etc/passwd") as f:
                host.log(host.Level.INFO, f.read(20))
        elif probe == "socket":
            import socket

            socket.create_connection(("127.0.0.1", 80), timeout=1)
        elif probe == "env":
            host.log(host.Level.INFO, f"env {sorted(os.environ)}")
        elif probe == "":
            raise RuntimeError("the probe needs a personality; it fails on purpose without one")
        return types.TickOutput(orders=[], state=b"")
