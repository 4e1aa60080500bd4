/* bandit.c — UCB1 among the run's models (llm/bandit.h). */
#include "llm/bandit.h"

#include <math.h>
#include <string.h>

#include "util/util.h"

bool kevo_bandit_parse(const char *list, kevo_bandit *b)
{
    memset(b, 0, sizeof *b);
    if (!list || !*list)
        return true;
    size_t len;
    for (const char *p = list, *item; kv_list_next(&p, &item, &len);) {
        if (len == 0 || len >= KEVO_BANDIT_NAME_MAX || b->n == KEVO_BANDIT_MAX)
            goto bad;
        for (size_t i = 0; i < len; i++)
            if (item[i] <= 0x20 || item[i] >= 0x7f)
                goto bad;
        memcpy(b->name[b->n], item, len);
        b->name[b->n][len] = '\0';
        for (int k = 0; k < b->n; k++)
            if (!strcmp(b->name[k], b->name[b->n]))
                goto bad;
        b->n++;
    }
    return true;
bad:
    memset(b, 0, sizeof *b);
    return false;
}

void kevo_bandit_add(kevo_bandit *b, const char *model, double reward)
{
    for (int k = 0; model && k < b->n; k++)
        if (!strcmp(b->name[k], model)) {
            b->pulls[k]++;
            b->reward[k] += isnan(reward) ? 0 : reward < 0 ? 0 : reward > 1 ? 1 : reward;
            return;
        }
}

int kevo_bandit_pick(const kevo_bandit *b)
{
    int total = 0, best = -1;
    for (int k = 0; k < b->n; k++) {
        if (b->pulls[k] == 0)
            return k;
        total += b->pulls[k];
    }
    double best_score = -1;
    for (int k = 0; k < b->n; k++) {
        double score = b->reward[k] / b->pulls[k] + sqrt(2.0 * log((double)total) / b->pulls[k]);
        if (score > best_score + 1e-12) {
            best_score = score;
            best = k;
        }
    }
    return best;
}

double kevo_bandit_reward(bool failed, double fitness, double parent_fitness)
{
    if (failed)
        return 0;
    if (isnan(fitness))
        return 0.5;
    double base = isnan(parent_fitness) || parent_fitness <= 0 ? 1 : parent_fitness;
    double r = fitness / base - 1;
    return r < 0 ? 0 : r > 1 ? 1 : r;
}
