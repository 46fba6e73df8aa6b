"""Names of protobuf's descriptor types, for annotations only (never imported at run time).

A message's DESCRIPTOR, and every descriptor reached from it, is protobuf's
pure-Python class or upb's C one, depending on the runtime's backend; typeshed's
stubs describe both, with the same attributes. Import these under TYPE_CHECKING.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import TypeAlias

    from google._upb import _message as upb
    from google.protobuf import descriptor, descriptor_pool

    Descriptor: TypeAlias = descriptor.Descriptor | upb.Descriptor
    FieldDescriptor: TypeAlias = descriptor.FieldDescriptor | upb.FieldDescriptor
    OneofDescriptor: TypeAlias = descriptor.OneofDescriptor | upb.OneofDescriptor
    DescriptorPool: TypeAlias = descriptor_pool.DescriptorPool | upb.DescriptorPool
