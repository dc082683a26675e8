/*
 * gen-modern.c — names the driver generation of this variant of the simulated
 * NVML library (R550+). The shared sources read sim_generation
 * where behaviour must differ (the r535 `_v3` record size, default versions).
 */
#include "sim.h"

const char sim_generation[] = "modern";
