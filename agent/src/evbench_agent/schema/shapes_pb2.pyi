from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class OneInt(_message.Message):
    __slots__ = ("value",)
    VALUE_FIELD_NUMBER: _ClassVar[int]
    value: int
    def __init__(self, value: _Optional[int] = ...) -> None: ...

class OneDouble(_message.Message):
    __slots__ = ("value",)
    VALUE_FIELD_NUMBER: _ClassVar[int]
    value: float
    def __init__(self, value: _Optional[float] = ...) -> None: ...

class TenInts(_message.Message):
    __slots__ = ("f1", "f2", "f3", "f4", "f5", "f6", "f7", "f8", "f9", "f10")
    F1_FIELD_NUMBER: _ClassVar[int]
    F2_FIELD_NUMBER: _ClassVar[int]
    F3_FIELD_NUMBER: _ClassVar[int]
    F4_FIELD_NUMBER: _ClassVar[int]
    F5_FIELD_NUMBER: _ClassVar[int]
    F6_FIELD_NUMBER: _ClassVar[int]
    F7_FIELD_NUMBER: _ClassVar[int]
    F8_FIELD_NUMBER: _ClassVar[int]
    F9_FIELD_NUMBER: _ClassVar[int]
    F10_FIELD_NUMBER: _ClassVar[int]
    f1: int
    f2: int
    f3: int
    f4: int
    f5: int
    f6: int
    f7: int
    f8: int
    f9: int
    f10: int
    def __init__(self, f1: _Optional[int] = ..., f2: _Optional[int] = ..., f3: _Optional[int] = ..., f4: _Optional[int] = ..., f5: _Optional[int] = ..., f6: _Optional[int] = ..., f7: _Optional[int] = ..., f8: _Optional[int] = ..., f9: _Optional[int] = ..., f10: _Optional[int] = ...) -> None: ...

class TenDoubles(_message.Message):
    __slots__ = ("f1", "f2", "f3", "f4", "f5", "f6", "f7", "f8", "f9", "f10")
    F1_FIELD_NUMBER: _ClassVar[int]
    F2_FIELD_NUMBER: _ClassVar[int]
    F3_FIELD_NUMBER: _ClassVar[int]
    F4_FIELD_NUMBER: _ClassVar[int]
    F5_FIELD_NUMBER: _ClassVar[int]
    F6_FIELD_NUMBER: _ClassVar[int]
    F7_FIELD_NUMBER: _ClassVar[int]
    F8_FIELD_NUMBER: _ClassVar[int]
    F9_FIELD_NUMBER: _ClassVar[int]
    F10_FIELD_NUMBER: _ClassVar[int]
    f1: float
    f2: float
    f3: float
    f4: float
    f5: float
    f6: float
    f7: float
    f8: float
    f9: float
    f10: float
    def __init__(self, f1: _Optional[float] = ..., f2: _Optional[float] = ..., f3: _Optional[float] = ..., f4: _Optional[float] = ..., f5: _Optional[float] = ..., f6: _Optional[float] = ..., f7: _Optional[float] = ..., f8: _Optional[float] = ..., f9: _Optional[float] = ..., f10: _Optional[float] = ...) -> None: ...

class OneString(_message.Message):
    __slots__ = ("f1",)
    F1_FIELD_NUMBER: _ClassVar[int]
    f1: str
    def __init__(self, f1: _Optional[str] = ...) -> None: ...

class FiveStrings(_message.Message):
    __slots__ = ("f1", "f2", "f3", "f4", "f5")
    F1_FIELD_NUMBER: _ClassVar[int]
    F2_FIELD_NUMBER: _ClassVar[int]
    F3_FIELD_NUMBER: _ClassVar[int]
    F4_FIELD_NUMBER: _ClassVar[int]
    F5_FIELD_NUMBER: _ClassVar[int]
    f1: str
    f2: str
    f3: str
    f4: str
    f5: str
    def __init__(self, f1: _Optional[str] = ..., f2: _Optional[str] = ..., f3: _Optional[str] = ..., f4: _Optional[str] = ..., f5: _Optional[str] = ...) -> None: ...

class TenStrings(_message.Message):
    __slots__ = ("f1", "f2", "f3", "f4", "f5", "f6", "f7", "f8", "f9", "f10")
    F1_FIELD_NUMBER: _ClassVar[int]
    F2_FIELD_NUMBER: _ClassVar[int]
    F3_FIELD_NUMBER: _ClassVar[int]
    F4_FIELD_NUMBER: _ClassVar[int]
    F5_FIELD_NUMBER: _ClassVar[int]
    F6_FIELD_NUMBER: _ClassVar[int]
    F7_FIELD_NUMBER: _ClassVar[int]
    F8_FIELD_NUMBER: _ClassVar[int]
    F9_FIELD_NUMBER: _ClassVar[int]
    F10_FIELD_NUMBER: _ClassVar[int]
    f1: str
    f2: str
    f3: str
    f4: str
    f5: str
    f6: str
    f7: str
    f8: str
    f9: str
    f10: str
    def __init__(self, f1: _Optional[str] = ..., f2: _Optional[str] = ..., f3: _Optional[str] = ..., f4: _Optional[str] = ..., f5: _Optional[str] = ..., f6: _Optional[str] = ..., f7: _Optional[str] = ..., f8: _Optional[str] = ..., f9: _Optional[str] = ..., f10: _Optional[str] = ...) -> None: ...

class LongString(_message.Message):
    __slots__ = ("text",)
    TEXT_FIELD_NUMBER: _ClassVar[int]
    text: str
    def __init__(self, text: _Optional[str] = ...) -> None: ...

class IntList(_message.Message):
    __slots__ = ("values",)
    VALUES_FIELD_NUMBER: _ClassVar[int]
    values: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, values: _Optional[_Iterable[int]] = ...) -> None: ...

class DoubleArray(_message.Message):
    __slots__ = ("values",)
    VALUES_FIELD_NUMBER: _ClassVar[int]
    values: _containers.RepeatedScalarFieldContainer[float]
    def __init__(self, values: _Optional[_Iterable[float]] = ...) -> None: ...

class Named(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class ObjectList(_message.Message):
    __slots__ = ("items",)
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    items: _containers.RepeatedCompositeFieldContainer[Named]
    def __init__(self, items: _Optional[_Iterable[_Union[Named, _Mapping]]] = ...) -> None: ...

class StringMap(_message.Message):
    __slots__ = ("entries",)
    class EntriesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    entries: _containers.ScalarMap[str, str]
    def __init__(self, entries: _Optional[_Mapping[str, str]] = ...) -> None: ...

class SkipFlat(_message.Message):
    __slots__ = ("f1", "f2", "f3", "f4", "f5", "f6", "f7", "f8", "f9", "f10", "f11", "f12", "f13", "f14", "last")
    F1_FIELD_NUMBER: _ClassVar[int]
    F2_FIELD_NUMBER: _ClassVar[int]
    F3_FIELD_NUMBER: _ClassVar[int]
    F4_FIELD_NUMBER: _ClassVar[int]
    F5_FIELD_NUMBER: _ClassVar[int]
    F6_FIELD_NUMBER: _ClassVar[int]
    F7_FIELD_NUMBER: _ClassVar[int]
    F8_FIELD_NUMBER: _ClassVar[int]
    F9_FIELD_NUMBER: _ClassVar[int]
    F10_FIELD_NUMBER: _ClassVar[int]
    F11_FIELD_NUMBER: _ClassVar[int]
    F12_FIELD_NUMBER: _ClassVar[int]
    F13_FIELD_NUMBER: _ClassVar[int]
    F14_FIELD_NUMBER: _ClassVar[int]
    LAST_FIELD_NUMBER: _ClassVar[int]
    f1: str
    f2: str
    f3: str
    f4: str
    f5: str
    f6: str
    f7: str
    f8: str
    f9: str
    f10: str
    f11: str
    f12: str
    f13: str
    f14: str
    last: str
    def __init__(self, f1: _Optional[str] = ..., f2: _Optional[str] = ..., f3: _Optional[str] = ..., f4: _Optional[str] = ..., f5: _Optional[str] = ..., f6: _Optional[str] = ..., f7: _Optional[str] = ..., f8: _Optional[str] = ..., f9: _Optional[str] = ..., f10: _Optional[str] = ..., f11: _Optional[str] = ..., f12: _Optional[str] = ..., f13: _Optional[str] = ..., f14: _Optional[str] = ..., last: _Optional[str] = ...) -> None: ...

class Skipped(_message.Message):
    __slots__ = ("a", "b", "c")
    A_FIELD_NUMBER: _ClassVar[int]
    B_FIELD_NUMBER: _ClassVar[int]
    C_FIELD_NUMBER: _ClassVar[int]
    a: str
    b: str
    c: str
    def __init__(self, a: _Optional[str] = ..., b: _Optional[str] = ..., c: _Optional[str] = ...) -> None: ...

class SkipNested(_message.Message):
    __slots__ = ("s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10", "s11", "s12", "s13", "s14", "last")
    S1_FIELD_NUMBER: _ClassVar[int]
    S2_FIELD_NUMBER: _ClassVar[int]
    S3_FIELD_NUMBER: _ClassVar[int]
    S4_FIELD_NUMBER: _ClassVar[int]
    S5_FIELD_NUMBER: _ClassVar[int]
    S6_FIELD_NUMBER: _ClassVar[int]
    S7_FIELD_NUMBER: _ClassVar[int]
    S8_FIELD_NUMBER: _ClassVar[int]
    S9_FIELD_NUMBER: _ClassVar[int]
    S10_FIELD_NUMBER: _ClassVar[int]
    S11_FIELD_NUMBER: _ClassVar[int]
    S12_FIELD_NUMBER: _ClassVar[int]
    S13_FIELD_NUMBER: _ClassVar[int]
    S14_FIELD_NUMBER: _ClassVar[int]
    LAST_FIELD_NUMBER: _ClassVar[int]
    s1: Skipped
    s2: Skipped
    s3: Skipped
    s4: Skipped
    s5: Skipped
    s6: Skipped
    s7: Skipped
    s8: Skipped
    s9: Skipped
    s10: Skipped
    s11: Skipped
    s12: Skipped
    s13: Skipped
    s14: Skipped
    last: str
    def __init__(self, s1: _Optional[_Union[Skipped, _Mapping]] = ..., s2: _Optional[_Union[Skipped, _Mapping]] = ..., s3: _Optional[_Union[Skipped, _Mapping]] = ..., s4: _Optional[_Union[Skipped, _Mapping]] = ..., s5: _Optional[_Union[Skipped, _Mapping]] = ..., s6: _Optional[_Union[Skipped, _Mapping]] = ..., s7: _Optional[_Union[Skipped, _Mapping]] = ..., s8: _Optional[_Union[Skipped, _Mapping]] = ..., s9: _Optional[_Union[Skipped, _Mapping]] = ..., s10: _Optional[_Union[Skipped, _Mapping]] = ..., s11: _Optional[_Union[Skipped, _Mapping]] = ..., s12: _Optional[_Union[Skipped, _Mapping]] = ..., s13: _Optional[_Union[Skipped, _Mapping]] = ..., s14: _Optional[_Union[Skipped, _Mapping]] = ..., last: _Optional[str] = ...) -> None: ...
