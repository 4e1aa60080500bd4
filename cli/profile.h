/* profile.h — `kevo profile`: Nsight Compute on a stored candidate. */
#ifndef KEVO_CLI_PROFILE_H
#define KEVO_CLI_PROFILE_H

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

#endif
