// Emulator: the device profiler's zone markers are no-ops.
#pragma once
#define DeviceZoneScopedN(name)
#define DeviceZoneScopedMainN(name)
#define DeviceZoneScopedMainChildN(name)
#define DeviceTimestampedData(name, data)
#define DeviceRecordEvent(id)
