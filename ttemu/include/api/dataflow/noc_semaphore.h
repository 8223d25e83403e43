// Emulator implementation of api/dataflow/noc_semaphore.h: a compatibility include of api/semaphore.h (as the wheel).
#pragma once

#include "api/semaphore.h"
