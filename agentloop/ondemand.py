"""Dataclasses made when first used: `@dataclass(frozen=True)` from here is the standard library's,
applied to the class the first time an instance of it is made (or `made(cls)` asks for it).

Why: the standard library writes and compiles each dataclass's methods when the class statement
runs (`__init__`, `__repr__`, `__eq__`, `__hash__`, and a frozen class's `__setattr__` and
`__delattr__`: six compiles, up to Python 3.12), about a millisecond a class on the machine the
goals were set on. A run imports every event and every decision a lane may hand the controller,
and a plain run makes under half of them (no review, no conflict, no limit to wait for): those
are never built. What is made is the standard library's own dataclass, built once: frozen,
typed (mypy sees `dataclasses.dataclass` itself), equal, hashable and printed as ever.

Until it is made a class is a plain class with annotations: `dataclasses.fields()` and
`dataclasses.is_dataclass()` need `made(cls)` first (a module that lists its classes, such as
agentloop.run.events.event_types, does that for its callers). A class made here has no subclass.
"""

from __future__ import annotations

import dataclasses
import signal
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
                    dataclasses.dataclass(**options)(cls)  # in place: no slots asked for
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
else:
    dataclass = _on_first_use
