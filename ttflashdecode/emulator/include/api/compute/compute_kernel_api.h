// Emulator implementation of api/compute/compute_kernel_api.h: the umbrella of the compute API.
#pragma once

#include <cstdint>

#include "api/compute/common.h"
