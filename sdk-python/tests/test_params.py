"""The parameter handles read the tick's values like the Rust SDK's (default when missing or of
another kind, clamped into range) and declare themselves as the bindings' ``ParamSpec``.

``.get`` needs no bindings; ``.spec()`` is checked against stand-ins with the same names and
shapes as componentize-py 0.25.1 generates for ``crucible:strategy/types@0.3.0``.
"""

import math
import sys
import types
import unittest
from dataclasses import dataclass
from typing import Any, List

from crucible_strategy.params import ChoiceParam, FloatParam, IntParam, specs

FAST = IntParam("fast", "fast EMA period, candles", 3, 30, 9)
BAND = FloatParam("band", "EMA gap to act on, x volatility", 0.0, 2.0, 0.5)
MODE = ChoiceParam("mode", "what a cross means", ["trend", "revert"], "trend")


@dataclass
class IntRange:
    min: int
    max: int


@dataclass
class FloatRange:
    min: float
    max: float


@dataclass
class ParamKind_Int:
    value: IntRange


@dataclass
class ParamKind_Float:
    value: FloatRange


@dataclass
class ParamKind_Choice:
    value: List[str]


@dataclass
class ParamValue_Int:
    value: int


@dataclass
class ParamValue_Float:
    value: float


@dataclass
class ParamValue_Choice:
    value: str


@dataclass
class ParamSpec:
    name: str
    description: str
    kind: Any
    default: Any


@dataclass
class Param:
    name: str
    value: Any


@dataclass
class Ctx:
    """The part of ``types.TickContext`` the handles read."""

    params: List[Param]


def ctx(**values: Any) -> Ctx:
    wrap = {int: ParamValue_Int, float: ParamValue_Float, str: ParamValue_Choice}
    return Ctx([Param(name, wrap[type(v)](v)) for name, v in values.items()])


class Values(unittest.TestCase):
    def test_defaults_without_values(self):
        for empty in (Ctx([]), object(), Ctx(None)):  # no values; a 0.2.0 context has no params
            self.assertEqual(FAST.get(empty), 9)
            self.assertEqual(BAND.get(empty), 0.5)
            self.assertEqual(MODE.get(empty), "trend")

    def test_values_are_read_and_clamped(self):
        c = ctx(fast=12, band=1.25, mode="revert")
        self.assertEqual((FAST.get(c), BAND.get(c), MODE.get(c)), (12, 1.25, "revert"))
        c = ctx(fast=100, band=-3.0)
        self.assertEqual((FAST.get(c), BAND.get(c)), (30, 0.0))
        self.assertIsInstance(FAST.get(c), int)
        self.assertIsInstance(BAND.get(ctx(band=1.0)), float)

    def test_a_value_of_another_kind_or_an_unknown_choice_reads_as_the_default(self):
        c = ctx(fast=4.0, band=1, mode="moon")
        self.assertEqual((FAST.get(c), BAND.get(c), MODE.get(c)), (9, 0.5, "trend"))
        self.assertEqual(BAND.get(ctx(band=math.nan)), 0.5)
        self.assertEqual(BAND.get(ctx(band=math.inf)), 0.5)
        self.assertEqual(FAST.get(Ctx([Param("fast", ParamValue_Int(True))])), 9)

    def test_the_first_value_of_a_name_counts(self):
        c = Ctx([Param("fast", ParamValue_Int(5)), Param("fast", ParamValue_Int(7))])
        self.assertEqual(FAST.get(c), 5)


class Declarations(unittest.TestCase):
    def test_what_the_host_would_refuse_fails_when_declared(self):
        for bad in (
            lambda: IntParam("Fast", "", 1, 10, 5),
            lambda: IntParam("2fast", "", 1, 10, 5),
            lambda: IntParam("fast-ema", "", 1, 10, 5),
            lambda: IntParam("f" * 49, "", 1, 10, 5),
            lambda: IntParam("fast", "x" * 201, 1, 10, 5),
            lambda: IntParam("fast", "", 1, 10, 11),
            lambda: IntParam("fast", "", 10, 1, 5),
            lambda: IntParam("fast", "", 1, 10, 5.0),
            lambda: IntParam("fast", "", False, 10, 5),
            lambda: FloatParam("band", "", 0.0, 1.0, 2.0),
            lambda: FloatParam("band", "", 0.0, math.inf, 0.5),
            lambda: FloatParam("band", "", 0.0, 1.0, "0.5"),
            lambda: ChoiceParam("mode", "", [], "trend"),
            lambda: ChoiceParam("mode", "", "trend", "trend"),
            lambda: ChoiceParam("mode", "", ["trend", "trend"], "trend"),
            lambda: ChoiceParam("mode", "", ["trend", ""], "trend"),
            lambda: ChoiceParam("mode", "", ["trend", "x" * 49], "trend"),
            lambda: ChoiceParam("mode", "", [f"c{i}" for i in range(65)], "c0"),
            lambda: ChoiceParam("mode", "", ["trend", "revert"], "moon"),
        ):
            with self.assertRaises(ValueError):
                bad()

    def test_float_bounds_are_floats(self):
        p = FloatParam("size", "fraction of equity", 0, 1, 1)
        self.assertEqual((p.min, p.max, p.default), (0.0, 1.0, 1.0))
        self.assertIsInstance(p.default, float)
        self.assertEqual(MODE.choices, ("trend", "revert"))


class StubbedTypes(unittest.TestCase):
    """Installs stand-in ``wit_world.imports.types`` bindings for ``.spec()``."""

    def setUp(self):
        binding = types.ModuleType("wit_world.imports.types")
        for item in (IntRange, FloatRange, ParamKind_Int, ParamKind_Float, ParamKind_Choice,
                     ParamValue_Int, ParamValue_Float, ParamValue_Choice, ParamSpec, Param):
            setattr(binding, item.__name__, item)
        imports = types.ModuleType("wit_world.imports")
        imports.types = binding
        world = types.ModuleType("wit_world")
        world.imports = imports
        stubs = {"wit_world": world, "wit_world.imports": imports,
                 "wit_world.imports.types": binding}
        saved = {name: sys.modules.get(name) for name in stubs}
        sys.modules.update(stubs)

        def restore():
            for name, module in saved.items():
                if module is None:
                    sys.modules.pop(name, None)
                else:
                    sys.modules[name] = module

        self.addCleanup(restore)


class Specs(StubbedTypes):
    def test_each_kind_declares_itself(self):
        self.assertEqual(
            FAST.spec(),
            ParamSpec("fast", "fast EMA period, candles", ParamKind_Int(IntRange(3, 30)),
                      ParamValue_Int(9)),
        )
        self.assertEqual(
            BAND.spec(),
            ParamSpec("band", "EMA gap to act on, x volatility",
                      ParamKind_Float(FloatRange(0.0, 2.0)), ParamValue_Float(0.5)),
        )
        self.assertEqual(
            MODE.spec(),
            ParamSpec("mode", "what a cross means", ParamKind_Choice(["trend", "revert"]),
                      ParamValue_Choice("trend")),
        )

    def test_specs_keeps_the_order_and_refuses_a_name_twice(self):
        self.assertEqual([s.name for s in specs([MODE, FAST, BAND])], ["mode", "fast", "band"])
        self.assertEqual(specs([]), [])
        with self.assertRaises(ValueError):
            specs([FAST, IntParam("fast", "again", 1, 5, 2)])
        with self.assertRaises(ValueError):
            specs([IntParam(f"p{i}", "", 0, 1, 0) for i in range(33)])

    def test_a_spec_read_back_as_a_value_is_the_default(self):
        # What the host does: every declared parameter at its default, in declaration order.
        c = Ctx([Param(s.name, s.default) for s in specs([FAST, BAND, MODE])])
        self.assertEqual((FAST.get(c), BAND.get(c), MODE.get(c)), (9, 0.5, "trend"))


if __name__ == "__main__":
    unittest.main()
