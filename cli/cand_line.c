/* cand_line.c — the CLI's line for a finished candidate. */
#include "cli/cand_line.h"

kevo_status cli_cand_line(const kevo_cand_event *c, kv_buf *b)
{
    kevo_status st = kv_buf_printf(b, "[%3lld/%lld] #%lld %s", (long long)c->done, (long long)c->budget,
                                   (long long)c->id, c->family);
    if (!st && c->config[0])
        st = kv_buf_printf(b, " %s", c->config);
    if (!st && c->move[0]) {
        st = kv_buf_printf(b, " <-%s #%lld", c->move, (long long)c->parent);
        if (!st && c->parent2)
            st = kv_buf_printf(b, " #%lld", (long long)c->parent2);
    }
    const char *note_sep = c->note[0] ? " | " : "", *gpu_sep = c->gpu[0] ? " | " : "";
    switch (st ? -1 : (int)c->outcome) {
    case KEVO_CAND_FAILED:
        return kv_buf_printf(b, " | FAILED %s: %s%s%s", c->fail, c->why, gpu_sep, c->gpu);
    case KEVO_CAND_COMPILED:
        return kv_buf_printf(b, " | compiled%s %.1f s, %d regs, %d B spill, %d KB smem%s%s",
                             c->cached ? " (cached)" : "", c->compile_s, c->regs, c->spill_bytes, c->smem_kb,
                             note_sep, c->note);
    case KEVO_CAND_TIMED_DIST:
        return kv_buf_printf(b, " | first shape %.4f ms %.2fx peer | weighted geomean vs_peer %.2fx | best %.2fx%s%s",
                             c->median_ms, c->vs_peer, c->fitness, c->best, note_sep, c->note);
    case KEVO_CAND_TIMED:
        return kv_buf_printf(b,
                             " | %.4f ms %5.2fx, %.2fx peer, %5.1f TFLOP/s, %2.0f%% roofline, rel %.1e | best %.2fx"
                             "%s%s%s%s",
                             c->median_ms, c->speedup, c->vs_peer, c->tflops, 100 * c->roofline, c->rel_err, c->best,
                             note_sep, c->note, gpu_sep, c->gpu);
    default:
        return st ? st : kv_buf_printf(b, " | (an outcome this kevo does not know: %d)", (int)c->outcome);
    }
}
