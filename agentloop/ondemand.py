"""Dataclasses made when first used: `@dataclass(frozen=True)` from here is the standard library's,
applied to the class the first time an instance of it is made (or `made(cls)` asks for it).

Why: the standard library writes and compiles each dataclass's methods when the class statement
runs (`__init__`, `__repr__`, `__eq__`, `__hash__`, and a frozen class's `__setattr__` and
`__delattr__`: six compiles, up to Python 3.12), about a millisecond a class on the machine the
goals were set on. A run imports every event and every decision a lane may hand the controller,
and a plain run makes under half of them (no review, no conflict, no limit to wait for): those
are never built. What is made is the standard library's own dataclass, built once: frozen,
typed (mypy sees `dataclasses.dataclass` itself), equal, hashable and printed as ever.

Its `__repr__`, `__eq__` and `__hash__` are not compiled for it: functions shared by every
class made here do the same (_build); nor, up to Python 3.12, a frozen class's `__setattr__` and
`__delattr__` (_frozen_methods). `dataclass_now` makes a class the same way at its class
statement, as the standard library's decorator does: for the records a run makes before its
first agent anyway (some forty, each some 0.2 ms cheaper), and for classes introspected or
subclassed before an instance is made.

Until it is made a class is a plain class with annotations: `dataclasses.fields()` and
`dataclasses.is_dataclass()` need `made(cls)` first (a module that lists its classes, such as
agentloop.run.events.event_types, does that for its callers). A class made here has no subclass.
"""

from __future__ import annotations

import dataclasses
import signal
import sys
import threading
from typing import TYPE_CHECKING, Any, Callable, TypeVar

T = TypeVar("T")

# The classes made so far: added only once the standard library is done with one, so that a
# thread never takes a class it sees half made (its fields set, its __init__ not yet) as made.
_MADE: set[type] = set()
_MAKING = threading.Lock()
STOPS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def made(cls: type[T]) -> type[T]:
    """`cls` as the dataclass it is declared to be, made now if it was not yet."""
    if cls in _MADE or "__ondemand__" not in cls.__dict__:
        return cls
    with _MAKING:
        if cls not in _MADE:
            options = cls.__dict__["__ondemand__"]
            # A stop (Ctrl+C, SIGTERM: agentloop.__main__) waits until the class is made: one
            # cut short could never be made again (the standard library refuses to write over
            # the methods it already set), and the run's careful stop makes events too.
            # The mask read unchanged first: a stop already pending raises from the call
            # that blocks, and the finally must then still put the mask back.
            before = signal.pthread_sigmask(signal.SIG_BLOCK, ())
            try:
                signal.pthread_sigmask(signal.SIG_BLOCK, STOPS)
                was = dict(cls.__dict__)
                try:
                    _build(cls, options)  # in place: no slots asked for
                except BaseException:
                    # The mask holds a stop back only while no other thread can take the
                    # signal for us: with another running (the records made ahead, a
                    # landing), the stop is raised here all the same. The class goes back as
                    # it was, to be made whole by the next use.
                    _undo(cls, was)
                    raise
                _MADE.add(cls)
            finally:
                signal.pthread_sigmask(signal.SIG_SETMASK, before)
    return cls


def _build(cls: type[T], options: dict[str, Any]) -> type[T]:
    """`cls` made the dataclass `options` ask for, in place. Its `__init__` (and a frozen
    class's `__setattr__` and `__delattr__`) are the standard library's own; its `__repr__`,
    `__eq__` and `__hash__` are the shared functions below, which do what the standard
    library's do (tests/test_ondemand.py holds them to each other) without two or three
    compiles of their own a class: about a third of what making a dataclass costs, for
    methods a run calls on few of its classes. Options those shared functions do not cover
    (order, unsafe_hash, slots, a class of its own __repr__, __eq__ or __hash__) go to the
    standard library whole."""
    repr_, eq = options.get("repr", True), options.get("eq", True)
    # slots: the standard library returns a new class, which only the caller of the
    # decorator (dataclass_now's) can take; one made in place would have none.
    if options.get("order") or options.get("unsafe_hash") or options.get("slots") or \
            not {"__repr__", "__eq__", "__hash__"}.isdisjoint(cls.__dict__):
        return _standard(cls, options)
    _standard(cls, {**options, "repr": False, "eq": False})
    plain: Any = cls
    if repr_:
        plain.__repr__ = _repr
    if eq:
        plain.__eq__ = _eq
        # The standard library's rule for eq without unsafe_hash or a __hash__ of the class's
        # own: frozen, hashed by the compared fields; mutable, unhashable.
        plain.__hash__ = _hash if options.get("frozen", False) else None
    return cls


# The standard library's maker of a frozen class's __setattr__ and __delattr__, where it compiles
# the two (Python 3.10 to 3.12; 3.13 compiles a class's methods at once, with its __init__).
_COMPILED_FROZEN = dataclasses.__dict__.get("_frozen_get_del_attr") \
    if sys.version_info < (3, 13) else None
_LENDING = threading.Lock()


def _standard(cls: type[T], options: dict[str, Any]) -> type[T]:
    """The standard library's dataclass of `cls`; a frozen one's __setattr__ and __delattr__
    are _frozen_methods's, lent to it for the while (another thread's dataclass made meanwhile
    gets them too: they do what its own would)."""
    if _COMPILED_FROZEN is None or not options.get("frozen"):
        return dataclasses.dataclass(**options)(cls)
    stdlib: Any = dataclasses
    with _LENDING:
        try:
            stdlib._frozen_get_del_attr = _frozen_methods
            return dataclasses.dataclass(**options)(cls)
        finally:
            stdlib._frozen_get_del_attr = _COMPILED_FROZEN


def _frozen_methods(cls: type, fields: list[dataclasses.Field[Any]],
                    globals: Any) -> tuple[Callable[..., None], Callable[..., None]]:
    """A frozen class's __setattr__ and __delattr__ as the standard library's
    _frozen_get_del_attr writes them (the same test, the same errors, the same fall-through to
    the next class for a subclass's own attributes), made as closures: nothing compiled."""
    names = frozenset(f.name for f in fields)
    owner: Any = cls

    def __setattr__(self: Any, name: str, value: Any) -> None:
        if type(self) is owner or name in names:
            raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")
        super(owner, self).__setattr__(name, value)

    def __delattr__(self: Any, name: str) -> None:
        if type(self) is owner or name in names:
            raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")
        super(owner, self).__delattr__(name)

    return __setattr__, __delattr__


# Each class's fields for each shared method, found at its first call: (repr, compare, hash).
_NAMES: dict[type, tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]] = {}


def _names(cls: type) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    found = _NAMES.get(cls)
    if found is None:
        found = _NAMES[cls] = (
            tuple(f.name for f in _fields(cls, "__repr__", _repr) if f.repr),
            tuple(f.name for f in _fields(cls, "__eq__", _eq) if f.compare),
            tuple(f.name for f in _fields(cls, "__hash__", _hash)
                  if (f.compare if f.hash is None else f.hash)))
    return found


def _fields(cls: type, method: str, shared: Any) -> tuple[dataclasses.Field[Any], ...]:
    """The fields of the class `cls` has its shared `method` from: a dataclass subclass made
    with eq=False or repr=False keeps its parent's methods, which (the standard library's,
    compiled for the parent) show, compare and hash the parent's fields, not its own too."""
    owner = next((k for k in cls.__mro__ if k.__dict__.get(method) is shared), cls)
    return dataclasses.fields(owner)


# The instances (and threads) whose __repr__ is under way: one inside itself shows `...`.
_SHOWING: set[tuple[int, int]] = set()


def _repr(self: Any) -> str:
    """The standard library's: `Name(field=value!r, ...)`, `...` for itself inside itself."""
    key = id(self), threading.get_ident()
    if key in _SHOWING:
        return "..."
    _SHOWING.add(key)
    try:
        shown = ", ".join([f"{name}={getattr(self, name)!r}" for name in _names(type(self))[0]])
    finally:
        _SHOWING.discard(key)
    return f"{self.__class__.__qualname__}({shown})"


def _eq(self: Any, other: Any) -> Any:
    """The standard library's: the compared fields in order, of an instance of the very same
    class only."""
    if other.__class__ is not self.__class__:
        return NotImplemented
    names = _names(type(self))[1]
    return tuple([getattr(self, n) for n in names]) == tuple([getattr(other, n) for n in names])


def _hash(self: Any) -> int:
    """The standard library's: the hash of the tuple of the hashed fields."""
    return hash(tuple([getattr(self, n) for n in _names(type(self))[2]]))


def _now(cls: type[T] | None = None, /, **options: Any) -> Any:
    """`@dataclass` or `@dataclass(**options)`, made at once as the standard library's is (for
    a class introspected or subclassed before an instance of it is made, or made on the way to
    the first agent anyway), with the shared methods of _build."""
    if cls is not None:
        return _build(cls, options)
    return lambda later: _build(later, options)


def _undo(cls: type, was: dict[str, Any]) -> None:
    """`cls` as it was before a build cut short: what the build added removed, what it
    replaced put back."""
    for name in [n for n in cls.__dict__ if n not in was]:
        delattr(cls, name)
    for name, value in was.items():
        if cls.__dict__.get(name, _undo) is not value:
            setattr(cls, name, value)


def _on_first_use(**options: Any) -> Callable[[type[T]], type[T]]:
    def defer(cls: type[T]) -> type[T]:
        # A __new__ of its own, not an __init__: the standard library keeps an __init__ the
        # class already has, and type() looks __init__ up only after __new__ returned, by
        # which time the real one is there. It stays (a class whose __new__ is deleted again
        # refuses arguments to object.__new__): a set lookup an instance, once made.
        def __new__(klass: type[T], *args: Any, **kwargs: Any) -> T:
            if cls not in _MADE:
                made(cls)
            return object.__new__(klass)

        __new__.__qualname__ = f"{cls.__qualname__}.__new__"
        plain: Any = cls  # a class with attributes of ours, until it is made
        plain.__new__ = staticmethod(__new__)
        plain.__ondemand__ = options
        return cls
    return defer


if TYPE_CHECKING:
    from dataclasses import dataclass as dataclass
    from dataclasses import dataclass as dataclass_now
else:
    dataclass = _on_first_use
    dataclass_now = _now
