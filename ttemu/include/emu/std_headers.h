// The C++ standard library headers the emulator's kernel API includes, in one header that compiler.py precompiles
// once per compiler and flag set and force-includes ahead of every kernel. They are most of what a kernel build
// parses (~58,000 of a compute kernel's ~65,000 preprocessed lines), and no kernel or define changes them.
// Keep it to standard headers: anything that reads a kernel's defines would make the precompiled copy invalid
// (g++ then falls back to this text and -Winvalid-pch says why).
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cxxabi.h>
#include <deque>
#include <dlfcn.h>
#include <limits>
#include <map>
#include <memory>
#include <queue>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <typeinfo>
#include <unordered_map>
#include <utility>
#include <vector>
