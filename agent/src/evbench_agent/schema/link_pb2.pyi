from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Optional as _Optional

DESCRIPTOR: _descriptor.FileDescriptor

class Ack(_message.Message):
    __slots__ = ("sequence", "receive_ns")
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    RECEIVE_NS_FIELD_NUMBER: _ClassVar[int]
    sequence: int
    receive_ns: int
    def __init__(self, sequence: _Optional[int] = ..., receive_ns: _Optional[int] = ...) -> None: ...
