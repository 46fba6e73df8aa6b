from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Vector3(_message.Message):
    __slots__ = ("x", "y", "z")
    X_FIELD_NUMBER: _ClassVar[int]
    Y_FIELD_NUMBER: _ClassVar[int]
    Z_FIELD_NUMBER: _ClassVar[int]
    x: float
    y: float
    z: float
    def __init__(self, x: _Optional[float] = ..., y: _Optional[float] = ..., z: _Optional[float] = ...) -> None: ...

class BackendDataPacket(_message.Message):
    __slots__ = ("battery", "throttle", "speed", "dpad", "killSwitch", "lightBeam", "indicators", "sideStand", "absIndication", "modeStatus", "motorStatus", "pduState", "chargingState", "eslState", "brakeStatus", "batteryTemp", "chargingCurrent", "chargingVoltage", "gpsLat", "gpsLng", "acc", "gyro", "odometer", "tripA", "regenLevel", "whpkm", "motorTemp", "chargingModeAC", "batteryVoltage", "motorTorque", "errors", "alerts", "pressureFW", "pressureRW", "tempFW", "tempRW", "batteryFW", "batteryRW")
    BATTERY_FIELD_NUMBER: _ClassVar[int]
    THROTTLE_FIELD_NUMBER: _ClassVar[int]
    SPEED_FIELD_NUMBER: _ClassVar[int]
    DPAD_FIELD_NUMBER: _ClassVar[int]
    KILLSWITCH_FIELD_NUMBER: _ClassVar[int]
    LIGHTBEAM_FIELD_NUMBER: _ClassVar[int]
    INDICATORS_FIELD_NUMBER: _ClassVar[int]
    SIDESTAND_FIELD_NUMBER: _ClassVar[int]
    ABSINDICATION_FIELD_NUMBER: _ClassVar[int]
    MODESTATUS_FIELD_NUMBER: _ClassVar[int]
    MOTORSTATUS_FIELD_NUMBER: _ClassVar[int]
    PDUSTATE_FIELD_NUMBER: _ClassVar[int]
    CHARGINGSTATE_FIELD_NUMBER: _ClassVar[int]
    ESLSTATE_FIELD_NUMBER: _ClassVar[int]
    BRAKESTATUS_FIELD_NUMBER: _ClassVar[int]
    BATTERYTEMP_FIELD_NUMBER: _ClassVar[int]
    CHARGINGCURRENT_FIELD_NUMBER: _ClassVar[int]
    CHARGINGVOLTAGE_FIELD_NUMBER: _ClassVar[int]
    GPSLAT_FIELD_NUMBER: _ClassVar[int]
    GPSLNG_FIELD_NUMBER: _ClassVar[int]
    ACC_FIELD_NUMBER: _ClassVar[int]
    GYRO_FIELD_NUMBER: _ClassVar[int]
    ODOMETER_FIELD_NUMBER: _ClassVar[int]
    TRIPA_FIELD_NUMBER: _ClassVar[int]
    REGENLEVEL_FIELD_NUMBER: _ClassVar[int]
    WHPKM_FIELD_NUMBER: _ClassVar[int]
    MOTORTEMP_FIELD_NUMBER: _ClassVar[int]
    CHARGINGMODEAC_FIELD_NUMBER: _ClassVar[int]
    BATTERYVOLTAGE_FIELD_NUMBER: _ClassVar[int]
    MOTORTORQUE_FIELD_NUMBER: _ClassVar[int]
    ERRORS_FIELD_NUMBER: _ClassVar[int]
    ALERTS_FIELD_NUMBER: _ClassVar[int]
    PRESSUREFW_FIELD_NUMBER: _ClassVar[int]
    PRESSURERW_FIELD_NUMBER: _ClassVar[int]
    TEMPFW_FIELD_NUMBER: _ClassVar[int]
    TEMPRW_FIELD_NUMBER: _ClassVar[int]
    BATTERYFW_FIELD_NUMBER: _ClassVar[int]
    BATTERYRW_FIELD_NUMBER: _ClassVar[int]
    battery: float
    throttle: float
    speed: float
    dpad: int
    killSwitch: int
    lightBeam: int
    indicators: int
    sideStand: int
    absIndication: int
    modeStatus: int
    motorStatus: int
    pduState: int
    chargingState: int
    eslState: int
    brakeStatus: int
    batteryTemp: float
    chargingCurrent: float
    chargingVoltage: float
    gpsLat: float
    gpsLng: float
    acc: Vector3
    gyro: Vector3
    odometer: float
    tripA: float
    regenLevel: int
    whpkm: float
    motorTemp: int
    chargingModeAC: int
    batteryVoltage: float
    motorTorque: int
    errors: _containers.RepeatedScalarFieldContainer[int]
    alerts: _containers.RepeatedScalarFieldContainer[int]
    pressureFW: float
    pressureRW: float
    tempFW: float
    tempRW: float
    batteryFW: float
    batteryRW: float
    def __init__(self, battery: _Optional[float] = ..., throttle: _Optional[float] = ..., speed: _Optional[float] = ..., dpad: _Optional[int] = ..., killSwitch: _Optional[int] = ..., lightBeam: _Optional[int] = ..., indicators: _Optional[int] = ..., sideStand: _Optional[int] = ..., absIndication: _Optional[int] = ..., modeStatus: _Optional[int] = ..., motorStatus: _Optional[int] = ..., pduState: _Optional[int] = ..., chargingState: _Optional[int] = ..., eslState: _Optional[int] = ..., brakeStatus: _Optional[int] = ..., batteryTemp: _Optional[float] = ..., chargingCurrent: _Optional[float] = ..., chargingVoltage: _Optional[float] = ..., gpsLat: _Optional[float] = ..., gpsLng: _Optional[float] = ..., acc: _Optional[_Union[Vector3, _Mapping]] = ..., gyro: _Optional[_Union[Vector3, _Mapping]] = ..., odometer: _Optional[float] = ..., tripA: _Optional[float] = ..., regenLevel: _Optional[int] = ..., whpkm: _Optional[float] = ..., motorTemp: _Optional[int] = ..., chargingModeAC: _Optional[int] = ..., batteryVoltage: _Optional[float] = ..., motorTorque: _Optional[int] = ..., errors: _Optional[_Iterable[int]] = ..., alerts: _Optional[_Iterable[int]] = ..., pressureFW: _Optional[float] = ..., pressureRW: _Optional[float] = ..., tempFW: _Optional[float] = ..., tempRW: _Optional[float] = ..., batteryFW: _Optional[float] = ..., batteryRW: _Optional[float] = ...) -> None: ...
