"""One error tree: what a caller can get from admit derives from :mod:`admit.errors`.

The walk reads every module under ``src/admit`` (its syntax tree, nothing is imported) and refuses a ``raise`` of a
bare builtin exception unless a rule below says why a caller never sees it. A new ``raise ValueError(...)`` fails
here with the place: raise :class:`~admit.errors.InvalidValue`, :class:`~admit.errors.InputError` (or another class
of the tree, each of which also derives from the builtin it replaces) instead, or add the place to ``ALLOWED`` with
the reason.
"""

from __future__ import annotations

import ast
import builtins
import functools
from pathlib import Path

import pytest

import admit.errors as errors

SRC = Path(__file__).resolve().parents[2] / "src" / "admit"

BUILTIN_ERRORS = {
    name
    for name in dir(builtins)
    if isinstance(getattr(builtins, name), type) and issubclass(getattr(builtins, name), BaseException)
}

# protocols a caller is meant to meet as the builtin: Python's own contracts
PROTOCOL = {
    "NotImplementedError": "an abstract method a subclass (a store, a pruner, a contract test) must define",
}
# (module under src/admit, function's qualified name, exception): why a caller never sees it as a bare builtin
ALLOWED = {
    ("__init__.py", "__getattr__", "AttributeError"): "a module __getattr__ must raise AttributeError (PEP 562)",
    ("backends/embedders/__init__.py", "__getattr__", "AttributeError"): "a module __getattr__ (PEP 562)",
    ("backends/tokenizers/openai.py", "_bindings", "ImportError"): "caught by _load, which falls back to the package",
    ("cli/_common.py", "stdout_console._PipeConsole.on_broken_pipe", "SystemExit"): "a closed pipe ends the CLI at 0",
    (
        "schema.py",
        "finite_score",
        "ValueError",
    ): "a pydantic validator (Annotated): pydantic's contract is a ValueError, which it raises as a ValidationError",
    ("service/errors.py", "answer_for", "AssertionError"): "internal invariant: AdmitError is the table's last row",
    ("service/procs.py", "ProcessPool._on_answer", "EOFError"): "internal: the pool reads it as a dead worker",
    ("service/worker.py", "_recv_exact", "EOFError"): "internal: the worker loop ends on it",
}
VALIDATOR_DECORATORS = {"field_validator", "model_validator"}


def _is_validator(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    for dec in fn.decorator_list:
        target = dec.func if isinstance(dec, ast.Call) else dec
        name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
        if name in VALIDATOR_DECORATORS:
            return True
    return False


class _Walk(ast.NodeVisitor):
    """Collects the raises of builtin exceptions in one module, with the function they stand in."""

    def __init__(self, rel: str) -> None:
        self.rel = rel
        self.stack: list[str] = []
        self.validator: list[bool] = []
        self.found: list[tuple[str, str, str, int]] = []

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.stack.append(node.name)
        self.generic_visit(node)
        self.stack.pop()

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.stack.append(node.name)
        self.validator.append(_is_validator(node))
        self.generic_visit(node)
        self.validator.pop()
        self.stack.pop()

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Raise(self, node: ast.Raise) -> None:
        exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
        if not isinstance(exc, ast.Name) or exc.id not in BUILTIN_ERRORS:
            return
        if exc.id == "ValueError" and any(self.validator):  # pydantic's validator protocol
            return
        self.found.append((self.rel, ".".join(self.stack), exc.id, node.lineno))


@functools.cache
def bare_raises(root: Path = SRC) -> tuple[tuple[str, str, str, int], ...]:
    """Every ``raise`` of a builtin exception under ``root``: (module, function, exception, line); read once a
    tree (the tests below share one walk of ``src``)."""
    found: list[tuple[str, str, str, int]] = []
    for path in sorted(root.rglob("*.py")):
        walk = _Walk(path.relative_to(root).as_posix())
        walk.visit(ast.parse(path.read_text(encoding="utf-8")))
        found.extend(walk.found)
    return tuple(found)


def test_no_bare_builtin_raise_outside_the_allow_list() -> None:
    refused = [
        f"src/admit/{rel}:{line} {fn}: raise {exc}"
        for rel, fn, exc, line in bare_raises()
        if exc not in PROTOCOL and (rel, fn, exc) not in ALLOWED
    ]
    assert not refused, "raise a class of admit.errors (or allow-list with a reason):\n" + "\n".join(refused)


def test_the_allow_list_names_only_places_that_still_raise() -> None:
    present = {(rel, fn, exc) for rel, fn, exc, _ in bare_raises()}
    stale = sorted(set(ALLOWED) - present)
    assert not stale, f"allow-list entries with no such raise left: {stale}"


def test_the_walk_sees_a_bare_raise(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(
        "from pydantic import field_validator\n"
        "class A:\n"
        "    def f(self):\n"
        "        raise ValueError('x')\n"
        "    @field_validator('x')\n"
        "    def v(cls, x):\n"
        "        raise ValueError('pydantic wraps this')\n"
        "def g():\n"
        "    raise RuntimeError\n"
    )
    assert [(fn, exc) for _, fn, exc, _ in bare_raises(tmp_path)] == [("A.f", "ValueError"), ("g", "RuntimeError")]


@pytest.mark.parametrize(
    ("cls", "builtin"),
    [
        (errors.InvalidValue, ValueError),
        (errors.InvalidType, TypeError),
        (errors.InputError, ValueError),
        (errors.ModelFileError, ValueError),
        (errors.MissingExtraError, ImportError),
        (errors.BackendOutputError, ValueError),
    ],
)
def test_each_class_also_is_the_builtin_it_replaced(cls: type[Exception], builtin: type[Exception]) -> None:
    assert issubclass(cls, errors.AdmitError) and issubclass(cls, builtin)


def test_a_caller_mistake_is_a_config_error_and_still_a_value_error() -> None:
    from admit._lru import LRU
    from admit.backends.embedders import resolve_embedder
    from admit.backends.embedders.minilm import MiniLMEmbedder
    from admit.prune.setwise_model import SetwiseModel

    with pytest.raises(errors.ConfigError, match="threads"):
        MiniLMEmbedder(threads=0)
    with pytest.raises(ValueError, match="maxsize"):
        LRU(-1)
    with pytest.raises(errors.InvalidType):
        resolve_embedder(3.5)  # type: ignore[arg-type]
    with pytest.raises(errors.ModelFileError, match="version"):
        SetwiseModel.from_json({"version": -1})


def test_a_bare_value_error_is_left_only_where_pydantic_asks_for_it() -> None:
    """``ValueError``, ``TypeError`` and ``RuntimeError`` are raised bare only by pydantic validators (its protocol:
    pydantic raises them as a ``ValidationError``); the value checks of prune settings, the evaluation cache and the
    JSON reader raise :class:`~admit.errors.InvalidValue`."""
    from admit.eval.cache import EvalCache
    from admit.prune import checks

    bare = {(rel, fn) for rel, fn, exc, _ in bare_raises() if exc in ("ValueError", "TypeError", "RuntimeError")}
    assert bare == {("schema.py", "finite_score")}
    for check, value in ((checks.int_at_least(0), -1), (checks.int_between(1, 3), 9), (checks.number, "x")):
        with pytest.raises(errors.InvalidValue):
            check(value)
    for check, value in ((checks.boolean, "maybe"), (checks.one_of("a", "b"), "c")):
        with pytest.raises(errors.InvalidValue):
            check(value)
    cache = EvalCache(None)
    try:
        with pytest.raises(errors.InvalidValue, match="no cache table"):
            cache.get_many("nope", ["k"])
    finally:
        cache.close()
