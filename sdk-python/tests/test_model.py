"""``ask_model`` builds the request the WIT describes and maps every ``model-error`` case.

The componentize-py bindings exist only inside a build, so these tests install stand-ins with
the same names and shapes as componentize-py 0.25.1 generates for
``crucible:strategy/model`` (the same in 0.2.0 and 0.3.0: ``wit_world.imports.model`` and
``componentize_py_types``).
"""

import sys
import types
import unittest
from dataclasses import dataclass
from enum import Enum
from typing import Any, List, Optional

from crucible_strategy import model as sdk_model
from crucible_strategy.model import Completion, ModelError, ask_model


@dataclass(frozen=True)
class Err(Exception):
    value: Any


class Role(Enum):
    USER = 0
    ASSISTANT = 1


@dataclass
class Message:
    role: Role
    content: str


@dataclass
class Request:
    messages: List[Message]
    max_tokens: int
    temperature: float
    json_schema: Optional[str]


@dataclass
class BindingCompletion:
    text: str
    prompt_tokens: int
    completion_tokens: int
    latency_ms: int


@dataclass
class Refusal:
    status: int
    reason: str


@dataclass
class ModelError_NoEndpoint:
    pass


@dataclass
class ModelError_NoKey:
    pass


@dataclass
class ModelError_BudgetExhausted:
    pass


@dataclass
class ModelError_Timeout:
    pass


@dataclass
class ModelError_Refused:
    value: Refusal


@dataclass
class ModelError_Malformed:
    value: str


class StubbedBindings(unittest.TestCase):
    """Installs the stand-in bindings; ``self.answer`` is what ``complete`` returns or raises,
    ``self.requests`` what it was called with."""

    def setUp(self):
        self.requests = []
        self.answer = BindingCompletion("ok", 10, 2, 150)

        def complete(request):
            self.requests.append(request)
            if isinstance(self.answer, Exception):
                raise self.answer
            return self.answer

        binding = types.ModuleType("wit_world.imports.model")
        for item in (Role, Message, Request, Refusal, ModelError_NoEndpoint, ModelError_NoKey,
                     ModelError_BudgetExhausted, ModelError_Timeout, ModelError_Refused,
                     ModelError_Malformed):
            setattr(binding, item.__name__, item)
        binding.Completion = BindingCompletion
        binding.complete = complete
        imports = types.ModuleType("wit_world.imports")
        imports.model = binding
        world = types.ModuleType("wit_world")
        world.imports = imports
        runtime_types = types.ModuleType("componentize_py_types")
        runtime_types.Err = Err
        stubs = {
            "wit_world": world,
            "wit_world.imports": imports,
            "wit_world.imports.model": binding,
            "componentize_py_types": runtime_types,
        }
        saved = {name: sys.modules.get(name) for name in stubs}
        sys.modules.update(stubs)

        def restore():
            for name, module in saved.items():
                if module is None:
                    sys.modules.pop(name, None)
                else:
                    sys.modules[name] = module

        self.addCleanup(restore)


class Requests(StubbedBindings):
    def test_a_string_is_one_user_turn_with_the_defaults(self):
        answer = ask_model("Buy SOL now?")
        self.assertEqual(answer, Completion("ok", 10, 2, 150))
        (request,) = self.requests
        self.assertEqual(request.messages, [Message(Role.USER, "Buy SOL now?")])
        self.assertEqual((request.max_tokens, request.temperature, request.json_schema),
                         (256, 0.0, None))

    def test_strings_tuples_and_dicts_mix_in_order(self):
        ask_model(
            ["first", ("assistant", "second"), {"role": "user", "content": "third"},
             {"content": "fourth"}],
            max_tokens=32,
            temperature=0.7,
        )
        (request,) = self.requests
        self.assertEqual(
            request.messages,
            [Message(Role.USER, "first"), Message(Role.ASSISTANT, "second"),
             Message(Role.USER, "third"), Message(Role.USER, "fourth")],
        )
        self.assertEqual(request.max_tokens, 32)
        self.assertAlmostEqual(request.temperature, 0.7)
        self.assertIsInstance(request.temperature, float)

    def test_one_tuple_is_one_turn_and_a_tuple_of_strings_is_many(self):
        ask_model(("assistant", "I said so"))
        ask_model(("one", "two"))
        self.assertEqual(self.requests[0].messages, [Message(Role.ASSISTANT, "I said so")])
        self.assertEqual(self.requests[1].messages,
                         [Message(Role.USER, "one"), Message(Role.USER, "two")])

    def test_a_schema_dict_is_sent_as_compact_sorted_json_text(self):
        schema = {"type": "object", "required": ["confirm"],
                  "properties": {"confirm": {"type": "boolean"}}}
        ask_model("confirm?", json_schema=schema)
        ask_model("confirm?", json_schema='{"type": "boolean"}')
        self.assertEqual(
            self.requests[0].json_schema,
            '{"properties":{"confirm":{"type":"boolean"}},"required":["confirm"],"type":"object"}',
        )
        self.assertEqual(self.requests[1].json_schema, '{"type": "boolean"}')

    def test_arguments_the_host_would_refuse_fail_before_the_call(self):
        for bad in (
            lambda: ask_model([]),
            lambda: ask_model([("system", "be terse")]),
            lambda: ask_model([{"role": "tool", "content": "x"}]),
            lambda: ask_model([42]),
            lambda: ask_model([("user", 42)]),
            lambda: ask_model("x", max_tokens=0),
            lambda: ask_model("x", max_tokens=2**32),
            lambda: ask_model("x", max_tokens=True),
            lambda: ask_model("x", json_schema=["not", "a", "schema"]),
        ):
            with self.assertRaises(ValueError):
                bad()
        self.assertEqual(self.requests, [], "nothing reached the host")

    def test_the_answer_reads_as_json(self):
        self.answer = BindingCompletion('{"confirm": true, "reason": "trend"}', 50, 9, 800)
        self.assertEqual(ask_model("?").json(), {"confirm": True, "reason": "trend"})
        self.answer = BindingCompletion("Sure! Buy.", 50, 3, 700)
        with self.assertRaises(ModelError) as caught:
            ask_model("?").json()
        self.assertEqual(caught.exception.kind, "malformed")


class Errors(StubbedBindings):
    def kind_of(self, error_value):
        self.answer = Err(error_value)
        with self.assertRaises(ModelError) as caught:
            ask_model("?")
        return caught.exception

    def test_every_case_of_the_variant_has_its_kind(self):
        for value, kind in (
            (ModelError_NoEndpoint(), "no-endpoint"),
            (ModelError_NoKey(), "no-key"),
            (ModelError_BudgetExhausted(), "budget-exhausted"),
            (ModelError_Timeout(), "timeout"),
        ):
            error = self.kind_of(value)
            self.assertEqual((error.kind, error.status, error.reason), (kind, None, None))
            self.assertEqual(str(error), kind)

    def test_refused_keeps_status_and_reason(self):
        error = self.kind_of(ModelError_Refused(Refusal(429, "rate limited")))
        self.assertEqual((error.kind, error.status, error.reason), ("refused", 429, "rate limited"))
        self.assertEqual(str(error), "refused: 429: rate limited")

    def test_malformed_keeps_its_reason(self):
        error = self.kind_of(ModelError_Malformed("no choices"))
        self.assertEqual((error.kind, error.status, error.reason), ("malformed", None, "no choices"))

    def test_the_kinds_are_the_wits(self):
        self.assertEqual(sdk_model.KINDS, ("no-endpoint", "no-key", "budget-exhausted", "timeout",
                                           "refused", "malformed"))
        with self.assertRaises(ValueError):
            ModelError("offline")


class WithoutTheModelImport(unittest.TestCase):
    def test_bindings_built_against_0_1_0_say_so(self):
        world = types.ModuleType("wit_world")
        imports = types.ModuleType("wit_world.imports")
        world.imports = imports
        runtime_types = types.ModuleType("componentize_py_types")
        runtime_types.Err = Err
        stubs = {"wit_world": world, "wit_world.imports": imports,
                 "componentize_py_types": runtime_types}
        saved = {name: sys.modules.get(name) for name in (*stubs, "wit_world.imports.model")}
        sys.modules.pop("wit_world.imports.model", None)
        sys.modules.update(stubs)
        try:
            with self.assertRaises(ImportError) as caught:
                ask_model("?")
        finally:
            for name, module in saved.items():
                if module is None:
                    sys.modules.pop(name, None)
                else:
                    sys.modules[name] = module
        self.assertIn("crucible:strategy@0.3.0", str(caught.exception))
        self.assertNotIsInstance(caught.exception, ModelError)


if __name__ == "__main__":
    unittest.main()
