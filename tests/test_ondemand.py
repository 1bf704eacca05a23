"""ondemand.py: a dataclass made on first use is the standard library's frozen dataclass, made
once, however many threads make its first instance at once."""

from __future__ import annotations

import dataclasses
import signal
import subprocess
import sys
import threading
from typing import Any

import pytest

from agentloop.ondemand import dataclass, made


def test_a_class_is_made_by_its_first_instance_and_is_the_dataclass_it_says() -> None:
    @dataclass(frozen=True)
    class Point:
        """A point."""

        x: int
        y: int = 0
        tags: tuple[str, ...] = ()

    assert not dataclasses.is_dataclass(Point)   # nothing compiled at the class statement
    p = Point(1, tags=("a",))
    assert dataclasses.is_dataclass(Point)
    assert p == Point(1, 0, ("a",)) and hash(p) == hash(Point(1, 0, ("a",)))
    assert repr(p).endswith("Point(x=1, y=0, tags=('a',))")
    assert dataclasses.replace(p, y=2).y == 2
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.x = 3  # type: ignore[misc]
    with pytest.raises(TypeError):
        Point()  # type: ignore[call-arg]
    assert [f.name for f in dataclasses.fields(made(Point))] == ["x", "y", "tags"]


def test_threads_making_the_first_instances_at_once_all_get_whole_ones() -> None:
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # threads taking turns inside the making, not after it
    try:
        for _ in range(5):  # a fresh class each round: only its first instances race
            _race_for_a_new_class()
    finally:
        sys.setswitchinterval(interval)


def _race_for_a_new_class() -> None:
    @dataclass(frozen=True)
    class Many:
        """Many fields, so that making it takes a while."""

        a: int
        b: int = 1
        c: int = 2
        d: int = 3
        e: int = 4
        f: int = 5

    start = threading.Barrier(8)
    made_ones: list[Many] = []
    errors: list[Exception] = []

    def make(n: int) -> None:
        start.wait(5)
        try:
            made_ones.append(Many(n, b=n))
        except Exception as exc:  # a half-made class: object.__init__ refusing arguments
            errors.append(exc)

    threads = [threading.Thread(target=make, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert errors == []
    assert sorted((m.a, m.b, m.f) for m in made_ones) == [(n, n, 5) for n in range(8)]


def test_importing_the_events_and_the_decisions_makes_none_of_them() -> None:
    # What a run pays at import: only the classes it uses are made, when it uses them.
    code = ("import dataclasses, typing; from agentloop.run import events, decisions\n"
            "made = [c.__name__ for m in (events, decisions) for c in vars(m).values()\n"
            "        if isinstance(c, type) and c.__module__ == m.__name__\n"
            "        and dataclasses.is_dataclass(c)]\n"
            "print(made)\n"
            "assert all(dataclasses.is_dataclass(c) for c in events.event_types().values())")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_a_ctrl_c_while_a_class_is_made_comes_once_it_is_made(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from agentloop import ondemand

    @dataclass(frozen=True)
    class Late:
        """Made while a Ctrl+C comes."""

        x: int

    real = dataclasses.dataclass

    def interrupted(**options: Any) -> Any:
        # Ctrl+C, in the middle of the making, as the kernel hands it to a run with no other
        # thread: to this one. (os.kill would let any thread of pytest's take it, one an
        # earlier test left running too, and then it is raised here all the same, by design.)
        signal.pthread_kill(threading.get_ident(), signal.SIGINT)
        return real(**options)

    monkeypatch.setattr(ondemand.dataclasses, "dataclass", interrupted)
    with pytest.raises(KeyboardInterrupt):
        made(Late)
    monkeypatch.undo()
    assert dataclasses.is_dataclass(Late) and Late(1).x == 1   # whole, and usable


def test_a_build_cut_short_leaves_the_class_as_it_was_and_the_next_use_makes_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A stop the signal mask could not hold back (another thread took the signal) raised
    halfway through the standard library's build: the next use made nothing but a TypeError
    (it refuses to write over the methods it set already), and the careful stop's events with
    it."""
    @dataclass(frozen=True)
    class Cut:
        a: int
        b: str = "x"

    real = dataclasses._set_new_attribute  # type: ignore[attr-defined]
    calls: list[str] = []

    def cut_after_setattr(cls: type, name: str, value: Any) -> Any:
        # A frozen class's __setattr__ set, its __delattr__ not yet: what the standard library
        # then refuses to write again.
        calls.append(name)
        if name == "__delattr__" and calls.count(name) == 1:
            raise KeyboardInterrupt
        return real(cls, name, value)

    monkeypatch.setattr(dataclasses, "_set_new_attribute", cut_after_setattr)
    with pytest.raises(KeyboardInterrupt):
        made(Cut)
    monkeypatch.setattr(dataclasses, "_set_new_attribute", real)
    assert made(Cut) is Cut and dataclasses.is_dataclass(Cut)
    one = Cut(1)
    assert (one.a, one.b) == (1, "x") and one == Cut(1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        one.a = 2  # type: ignore[misc]


# Twins: each class made by the standard library and by ondemand's builder (dataclass_now, and
# the made-on-first-use dataclass), whose instances must print, compare and hash alike.
def _twins(**options: Any) -> list[type]:
    from agentloop.ondemand import dataclass_now

    made_as = []
    for decorate in (dataclasses.dataclass(**options), dataclass_now(**options),
                     dataclass(**options)):
        class Twin:
            x: int
            y: list[int] = dataclasses.field(default_factory=list, compare=False)
            z: str = dataclasses.field(default="z", repr=False)
            w: Any = dataclasses.field(default=None, hash=False)

        made_as.append(decorate(Twin))
    return made_as


@pytest.mark.parametrize("options", [{}, {"frozen": True}, {"frozen": True, "eq": False},
                                     {"repr": False}, {"frozen": True, "order": True}])
def test_the_shared_methods_print_compare_and_hash_as_the_standard_library_s(
        options: dict[str, Any]) -> None:
    plain, *ours = _twins(**options)

    def seen(cls: type) -> list[Any]:
        a, b, c = cls(1, [1], "a"), cls(1, [2], "b", w=3), cls(2)
        try:
            hashes: Any = [hash(a), hash(b), hash(c)]   # the numbers: tuples of the same values
            if hashes[0] == object.__hash__(a):
                hashes = "by identity"   # no __eq__ made: object's own
        except TypeError as exc:
            hashes = str(exc).replace(cls.__qualname__, "Twin")
        shown = [repr(x).replace(cls.__qualname__, "Twin") if options.get("repr", True)
                 else "own" for x in (a, b, c)]
        sub = type("Sub", (cls,), {})(1, [1], "a")   # the same fields, another class
        return [shown, a == b, a == c, a != c, a == cls(1, [1], "a"), a.__eq__(object()),
                a == sub, sub == a, hashes, cls.__hash__ is None]

    for cls in ours:
        assert seen(cls) == seen(plain), options
    # Options the shared methods leave alone (order) are the standard library's own methods.
    if options.get("order"):
        assert all(cls.__eq__ is not object.__eq__ for cls in ours)


def test_the_shared_repr_shows_an_instance_inside_itself_as_the_standard_library_does() -> None:
    from agentloop.ondemand import dataclass_now

    shown = []
    for decorate in (dataclasses.dataclass, dataclass_now):
        @decorate
        class Node:
            children: list[Any]

        node = Node([])
        node.children.append(node)
        shown.append(repr(node).replace(Node.__qualname__, "Node"))
    assert shown[0] == shown[1] == "Node(children=[...])"


def test_a_class_with_a_method_of_its_own_keeps_it() -> None:
    from agentloop.ondemand import dataclass_now

    @dataclass_now(frozen=True)
    class Named:
        name: str

        def __repr__(self) -> str:
            return f"<{self.name}>"

    assert repr(Named("a")) == "<a>" and Named("a") == Named("a")
    assert hash(Named("a")) == hash(Named("a"))


@pytest.mark.parametrize("options", [{"frozen": True, "eq": False},
                                     {"frozen": True, "eq": False, "repr": False},
                                     {"frozen": True, "repr": False}])
def test_a_subclass_that_keeps_its_parents_methods_shows_compares_and_hashes_its_fields(
        options: dict[str, Any]) -> None:
    # A dataclass subclass made with eq=False (or repr=False) inherits its parent's __eq__,
    # __hash__ (or __repr__): the standard library's compare, hash and show the parent's
    # fields only, and so must the shared ones the parent has from agentloop.ondemand.
    seen = []
    for parent in _twins(frozen=True):
        made(parent)

        class Child(parent):  # type: ignore[valid-type,misc]
            extra: int = 0

        child = dataclasses.dataclass(**options)(Child)
        a, b = child(1, [1], "a", extra=1), child(1, [1], "a", extra=2)
        same_hash: Any = hash(a) == hash(b) if child.__hash__ is not None else "unhashable"
        seen.append((a == b, same_hash, repr(a).replace(child.__qualname__, "Child")))
    assert seen[1] == seen[0] and seen[2] == seen[0], seen


def test_a_class_made_now_with_slots_has_them_as_the_standard_library_s_does() -> None:
    # The standard library makes a new class for slots=True: dataclass_now hands that one on,
    # not the class it was given, made without them (every instance with a __dict__).
    from agentloop.ondemand import dataclass_now

    seen = []
    for decorate in (dataclasses.dataclass(frozen=True, slots=True),
                     dataclass_now(frozen=True, slots=True)):
        @decorate
        class Slotted:
            x: int

        one = Slotted(1)
        seen.append(("__slots__" in Slotted.__dict__, hasattr(one, "__dict__"),
                     one == Slotted(1), hash(one) == hash(Slotted(1))))
    assert seen[1] == seen[0] == (True, False, True, True), seen


def test_a_frozen_class_refuses_changes_as_the_standard_library_s_does() -> None:
    # Its __setattr__ and __delattr__ (not compiled for it: agentloop.ondemand._frozen_methods)
    # refuse a field's change, and every change of an instance of the class itself, with the
    # same errors; a plain subclass's own attributes pass on to object's.
    def seen(cls: type) -> list[Any]:
        made(cls)
        out: list[Any] = []
        sub = type("Sub", (cls,), {})
        for obj in (cls(1), sub(1)):
            for change in (lambda o: setattr(o, "x", 2), lambda o: setattr(o, "new", 2),
                           lambda o: delattr(o, "x"), lambda o: delattr(o, "new"),
                           lambda o: delattr(o, "never")):
                try:
                    change(obj)
                    out.append(("ok", vars(obj).get("new")))
                except (AttributeError, TypeError) as exc:
                    out.append((type(exc).__name__, str(exc).replace(type(obj).__qualname__, "T")))
        out.append(cls.__setattr__.__qualname__.replace(cls.__qualname__, "Twin"))
        out.append(cls.__delattr__.__qualname__.replace(cls.__qualname__, "Twin"))
        return out

    plain, *ours = _twins(frozen=True)
    assert all(seen(cls) == seen(plain) for cls in ours), [seen(c) for c in (plain, *ours)]


COMPILES = """
import sys
from agentloop.ondemand import dataclass_now
seen = []
sys.addaudithook(lambda event, args: seen.append(event) if event == "exec" else None)

@dataclass_now(frozen=True)
class Record:
    a: int
    b: str = "b"

@dataclass_now
class Mutable:
    a: int

print(seen.count("exec"), Record(1), Mutable(2))
"""


@pytest.mark.skipif(sys.version_info >= (3, 13), reason="3.13 compiles a class's methods at once")
def test_a_class_made_here_compiles_nothing() -> None:
    # The standard library compiles a frozen class's __init__, __setattr__ and __delattr__ one
    # by one (Python 3.10 to 3.12), each compile some 0.1 ms of a run's start, for some 40
    # records on the way to the first agent; a mutable class's __init__ too. None is here.
    done = subprocess.run([sys.executable, "-c", COMPILES], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "0 Record(a=1, b='b') Mutable(a=2)", done.stdout


# Calls a class's __init__ may get, (args, kwargs), fitting or not: each in turn.
CALLS = [((1,), {}), ((), {"x": 1}), ((1, [2], "a", 3), {}), ((1,), {"z": "b", "w": 2}),
         ((), {}), ((1, [2], "a", 3, 4), {}), ((1,), {"x": 2}), ((1,), {"v": 2}),
         ((), {"y": [1]}), ((1, 2, 3, 4, 5, 6), {"x": 1}), ((), {"v": 1, "x": 1}),
         ((), {"y": [], "z": "a", "w": 1})]


def _calls(cls: type, calls: list[tuple[tuple[Any, ...], dict[str, Any]]]) -> list[Any]:
    """What each call of `cls` made (its instance's attributes), or said (its TypeError)."""
    made(cls)
    out: list[Any] = []
    for args, kwargs in calls:
        try:
            out.append(sorted(vars(cls(*args, **kwargs)).items()))
        except TypeError as exc:
            out.append(str(exc).replace(cls.__qualname__, "Twin"))
    return out


@pytest.mark.parametrize("options", [{}, {"frozen": True}, {"frozen": True, "eq": False}])
def test_the_init_takes_and_refuses_arguments_as_the_standard_library_s(
        options: dict[str, Any]) -> None:
    plain, *ours = _twins(**options)
    expected = _calls(plain, CALLS)
    assert [_calls(cls, CALLS) for cls in ours] == [expected, expected]
    assert all(cls(1).y is not cls(1).y for cls in ours)   # a new list each time
    assert all(cls.__init__.__qualname__.replace(cls.__qualname__, "Twin") == "Twin.__init__"
               for cls in ours)


def test_the_init_fills_init_false_fields_and_calls_post_init_as_the_standard_library_s(
) -> None:
    from agentloop.ondemand import dataclass_now

    seen = []
    for decorate in (dataclasses.dataclass(frozen=True), dataclass_now(frozen=True),
                     dataclass(frozen=True)):
        class Rich:
            self: int  # a field named as the method's first parameter
            listed: list[int] = dataclasses.field(default_factory=list, init=False)
            kept: str = dataclasses.field(default="k", init=False)
            total: int = 0

            def __post_init__(me) -> None:
                object.__setattr__(me, "total", me.total + me.self)
                me.listed.append(me.total)

        cls = decorate(Rich)
        seen.append(_calls(cls, [((1,), {}), ((), {"self": 2, "total": 3}), ((1, 2), {}),
                                 ((), {"kept": "x", "self": 1}), ((1, 2, 3), {})]))
    assert seen[1] == seen[0] and seen[2] == seen[0], seen


def test_initvar_and_keyword_only_fields_have_the_standard_library_s_init() -> None:
    from agentloop.ondemand import dataclass_now

    seen = []
    for decorate in (dataclasses.dataclass(frozen=True), dataclass_now(frozen=True)):
        class Odd:
            a: int
            b: dataclasses.InitVar[int] = 0
            _: dataclasses.KW_ONLY
            c: int = 1

            def __post_init__(self, b: int) -> None:
                object.__setattr__(self, "a", self.a + b)

        cls = decorate(Odd)
        seen.append(_calls(cls, [((1, 2), {"c": 3}), ((1, 2, 3), {}), ((), {"a": 1})]))
    assert seen[1] == seen[0], seen


def test_a_field_with_no_default_after_one_with_is_refused_as_the_standard_library_does(
) -> None:
    from agentloop.ondemand import dataclass_now

    said = []
    for decorate in (dataclasses.dataclass, dataclass_now):
        with pytest.raises(TypeError) as refused:
            @decorate
            class Bad:
                a: int = 0
                b: int
        said.append(str(refused.value))
    assert said[1] == said[0] == "non-default argument 'b' follows default argument"
