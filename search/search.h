/* search.h — the graph search over template configurations.
 *
 * Nodes are candidates (a family and a configuration) with their fitness
 * (speedup over the stage-0 baseline; 0 when wrong or failed; NaN when not
 * measured, as in compile-only runs).  Edges are moves: a move changes the
 * params of one axis of a family's space (retile, stages, align, fuse, ...)
 * by one step each, or enters another family, crosses two parents, or is a
 * generator's rewrite (search/gen.h).  A policy picks which node to expand
 * and what to propose; the tuning loop evaluates the proposals and reports
 * back (KernelEvolve's selection / operator / fitness / termination).  The
 * edges table keeps its column `operator`; in code a search step is a
 * `move`, since "op" names the operator being tuned (core/op.h).
 */
#ifndef KEVO_SEARCH_H
#define KEVO_SEARCH_H

#include <stdbool.h>
#include <stdint.h>

#include "search/model.h"
#include "templates/space.h"

typedef struct kevo_node {
    int family;       /* index into kevo_search.spaces */
    kevo_config cfg;
    int parent;       /* node index, -1 for roots */
    int parent2;      /* second parent of a crossover, else -1 */
    char move[32];    /* the move that made it: seed, retile, ..., crossover, enumerate, random, llm */
    bool done;        /* evaluated (successfully or not) */
    double fitness;   /* speedup; 0 failed; NaN unknown */
    int expansions;   /* times a policy expanded it */
    int rewrites;     /* children a generator made from it beside the policy's moves (an edge of a
                         generator's move, search/gen.h: LLM rewrites, mutations), failed calls included */
    int64_t cand_id;  /* DB id, 0 before insertion */
} kevo_node;

/* A proposal: evaluate this configuration, made from `parent` by `move`. */
typedef struct kevo_proposal {
    int family;
    kevo_config cfg;
    int parent;  /* -1 for roots */
    int parent2; /* crossover's second parent, else -1 */
    char move[32];
} kevo_proposal;

/* Restricts the space to a set of configurations (replay: those measured). */
typedef bool (*kevo_member_fn)(void *ctx, const kevo_space *family, const kevo_config *cfg);

/* The valid configurations of one family for the run's shape (enumerated
 * lazily, in mixed-radix order of the params), with the cost model's
 * prediction of each and their order by it (fastest first; the
 * enumeration order for a family without a model and among equal
 * predictions). */
typedef struct kevo_valid_set {
    bool ready;
    int n;
    kevo_config *cfgs;
    double *pred; /* seconds, NaN when the family has no model */
    int *order;   /* indices into cfgs */
} kevo_valid_set;

typedef struct kevo_search kevo_search;

/* A selection policy; found by name in the table (search/policy.c). */
typedef struct kevo_policy {
    const char *name;
    const char *summary;
    /* Fill up to max proposals not yet in the graph; return how many (0: the
     * policy has nothing left to propose). */
    int (*propose)(kevo_search *s, kevo_proposal *out, int max);
} kevo_policy;

/* Search state; owns the graph and the valid sets, borrows the spaces. */
struct kevo_search {
    kevo_space **spaces;
    int nspaces;
    kevo_syms shape;
    kevo_limits limits;
    kevo_dtype dtype;
    const kevo_policy *policy;
    uint64_t seed;
    uint64_t rng;
    kevo_node *nodes;
    int nnodes, cap;
    int64_t *hash_keys; /* open addressing: node index + 1, 0 empty */
    int *hash_vals;
    int hash_cap;
    kevo_valid_set *valid; /* per family */
    kevo_expr *filter;     /* --where, owned; NULL: none */
    kevo_member_fn member; /* NULL: every configuration */
    void *member_ctx;
    kevo_model_device model; /* the rates the cost model uses */
    int64_t budget;          /* evaluations the run may spend (0: unknown), for the families' quotas */
    kevo_proposal *warm;     /* warm-start seeds (winners of earlier runs), owned */
    int nwarm;
    /* a distribution's other shapes (shape above is the first): a
     * configuration must be valid at every one, and its prediction is the
     * weighted geometric mean over all */
    int nextra;
    kevo_syms *extra;  /* owned */
    double *weights;   /* nextra + 1, the first shape's first; owned */
    /* the first expression that failed to evaluate while the valid sets were
     * enumerated (a constraint, a let or --where: division by zero,
     * overflow, ...), and whether it was --where's; kevo_search_check says */
    bool faulted, fault_where;
    kevo_err fault;
    /* per family: --where was evaluated there, and it named a symbol the
     * family lacks (such configurations are excluded) */
    bool *where_seen;
    bool *where_unbound;
    char where_name[KEVO_SYM_NAME_MAX]; /* such a symbol */
    /* families added during the search (LLM candidates' one-point spaces),
     * indices nspaces.., borrowed; policies never propose in them */
    const kevo_space **added;
    int nadded, added_cap;
};

/* Look up a policy; NULL when unknown. */
const kevo_policy *kevo_policy_find(const char *name);
/* All policies, for help text. */
const kevo_policy *const *kevo_policy_list(int *n);

/* Initialise s over the spaces (borrowed; each must support the shape). */
kevo_status kevo_search_init(kevo_search *s, kevo_space **spaces, int nspaces, const kevo_syms *shape,
                             const kevo_limits *lim, kevo_dtype dt, const kevo_policy *policy, uint64_t seed,
                             kevo_err *err);
void kevo_search_release(kevo_search *s);

/* Keep only configurations for which `where` (an expression over the params,
 * lets and shape, e.g. "STAGES <= 4 && ALIGN == 1") is nonzero; in a family
 * that lacks a symbol it names, no configuration is kept.  Call before
 * any proposal.  Errors: KEVO_ERR_PARSE. */
kevo_status kevo_search_set_filter(kevo_search *s, const char *where, kevo_err *err);

/* Enumerate every family's valid set and check what that evaluated: an
 * expression that failed (a constraint or let of a space file: KEVO_ERR_PARSE
 * naming the family, the expression and the configuration; --where:
 * KEVO_ERR_ARG), a --where naming a symbol no searched family binds
 * (KEVO_ERR_ARG naming it), or no valid configuration at all (KEVO_ERR_ARG
 * with --where, else KEVO_ERR_UNSUPPORTED).  Call before any proposal;
 * KEVO_ERR_NOMEM when out of memory. */
kevo_status kevo_search_check(kevo_search *s, kevo_err *err);

/* The device rates of the cost model (default: the arch's table values).
 * Call before any proposal. */
void kevo_search_set_model(kevo_search *s, const kevo_model_device *d);

/* A shape distribution: shapes[0] must be the search's shape; weights > 0.
 * Configurations must then be valid at every shape, and predictions are the
 * weighted geometric mean over them (what a distribution run's fitness, the
 * weighted geometric mean of vs_best_peer, ranks by).  Call before any
 * proposal.  Errors: KEVO_ERR_ARG, KEVO_ERR_NOMEM. */
kevo_status kevo_search_set_shapes(kevo_search *s, const kevo_syms *shapes, const double *weights, int n,
                                   kevo_err *err);

/* The run's budget: each family's quota of it (kevo_search_starved) is
 * derived from it.  Call before any proposal. */
void kevo_search_set_budget(kevo_search *s, int64_t budget);

/* Add a warm-start seed (a configuration that won an earlier run at a
 * nearby shape): the first proposals include it when it is valid here.
 * false on allocation failure. */
bool kevo_search_add_warm(kevo_search *s, int family, const kevo_config *cfg);

/* The cost model's prediction of (family, cfg) at the search's shape, in
 * seconds; NaN when the family has no model or the model fails. */
double kevo_search_predict(const kevo_search *s, int family, const kevo_config *cfg);

/* Keep only configurations member() accepts.  Call before any proposal. */
void kevo_search_set_member(kevo_search *s, kevo_member_fn member, void *ctx);

/* Copy the valid sets another search over the same spaces, filter and
 * membership has enumerated (saves enumerating them again).  false on
 * allocation failure, when they are simply enumerated later. */
bool kevo_search_copy_valid(kevo_search *dst, const kevo_search *src);

/* Add a generator's one-point space (an LLM candidate's; borrowed, must
 * outlive s) as a family of the graph: its index (nspaces + k), or -1 when
 * out of memory.  Its nodes have no neighbours, so policies only reach it
 * through a generator's move. */
int kevo_search_add_space(kevo_search *s, const kevo_space *sp);

/* The space of a family index (searched or added), NULL out of range. */
const kevo_space *kevo_search_space(const kevo_search *s, int family);

/* Node index of (family, cfg), or -1. */
int kevo_search_find(const kevo_search *s, int family, const kevo_config *cfg);

/* Add a node (must not exist); returns its index or -1 on allocation failure. */
int kevo_search_add(kevo_search *s, const kevo_proposal *p);

/* Reseed the policy's generator from the run's seed and the graph's size, so
 * that a run rebuilt from the DB draws what the uninterrupted run drew. */
void kevo_search_reseed(kevo_search *s);

/* Record a node's result. */
void kevo_search_observe(kevo_search *s, int node, double fitness);

/* 1 valid, 0 rejected, -1 a constraint or let of the space failed to
 * evaluate, -2 --where failed to evaluate (why receives the reason). */
int kevo_search_valid(const kevo_search *s, int family, const kevo_config *cfg, char *why, size_t n);

/* The family's valid set (enumerated on first use). NULL on allocation failure. */
const kevo_valid_set *kevo_search_valid_set(kevo_search *s, int family);

/* Neighbours of a node that are valid and not yet in the graph: for each axis
 * of its family, every configuration whose axis params each move at most one
 * step in their domains (at least one moves) and whose other params stay.
 * Appends up to max proposals to out; returns how many. */
int kevo_search_neighbours(kevo_search *s, int node, kevo_proposal *out, int max);

/* order[0..n) = the indices of key[0..n) ascending, unknown (NaN) keys
 * last, ties by index (a total order, so every sort agrees).  false when
 * out of memory. */
bool kevo_search_order(const double *key, int n, int *order);

/* Fitness for ordering: NaN (unknown) and failures rank as 0. */
double kevo_search_rank(const kevo_node *n);

/* The seed proposals not yet in the graph: the warm starts valid here,
 * then each family's KEVO_SEEDS_PER_FAMILY best configurations under the
 * cost model (distinct predictions) and, for an axis marked "seed", its best
 * of each combination of that axis's values predicted within 1.3x of the
 * family's best, fastest predicted first; a family
 * without a model: its default, or its first valid configuration, unless
 * another searched family enters it by a move.  The set does not depend on
 * the graph, so a policy calls this first in every batch until it returns
 * 0 (a batch smaller than the set spreads it over several). */
#define KEVO_SEEDS_PER_FAMILY 2
int kevo_search_seeds(kevo_search *s, kevo_proposal *out, int max);

/* Up to max uniformly random valid configurations not in the graph (the
 * random policy, the yardstick). */
int kevo_search_random(kevo_search *s, kevo_proposal *out, int max, const char *move);

/* Up to max new configurations drawn with the cost model as the prior: a
 * family's k-th best unevaluated configuration is drawn with weight
 * proportional to (t_best / t_k)^4 over every family (uniform for families
 * without a model).  Restarts and newcomers of the model-guided policies. */
int kevo_search_prior_pick(kevo_search *s, const kevo_proposal *batch, int nbatch, kevo_proposal *out, int max,
                           const char *move);

/* Each family's quota of the budget: ceil(budget / (2 * families) *
 * (t_min / t_f)^2), where t_f is the family's best prediction and t_min the
 * best of all (1 for families without a model), at least its seeds.  The
 * family furthest below its quota (evaluated and pending nodes, plus those
 * of batch[0..nbatch)) that can still propose, or -1 when none is. */
int kevo_search_starved(kevo_search *s, const kevo_proposal *batch, int nbatch);

/* The index in out[0..n) of the proposal of family's configuration cfg, or -1. */
int kevo_search_batch_index(const kevo_proposal *out, int n, int family, const kevo_config *cfg);

/* Whether a proposal's configuration is already in out[0..n). */
bool kevo_search_in_batch(const kevo_proposal *out, int n, int family, const kevo_config *cfg);

/* Children of a node made by move (NULL: by any). */
int kevo_search_children_by(const kevo_search *s, int node, const char *move);

/* A mutation of a node: first an operator (an axis of its family or a move
 * into another family, among the least applied at this node so far,
 * counting out[0..n); the space lists its axes most promising first and the
 * k-th is drawn with weight 1/(1+k) times the cost model's prior for its
 * best move), then a move along it to a valid configuration new to the
 * graph and to out, drawn with the model as the prior; false when the node
 * has no such neighbour. */
bool kevo_search_mutate(kevo_search *s, int node, const kevo_proposal *out, int n, kevo_proposal *p);

/* Crossover (uniform over axes): a child taking each axis's params from one
 * of two evaluated parents of the same family; false when no new valid child
 * comes out of a few tries. */
bool kevo_search_crossover(kevo_search *s, int a, int b, const kevo_proposal *out, int n, kevo_proposal *p);

/* Moves that make edges.  The axes of a family's space are moves (retile,
 * stages, align, fuse, ...), as are its entries into other families; these
 * are the policies' others.  Each generator's own move (llm, mutate) is in
 * the generator table (search/gen.h). */
typedef struct kevo_move {
    const char *name;
    const char *summary;
} kevo_move;

/* The table of the policies' non-axis moves (crossover). */
const kevo_move *const *kevo_move_list(int *n);

#endif /* KEVO_SEARCH_H */
