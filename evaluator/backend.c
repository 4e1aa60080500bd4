/* backend.c — which GPU worker backend runs (backend.h). */
#include "evaluator/backend.h"

const kv_gpu_backend *kv_gpu_backend_pick(void)
{
    return kv_gpu_sim_count() > 0 ? &kv_backend_sim : &kv_backend_local;
}
