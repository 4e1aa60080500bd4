/* compile_int.h — what compile_job.c gives compile.c (internal to evaluator/). */
#ifndef KEVO_EVALUATOR_COMPILE_INT_H
#define KEVO_EVALUATOR_COMPILE_INT_H

#include "evaluator/compile.h"

#include <stdbool.h>

/* In an untrusted job's child, before NVRTC reads anything: the empty working
 * folder dir (NULL or "": none) and, where the kernel has Landlock, reads
 * beneath the job's -I folders only and no writes.  False (the job must fail)
 * when neither could be had. */
bool kevo_compile_confine(const kevo_compile_job *job, const char *dir);

#endif
