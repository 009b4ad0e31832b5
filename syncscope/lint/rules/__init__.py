"""The rule catalogue: one module per code, listed here in code order. Codes are stable forever;
a retired code is never reused."""

from __future__ import annotations

from .base import Rule
from .syn101 import DeviceMaskIndex
from .syn102 import HostMaskWrite
from .syn103 import DeviceMaskTensorWrite
from .syn104 import RepeatInterleaveWithoutOutputSize
from .syn105 import DataDependentShape
from .syn106 import OneHotWithoutNumClasses
from .syn201 import ItemOnDevice
from .syn202 import TolistOnDevice
from .syn203 import BlockingCopyToHost
from .syn204 import NumpyOnDevice
from .syn205 import ScalarConversionOfTensor
from .syn206 import TensorAsCondition
from .syn301 import SyncingPropertyRead
from .syn302 import ConfiguredSyncingCall
from .syn401 import TensorFromHostDataOnDevice
from .syn402 import NewTensorFromHostData
from .syn403 import BlockingCopyToDevice
from .syn404 import ScalarStoreAtIndex
from .syn405 import HostDataSliceStore
from .syn406 import ScalarStoreThroughIndex
from .syn407 import HostIndexGather
from .syn408 import DeviceScalarAsNumber
from .syn501 import DeviceSynchronize
from .syn502 import StreamSynchronize
from .syn503 import EventSynchronize
from .syn601 import HelperSyncsOnArgument
from .syn602 import CallReachesSync

ALL_RULES: list[type[Rule]] = [
    DeviceMaskIndex, HostMaskWrite, DeviceMaskTensorWrite, RepeatInterleaveWithoutOutputSize,
    DataDependentShape, OneHotWithoutNumClasses,
    ItemOnDevice, TolistOnDevice, BlockingCopyToHost, NumpyOnDevice, ScalarConversionOfTensor,
    TensorAsCondition,
    SyncingPropertyRead, ConfiguredSyncingCall,
    TensorFromHostDataOnDevice, NewTensorFromHostData, BlockingCopyToDevice, ScalarStoreAtIndex,
    HostDataSliceStore, ScalarStoreThroughIndex, HostIndexGather, DeviceScalarAsNumber,
    DeviceSynchronize, StreamSynchronize, EventSynchronize,
    HelperSyncsOnArgument, CallReachesSync,
]
RULES_BY_CODE: dict[str, type[Rule]] = {rule.code: rule for rule in ALL_RULES}

from ..catalog import DIAGNOSTICS  # noqa: E402

__all__ = ["ALL_RULES", "DIAGNOSTICS", "RULES_BY_CODE", "Rule"]
