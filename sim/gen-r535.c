/*
 * gen-r535.c — names the driver generation of this variant of the simulated
 * NVML library (R535.43-535.86). The shared sources read sim_generation
 * where behaviour must differ (the r535 `_v3` record size, default versions).
 */
#include "sim.h"

const char sim_generation[] = "r535";
