// Emulator: WAYPOINT markers are no-ops (the hang report names the blocking call instead).
#pragma once
#define WAYPOINT(x) ((void)0)
