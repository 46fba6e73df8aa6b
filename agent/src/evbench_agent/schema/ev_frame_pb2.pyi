from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ContactorState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CONTACTOR_STATE_UNSPECIFIED: _ClassVar[ContactorState]
    CONTACTOR_STATE_OPEN: _ClassVar[ContactorState]
    CONTACTOR_STATE_PRECHARGE: _ClassVar[ContactorState]
    CONTACTOR_STATE_CLOSED: _ClassVar[ContactorState]
    CONTACTOR_STATE_WELDED: _ClassVar[ContactorState]

class ChargerMode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CHARGER_MODE_UNSPECIFIED: _ClassVar[ChargerMode]
    CHARGER_MODE_AC: _ClassVar[ChargerMode]
    CHARGER_MODE_DC: _ClassVar[ChargerMode]

class FaultSeverity(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    FAULT_SEVERITY_UNSPECIFIED: _ClassVar[FaultSeverity]
    FAULT_SEVERITY_INFO: _ClassVar[FaultSeverity]
    FAULT_SEVERITY_WARNING: _ClassVar[FaultSeverity]
    FAULT_SEVERITY_CRITICAL: _ClassVar[FaultSeverity]
CONTACTOR_STATE_UNSPECIFIED: ContactorState
CONTACTOR_STATE_OPEN: ContactorState
CONTACTOR_STATE_PRECHARGE: ContactorState
CONTACTOR_STATE_CLOSED: ContactorState
CONTACTOR_STATE_WELDED: ContactorState
CHARGER_MODE_UNSPECIFIED: ChargerMode
CHARGER_MODE_AC: ChargerMode
CHARGER_MODE_DC: ChargerMode
FAULT_SEVERITY_UNSPECIFIED: FaultSeverity
FAULT_SEVERITY_INFO: FaultSeverity
FAULT_SEVERITY_WARNING: FaultSeverity
FAULT_SEVERITY_CRITICAL: FaultSeverity

class Header(_message.Message):
    __slots__ = ("timestamp_ns", "sequence", "vin", "ecu_id")
    TIMESTAMP_NS_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    VIN_FIELD_NUMBER: _ClassVar[int]
    ECU_ID_FIELD_NUMBER: _ClassVar[int]
    timestamp_ns: int
    sequence: int
    vin: str
    ecu_id: int
    def __init__(self, timestamp_ns: _Optional[int] = ..., sequence: _Optional[int] = ..., vin: _Optional[str] = ..., ecu_id: _Optional[int] = ...) -> None: ...

class Bms(_message.Message):
    __slots__ = ("cell_voltages", "cell_temperatures", "soc", "soh", "pack_voltage", "pack_current", "contactor")
    CELL_VOLTAGES_FIELD_NUMBER: _ClassVar[int]
    CELL_TEMPERATURES_FIELD_NUMBER: _ClassVar[int]
    SOC_FIELD_NUMBER: _ClassVar[int]
    SOH_FIELD_NUMBER: _ClassVar[int]
    PACK_VOLTAGE_FIELD_NUMBER: _ClassVar[int]
    PACK_CURRENT_FIELD_NUMBER: _ClassVar[int]
    CONTACTOR_FIELD_NUMBER: _ClassVar[int]
    cell_voltages: _containers.RepeatedScalarFieldContainer[float]
    cell_temperatures: _containers.RepeatedScalarFieldContainer[float]
    soc: float
    soh: float
    pack_voltage: float
    pack_current: float
    contactor: ContactorState
    def __init__(self, cell_voltages: _Optional[_Iterable[float]] = ..., cell_temperatures: _Optional[_Iterable[float]] = ..., soc: _Optional[float] = ..., soh: _Optional[float] = ..., pack_voltage: _Optional[float] = ..., pack_current: _Optional[float] = ..., contactor: _Optional[_Union[ContactorState, str]] = ...) -> None: ...

class Inverter(_message.Message):
    __slots__ = ("motor_rpm", "torque_nm", "phase_current_a", "dc_bus_voltage", "inverter_temp_c", "motor_temp_c")
    MOTOR_RPM_FIELD_NUMBER: _ClassVar[int]
    TORQUE_NM_FIELD_NUMBER: _ClassVar[int]
    PHASE_CURRENT_A_FIELD_NUMBER: _ClassVar[int]
    DC_BUS_VOLTAGE_FIELD_NUMBER: _ClassVar[int]
    INVERTER_TEMP_C_FIELD_NUMBER: _ClassVar[int]
    MOTOR_TEMP_C_FIELD_NUMBER: _ClassVar[int]
    motor_rpm: int
    torque_nm: float
    phase_current_a: float
    dc_bus_voltage: float
    inverter_temp_c: float
    motor_temp_c: float
    def __init__(self, motor_rpm: _Optional[int] = ..., torque_nm: _Optional[float] = ..., phase_current_a: _Optional[float] = ..., dc_bus_voltage: _Optional[float] = ..., inverter_temp_c: _Optional[float] = ..., motor_temp_c: _Optional[float] = ...) -> None: ...

class Dynamics(_message.Message):
    __slots__ = ("speed_kph", "accel_x", "accel_y", "accel_z", "yaw_rate", "steering_angle", "latitude", "longitude")
    SPEED_KPH_FIELD_NUMBER: _ClassVar[int]
    ACCEL_X_FIELD_NUMBER: _ClassVar[int]
    ACCEL_Y_FIELD_NUMBER: _ClassVar[int]
    ACCEL_Z_FIELD_NUMBER: _ClassVar[int]
    YAW_RATE_FIELD_NUMBER: _ClassVar[int]
    STEERING_ANGLE_FIELD_NUMBER: _ClassVar[int]
    LATITUDE_FIELD_NUMBER: _ClassVar[int]
    LONGITUDE_FIELD_NUMBER: _ClassVar[int]
    speed_kph: float
    accel_x: float
    accel_y: float
    accel_z: float
    yaw_rate: float
    steering_angle: float
    latitude: float
    longitude: float
    def __init__(self, speed_kph: _Optional[float] = ..., accel_x: _Optional[float] = ..., accel_y: _Optional[float] = ..., accel_z: _Optional[float] = ..., yaw_rate: _Optional[float] = ..., steering_angle: _Optional[float] = ..., latitude: _Optional[float] = ..., longitude: _Optional[float] = ...) -> None: ...

class Charger(_message.Message):
    __slots__ = ("plugged_in", "mode", "voltage", "current", "power_kw")
    PLUGGED_IN_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    VOLTAGE_FIELD_NUMBER: _ClassVar[int]
    CURRENT_FIELD_NUMBER: _ClassVar[int]
    POWER_KW_FIELD_NUMBER: _ClassVar[int]
    plugged_in: bool
    mode: ChargerMode
    voltage: float
    current: float
    power_kw: float
    def __init__(self, plugged_in: bool = ..., mode: _Optional[_Union[ChargerMode, str]] = ..., voltage: _Optional[float] = ..., current: _Optional[float] = ..., power_kw: _Optional[float] = ...) -> None: ...

class FaultCode(_message.Message):
    __slots__ = ("dtc", "ecu_id", "severity")
    DTC_FIELD_NUMBER: _ClassVar[int]
    ECU_ID_FIELD_NUMBER: _ClassVar[int]
    SEVERITY_FIELD_NUMBER: _ClassVar[int]
    dtc: int
    ecu_id: int
    severity: FaultSeverity
    def __init__(self, dtc: _Optional[int] = ..., ecu_id: _Optional[int] = ..., severity: _Optional[_Union[FaultSeverity, str]] = ...) -> None: ...

class EvFrame(_message.Message):
    __slots__ = ("header", "bms", "inverter", "dynamics", "charger", "faults")
    HEADER_FIELD_NUMBER: _ClassVar[int]
    BMS_FIELD_NUMBER: _ClassVar[int]
    INVERTER_FIELD_NUMBER: _ClassVar[int]
    DYNAMICS_FIELD_NUMBER: _ClassVar[int]
    CHARGER_FIELD_NUMBER: _ClassVar[int]
    FAULTS_FIELD_NUMBER: _ClassVar[int]
    header: Header
    bms: Bms
    inverter: Inverter
    dynamics: Dynamics
    charger: Charger
    faults: _containers.RepeatedCompositeFieldContainer[FaultCode]
    def __init__(self, header: _Optional[_Union[Header, _Mapping]] = ..., bms: _Optional[_Union[Bms, _Mapping]] = ..., inverter: _Optional[_Union[Inverter, _Mapping]] = ..., dynamics: _Optional[_Union[Dynamics, _Mapping]] = ..., charger: _Optional[_Union[Charger, _Mapping]] = ..., faults: _Optional[_Iterable[_Union[FaultCode, _Mapping]]] = ...) -> None: ...
