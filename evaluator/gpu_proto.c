/* gpu_proto.c — what both ends of the GPU worker's pipes share: whole-buffer
 * I/O, the names of the evaluation phases and the steady-timing rule
 * (gpu_proto.h, gpu_types.h). */
#define _POSIX_C_SOURCE 200809L
#include "evaluator/gpu_proto.h"

#include <math.h>

#include "util/util.h"

int gp_write(int fd, const void *p, size_t n)
{
    return kv_write_all(fd, p, n) ? 0 : -1;
}

int gp_read(int fd, void *p, size_t n)
{
    return kv_read_all(fd, p, n) ? 0 : -1;
}

const char *kevo_gpu_phase_name(kevo_gpu_phase p)
{
    static const char *const names[KEVO_GPU_PHASES] = {"load", "fill", "ref", "sum", "run", "cmp", "time", "all"};
    return (unsigned)p < KEVO_GPU_PHASES ? names[p] : "?";
}

bool kevo_gpu_timing_steady(double median_ms, double min_ms)
{
    return isfinite(median_ms) && isfinite(min_ms) && min_ms > 0 && median_ms <= KEVO_GPU_STEADY * min_ms;
}
