"""Helpers for Crucible strategies written in Python.

A strategy is a WebAssembly component built by componentize-py against ``wit/strategy.wit``.
The generated bindings (``wit_world``) define the types; this package adds what every strategy
needs on top of them, in pure Python so it is bundled into the component as is:

* :mod:`crucible_strategy.indicators` - the Rust SDK's indicators, same conventions and results;
* :mod:`crucible_strategy.state` - the state blob carried from tick to tick, as JSON;
* :mod:`crucible_strategy.orders` - order constructors (``buy``, ``sell``, ``sell_all``);
* :mod:`crucible_strategy.model` - ``ask_model``, the agent's language model (world 0.2.0 and
  later). Imported by name (``from crucible_strategy.model import ask_model, ModelError``), not
  here: a project that copied only the other modules keeps working;
* :mod:`crucible_strategy.params` - tunable parameters (world 0.3.0): ``IntParam``,
  ``FloatParam``, ``ChoiceParam`` with ``.spec()`` and ``.get(ctx)``, and ``specs``. Imported by
  name too (``from crucible_strategy.params import IntParam, FloatParam, specs``).

See ``sdk-python/README.md`` for the build workflow.
"""

from . import indicators, orders, state

__all__ = ["indicators", "orders", "state"]
__version__ = "0.3.0"
