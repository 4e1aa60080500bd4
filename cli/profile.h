/* profile.h — `kevo profile`: Nsight Compute on a stored candidate. */
#ifndef KEVO_CLI_PROFILE_H
#define KEVO_CLI_PROFILE_H

#include <stddef.h>
#include <stdint.h>

#define CLI_PROFILE_USAGE                                                                                  \
    "kevo profile --db FILE --candidate ID [--ncu PATH] [--timeout S] [--device N]\n"                      \
    "  runs `ncu --csv --metrics ... --clock-control none --target-processes all kevo verify --db FILE\n"  \
    "  --candidate ID --maps sorted` (ncu never changes the GPU's clocks), stores the figures as the\n"   \
    "  candidate's ncu.* measurements (a generator's prompt shows them) and prints them on one line\n"   \
    "  --ncu      ncu's path (default: $KEVO_NCU, else ncu on $PATH)\n"                                 \
    "  --timeout  seconds before ncu and what it started are killed (default 600)\n"                    \
    "  Without ncu, or when it cannot read the GPU's counters (ERR_NVGPUCTRPERM), nothing is stored,\n" \
    "  the derived figures the DB has are printed and the exit status is 1\n"

/* The command (argv[0] "profile"); exit status as every command's. */
int cli_profile(int argc, char **argv);

/* `kevo tune --profile`, before the run: ncu's path ($KEVO_NCU, else ncu
 * on $PATH) into out[outsz]; 0, or a usage error's exit code (2) saying
 * where it looked, so a long run does not end without the profile asked. */
int cli_profile_ncu_check(char *out, size_t outsz);

/* `kevo tune --profile`, after the run (its GPU workers stopped): each of
 * runs[0..n)'s best candidate profiled on device as `kevo profile` does,
 * its figures stored and printed.  A run with no best says so; a profile
 * that fails (no counters, a timeout) is a warning with the derived
 * figures, never the run's failure. */
void cli_profile_best(const char *db_path, const int64_t *runs, int n, int device);

#endif
