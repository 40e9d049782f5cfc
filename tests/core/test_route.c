/* Routes of the halo's legs (src/core/route.c): HALOX_HYBRID_UNREACHABLE's syntax and errors,
 * and decisions that both ranks of every pair share, on the plans of many grids (1 to 3 pulses
 * per dimension), for declarations that every rank shares, declarations that only some ranks
 * have (the votes make them symmetric), and reachability that is not symmetric. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/route.h"
#include "halox/plan.h"
#include "harness.h"

static void parse_ok(const char *text, int nranks, int all, int node, int pairs)
{
    halox__unreach_t u;
    halox_status_t st = halox__unreach_parse(text, nranks, &u);
    CHECK_MSG(st == HALOX_OK, "'%s': %s", text ? text : "(null)", halox_last_error());
    CHECK_MSG(u.all == all && u.node_size == node && u.n_pairs == pairs,
              "'%s': all %d node %d pairs %d", text ? text : "(null)", u.all, u.node_size,
              u.n_pairs);
}

static void parse_bad(const char *text, int nranks, const char *says)
{
    halox__unreach_t u;
    halox_status_t st = halox__unreach_parse(text, nranks, &u);
    const char *e = halox_last_error();
    CHECK_MSG(st == HALOX_ERR_INVALID_ARG, "'%s' parsed", text);
    CHECK_MSG(strstr(e, "HALOX_HYBRID_UNREACHABLE") && strstr(e, says),
              "'%s': message lacks '%s': %s", text, says, e);
    printf("  '%s': %s\n", text, e);
}

static void test_parse(void)
{
    parse_ok(NULL, 4, 0, 0, 0);
    parse_ok("", 4, 0, 0, 0);
    parse_ok("  ", 4, 0, 0, 0);
    parse_ok("none", 4, 0, 0, 0);
    parse_ok("all", 4, 1, 0, 0);
    parse_ok(" all ", 4, 1, 0, 0);
    parse_ok("node:2", 8, 0, 2, 0);
    parse_ok("0-1", 2, 0, 0, 1);
    parse_ok("0-1,2-3", 4, 0, 0, 2);
    parse_ok(" 0 - 1 , 3-2 ", 4, 0, 0, 2);
    parse_ok("node:4,0-1", 8, 0, 4, 1);
    parse_ok("7-100", 0, 0, 0, 1); /* ranks unchecked without a job size */

    const char *syntax = "expected 'all', 'none', 'node:N'";
    parse_bad("0", 4, syntax);
    parse_bad("0-", 4, syntax);
    parse_bad("-1", 4, syntax);
    parse_bad("a-b", 4, syntax);
    parse_bad("0-1,", 4, syntax);
    parse_bad("0-1,,2-3", 4, syntax);
    parse_bad("0-1 2-3", 4, syntax);
    parse_bad("0-1x", 4, syntax);
    parse_bad("0-0", 4, "two different ranks");
    parse_bad("node:0", 4, "block size");
    parse_bad("node:", 4, "block size");
    parse_bad("alll", 4, syntax);
    parse_bad("0-1;2-3", 4, syntax);
    parse_bad("0-5", 4, "names rank 5, but the job has 4 ranks");

    char many[1024] = "";
    for (int i = 0; i <= HALOX__UNREACH_MAX_PAIRS; i++)
        snprintf(many + strlen(many), sizeof many - strlen(many), "%s%d-%d", i ? "," : "", i,
                 i + 1);
    parse_bad(many, 0, "node:N instead");

    halox__unreach_t u;
    CHECK_OK(halox__unreach_parse("node:2,0-5", 8, &u));
    CHECK(halox__unreach_any(&u));
    CHECK(!halox__unreach_pair(&u, 0, 1) && !halox__unreach_pair(&u, 6, 7));
    CHECK(halox__unreach_pair(&u, 1, 2) && halox__unreach_pair(&u, 2, 1));
    CHECK(halox__unreach_pair(&u, 0, 5) && halox__unreach_pair(&u, 5, 0));
    CHECK(!halox__unreach_pair(&u, 3, 3));
    CHECK_OK(halox__unreach_parse("all", 8, &u));
    CHECK(halox__unreach_pair(&u, 0, 7) && !halox__unreach_pair(&u, 4, 4));
    CHECK_OK(halox__unreach_parse("", 8, &u));
    CHECK(!halox__unreach_any(&u) && !halox__unreach_pair(&u, 0, 1));
    CHECK(!strcmp(halox__route_name(HALOX__ROUTE_DIRECT), "direct") &&
          !strcmp(halox__route_name(HALOX__ROUTE_STAGED), "staged") &&
          !strcmp(halox__route_name(HALOX__ROUTE_SELF), "self"));
}

/* halox__unreach_summary against counting every pair. */
static void test_summary(void)
{
    static const char *decls[] = {
        "",        "all",         "none",           "0-1",
        "node:1",  "node:2",      "node:4",         "node:8",
        "0-1,1-0", "0-1,0-2,1-2", "node:2,0-1,2-3", "node:3,0-1,0-2,1-2,3-4,3-5,4-5,6-7"};
    int n = 0;
    for (size_t d = 0; d < sizeof decls / sizeof decls[0]; d++)
        for (int P = 1; P <= 9; P++) {
            halox__unreach_t u;
            if (halox__unreach_parse(decls[d], P, &u) != HALOX_OK)
                continue;
            int any = 0, all = 1, pairs = 0;
            for (int a = 0; a < P; a++)
                for (int b = a + 1; b < P; b++) {
                    int x = halox__unreach_pair(&u, a, b);
                    any |= x;
                    all &= x;
                    pairs++;
                }
            all &= pairs > 0;
            int sa = -1, sl = -1;
            halox__unreach_summary(&u, P, &sa, &sl);
            CHECK_MSG(sa == any && sl == all,
                      "'%s' on %d ranks: summary any %d all %d, pairs say "
                      "any %d all %d",
                      decls[d], P, sa, sl, any, all);
            n++;
        }
    printf("%d declaration summaries agree with every pair\n", n);
}

/* Reachability patterns: 0 every rank, 1 ranks of different parity cannot reach each other,
 * 2 rank a reaches b only when a <= b (not symmetric). */
static int reaches(int pattern, int a, int b)
{
    switch (pattern) {
    case 1:
        return (a & 1) == (b & 1);
    case 2:
        return a <= b;
    default:
        return 1;
    }
}

/* Whether rank `who` declares the pair (a, b) unreachable: every rank, or rank 0 only. */
static int declares(const halox__unreach_t *u, int only_rank0, int who, int a, int b)
{
    return (!only_rank0 || who == 0) && halox__unreach_pair(u, a, b);
}

static int g_cases, g_direct, g_staged;

static void check_grid(const int g[3], double rc, const char *decl, int only_rank0, int pattern)
{
    halox_plan_params_t params = {{{g[0], g[1], g[2]}}, {{8, 8, 8}}, rc, 0.3, 0, 0};
    const int P = g[0] * g[1] * g[2];
    halox__unreach_t u, none;
    CHECK_OK(halox__unreach_parse(decl, P, &u));
    CHECK_OK(halox__unreach_parse(NULL, P, &none));
    halox_atoms_t *atoms = calloc((size_t)P, sizeof *atoms);
    halox_plan_t *plans = calloc((size_t)P, sizeof *plans);
    uint8_t(*votes)[HALOX_MAX_PULSES] = calloc((size_t)P, sizeof *votes);
    halox__route_t *route = calloc((size_t)P, sizeof *route);
    uint8_t *reach = calloc((size_t)P, 1);
    for (int r = 0; r < P; r++) {
        halox_atoms_init(&atoms[r], HALOX_DOUBLE, 3, 0);
        halox_plan_init(&plans[r]);
    }
    halox_status_t st = halox_reference_build(&params, atoms, plans);
    CHECK_MSG(st == HALOX_OK, "grid %dx%dx%d: %s", g[0], g[1], g[2], halox_last_error());
    /* every rank votes with its own declaration and its own view of reachability */
    for (int r = 0; r < P && st == HALOX_OK; r++) {
        for (int s = 0; s < P; s++)
            reach[s] = (uint8_t)reaches(pattern, r, s);
        halox__route_votes(&plans[r], only_rank0 && r != 0 ? &none : &u, reach, votes[r]);
    }
    /* the transport's exchange: each rank gets its send_rank's and its recv_rank's votes */
    for (int r = 0; r < P && st == HALOX_OK; r++) {
        uint8_t from_send[HALOX_MAX_PULSES] = {0}, from_recv[HALOX_MAX_PULSES] = {0};
        for (int k = 0; k < plans[r].n_pulses; k++) {
            from_send[k] = votes[plans[r].pulse[k].send_rank][k];
            from_recv[k] = votes[plans[r].pulse[k].recv_rank][k];
        }
        halox__route_decide(&plans[r], votes[r], from_send, from_recv, &route[r]);
        if (pattern == 0 && !only_rank0) {
            /* one process, shared declaration: mirroring its own votes gives the same */
            halox__route_t loc;
            halox__route_local(&plans[r], &u, &loc);
            CHECK_MSG(memcmp(&loc, &route[r], sizeof loc) == 0, "rank %d: local routes differ", r);
        }
    }
    for (int r = 0; r < P && st == HALOX_OK; r++) {
        const halox_plan_t *pl = &plans[r];
        int direct = 0, staged = 0;
        CHECK(route[r].n_pulses == pl->n_pulses);
        for (int k = 0; k < pl->n_pulses; k++) {
            const halox_pulse_t *p = &pl->pulse[k];
            const int s = p->send_rank, v = p->recv_rank;
            if (s == r && v == r) {
                CHECK(route[r].send[k] == HALOX__ROUTE_SELF &&
                      route[r].recv[k] == HALOX__ROUTE_SELF);
                continue;
            }
            /* both ends of each leg agree */
            CHECK_MSG(route[r].send[k] == route[s].recv[k],
                      "%s: rank %d pulse %d sends %s to rank %d, which receives %s", decl, r, k,
                      halox__route_name(route[r].send[k]), s, halox__route_name(route[s].recv[k]));
            CHECK_MSG(route[r].recv[k] == route[v].send[k],
                      "%s: rank %d pulse %d receives %s from rank %d, which sends %s", decl, r, k,
                      halox__route_name(route[r].recv[k]), v, halox__route_name(route[v].send[k]));
            /* direct exactly when both reach each other and neither end declared the pair */
            const int ds = reaches(pattern, r, s) && reaches(pattern, s, r) &&
                           !declares(&u, only_rank0, r, r, s) && !declares(&u, only_rank0, s, r, s);
            const int dv = reaches(pattern, r, v) && reaches(pattern, v, r) &&
                           !declares(&u, only_rank0, r, r, v) && !declares(&u, only_rank0, v, r, v);
            CHECK_MSG(route[r].send[k] == (ds ? HALOX__ROUTE_DIRECT : HALOX__ROUTE_STAGED),
                      "%s pattern %d: rank %d pulse %d send leg to %d is %s", decl, pattern, r, k,
                      s, halox__route_name(route[r].send[k]));
            CHECK_MSG(route[r].recv[k] == (dv ? HALOX__ROUTE_DIRECT : HALOX__ROUTE_STAGED),
                      "%s pattern %d: rank %d pulse %d receive leg from %d is %s", decl, pattern, r,
                      k, v, halox__route_name(route[r].recv[k]));
            direct += ds + dv;
            staged += !ds + !dv;
        }
        CHECK(route[r].n_direct == direct && route[r].n_staged == staged);
        g_direct += direct;
        g_staged += staged;
    }
    g_cases++;
    for (int r = 0; r < P; r++) {
        halox_atoms_free(&atoms[r]);
        halox_plan_free(&plans[r]);
    }
    free(atoms);
    free(plans);
    free(votes);
    free(route);
    free(reach);
}

int main(void)
{
    test_parse();
    test_summary();
    /* grids with 1 pulse per dimension (rc 2.0 in a box of 8) and more (rc 3.5) */
    static const int grids[][3] = {{1, 1, 1}, {2, 1, 1}, {1, 2, 1}, {2, 2, 1}, {2, 2, 2},
                                   {3, 2, 1}, {4, 1, 1}, {4, 2, 1}, {3, 3, 3}, {4, 3, 2}};
    static const char *decls[] = {"", "all", "0-1", "node:2", "0-1,2-3", "1-3,0-2", "node:3"};
    for (size_t g = 0; g < sizeof grids / sizeof grids[0]; g++)
        for (int c = 0; c < 2; c++)
            for (size_t d = 0; d < sizeof decls / sizeof decls[0]; d++) {
                const int P = grids[g][0] * grids[g][1] * grids[g][2];
                halox__unreach_t u;
                if (halox__unreach_parse(decls[d], P, &u) != HALOX_OK)
                    continue; /* names ranks beyond this grid */
                for (int only0 = 0; only0 < 2; only0++)
                    for (int pattern = 0; pattern < 3; pattern++)
                        check_grid(grids[g], c ? 3.5 : 2.0, decls[d], only0, pattern);
            }
    printf("%d route cases: %d direct and %d staged legs, every pair agreed\n", g_cases, g_direct,
           g_staged);
    CHECK(g_direct > 0 && g_staged > 0);
    TEST_DONE();
}
