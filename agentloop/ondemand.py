"""Dataclasses made when first used: `@dataclass(frozen=True)` from here is the standard library's,
applied to the class the first time an instance of it is made (or `made(cls)` asks for it).

Why: the standard library writes and compiles each dataclass's methods when the class statement
runs (`__init__`, `__repr__`, `__eq__`, `__hash__`, and a frozen class's `__setattr__` and
`__delattr__`: six compiles, up to Python 3.12), about a millisecond a class on the machine the
goals were set on. A run imports every event and every decision a lane may hand the controller,
and a plain run makes under half of them (no review, no conflict, no limit to wait for): those
are never built. What is made is the standard library's own dataclass, built once: frozen,
typed (mypy sees `dataclasses.dataclass` itself), equal, hashable and printed as ever.

None of its methods is compiled for it: its `__repr__`, `__eq__` and `__hash__` are functions
shared by every class made here, its `__init__` a closure over its fields (_build, _init), and,
up to Python 3.12, a frozen class's `__setattr__` and `__delattr__` closures too
(_frozen_methods). `dataclass_now` makes a class the same way at its class statement, as the
standard library's decorator does: for the records a run makes before its first agent anyway
(some forty, each some 0.3 ms cheaper), for the run's options (agentloop.options), and for
classes introspected or subclassed before an instance is made. A class with no docstring of its
own has one the standard library writes from its `__init__`'s signature: here `(*args,
**kwargs)`, the one thing that reads otherwise.

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
    """`cls` made the dataclass `options` ask for, in place. Its `__repr__`, `__eq__` and
    `__hash__` are the shared functions below, its `__init__` a closure over its fields (_init),
    and a frozen class's `__setattr__` and `__delattr__` closures too (_frozen_methods): they do
    what the standard library's do (tests/test_ondemand.py holds them to each other) without
    the compile the standard library makes of each, for each class, which was most of what
    making one cost. Options they do not cover (order, unsafe_hash, slots, keyword-only or
    InitVar fields, a class of its own __repr__, __eq__ or __hash__) go to the standard
    library whole."""
    repr_, eq = options.get("repr", True), options.get("eq", True)
    # slots: the standard library returns a new class, which only the caller of the
    # decorator (dataclass_now's) can take; one made in place would have none.
    if options.get("order") or options.get("unsafe_hash") or options.get("slots") or \
            not {"__repr__", "__eq__", "__hash__"}.isdisjoint(cls.__dict__):
        return _standard(cls, options)
    shared: dict[str, Any] = {"repr": False, "eq": False}
    own_init = options.get("init", True) and not options.get("kw_only") and \
        "__init__" not in cls.__dict__
    if own_init:
        shared["init"] = False
        was = dict(cls.__dict__)
    _standard(cls, {**options, **shared})
    plain: Any = cls
    if own_init:
        init = _init(cls)
        if init is None:  # a field _init does not cover: the standard library's __init__
            _undo(cls, was)
            del shared["init"]
            _standard(cls, {**options, **shared})
        else:
            plain.__init__ = init
    if repr_:
        plain.__repr__ = _repr
    if eq:
        plain.__eq__ = _eq
        # The standard library's rule for eq without unsafe_hash or a __hash__ of the class's
        # own: frozen, hashed by the compared fields; mutable, unhashable.
        plain.__hash__ = _hash if options.get("frozen", False) else None
    return cls


# A field given no value yet; the kind of the fields an InitVar makes (the standard library's
# own marker: a Python without it gives no class _init's __init__).
_ABSENT = object()
_INITVAR = getattr(dataclasses, "_FIELD_INITVAR", None)


def _init(cls: type) -> Callable[..., None] | None:
    """The standard library's `__init__` of the dataclass `cls`, made as a closure: nothing
    compiled. Each field that is a parameter (init=True) is taken by position or by name, in
    the order of the fields, else it is its default or a new value of its default factory;
    an init=False field's factory is called too; then the class's __post_init__, if it has
    one. Arguments that do not fit raise the standard library's TypeError, in the same words.
    None for a class with an InitVar or a keyword-only field."""
    declared = cls.__dict__["__dataclass_fields__"].values()
    if _INITVAR is None or any(f._field_type is _INITVAR or f.kw_only is True for f in declared):
        return None
    fields = dataclasses.fields(cls)
    params = tuple(f.name for f in fields if f.init)
    optional = {f.name for f in fields if f.init and (
        f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING)}
    for at, name in enumerate(params):  # the standard library's check at the class statement
        if name not in optional and optional.intersection(params[:at]):
            raise TypeError(f"non-default argument {name!r} follows default argument")
    required = frozenset(params) - optional
    accepted = frozenset(params)
    steps = tuple((f.name, f.default, None if f.default_factory is dataclasses.MISSING
                   else f.default_factory) for f in fields
                  if f.init or f.default_factory is not dataclasses.MISSING)
    assign = object.__setattr__ if cls.__dict__["__dataclass_params__"].frozen else setattr
    post_init = hasattr(cls, "__post_init__")
    qualname = f"{cls.__qualname__}.__init__"

    def __init__(self: Any, /, *args: Any, **kwargs: Any) -> None:
        if args or not accepted.issuperset(kwargs):
            _bind(qualname, params, len(optional), args, kwargs)
        if not required.issubset(kwargs):
            _missing(qualname, [p for p in params if p in required and p not in kwargs])
        for name, default, factory in steps:
            value = kwargs.get(name, _ABSENT)
            if value is _ABSENT:
                value = default if factory is None else factory()
            assign(self, name, value)
        if post_init:
            self.__post_init__()

    __init__.__qualname__ = qualname
    return __init__


def _bind(qualname: str, params: tuple[str, ...], defaults: int, args: tuple[Any, ...],
          kwargs: dict[str, Any]) -> None:
    """`args` put in `kwargs` by name; Python's own TypeError, in its words and in its order,
    for a name that is no parameter, a parameter given twice or too many arguments."""
    for name in kwargs:
        if name not in params:
            raise TypeError(f"{qualname}() got an unexpected keyword argument '{name}'")
        if name in params[:len(args)]:
            raise TypeError(f"{qualname}() got multiple values for argument '{name}'")
    if len(args) > len(params):
        most = len(params) + 1  # self counts
        takes = f"from {most - defaults} to {most}" if defaults else str(most)
        plural = "s" if defaults or most != 1 else ""
        raise TypeError(f"{qualname}() takes {takes} positional argument{plural} but "
                        f"{len(args) + 1} were given")
    kwargs.update(zip(params, args))


def _missing(qualname: str, names: list[str]) -> None:
    """Python's own TypeError for required parameters not given."""
    quoted = [f"'{name}'" for name in names]
    listed = quoted[0] if len(quoted) == 1 else " and ".join(quoted) if len(quoted) == 2 \
        else ", ".join(quoted[:-1]) + ", and " + quoted[-1]
    plural = "s" if len(names) > 1 else ""
    raise TypeError(f"{qualname}() missing {len(names)} required positional argument{plural}: "
                    f"{listed}")


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
