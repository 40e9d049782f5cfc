/* Wait bounds and numeric environment variables are validated where they are read:
 *   - halox_timeout_resolve: 0 takes HALOX_TIMEOUT_S or 60 s; a given bound or a variable that
 *     is not finite, not > 0, above HALOX_TIMEOUT_MAX_S or not a number is refused, naming it
 *     (a bound of 1e20 s overflowed the deadline and spun forever before);
 *   - the same through halox_team_create and halox_comm_create (threads);
 *   - a team of 2 whose second rank never arrives ends rank 0's barrier with HALOX_ERR_TIMEOUT
 *     after about the bound (so the bounded wait still works);
 *   - halox_env_number/int/flag refuse trailing characters, inf, NaN, fractions and values out
 *     of range, and leave unset variables at their defaults. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "halox/endpoint.h"
#include "halox/env.h"
#include "halox/topology.h"
#include "harness.h"

static void expect_bad_env_timeout(const char *value)
{
    setenv("HALOX_TIMEOUT_S", value, 1);
    double b = -1;
    CHECK_STATUS(halox_timeout_resolve(0, &b), HALOX_ERR_INVALID_ARG);
    CHECK_MSG(strstr(halox_last_error(), "HALOX_TIMEOUT_S") && strstr(halox_last_error(), value),
              "HALOX_TIMEOUT_S='%s': message '%s'", value, halox_last_error());
    halox_team_t *team = NULL;
    CHECK_STATUS(halox_team_create(2, 0, &team), HALOX_ERR_INVALID_ARG);
    CHECK(team == NULL);
    unsetenv("HALOX_TIMEOUT_S");
}

static void expect_bad_bound(double t)
{
    double b = -1;
    CHECK_STATUS(halox_timeout_resolve(t, &b), HALOX_ERR_INVALID_ARG);
    CHECK_MSG(strstr(halox_last_error(), "timeout") != NULL, "bound %g: message '%s'", t,
              halox_last_error());
    halox_team_t *team = NULL;
    CHECK_STATUS(halox_team_create(2, t, &team), HALOX_ERR_INVALID_ARG);
    CHECK(team == NULL);
}

static void test_timeouts(void)
{
    unsetenv("HALOX_TIMEOUT_S");
    double b = 0;
    CHECK_OK(halox_timeout_resolve(0, &b));
    CHECK(b == 60.0);
    CHECK_OK(halox_timeout_resolve(2.5, &b));
    CHECK(b == 2.5);
    CHECK_OK(halox_timeout_resolve(HALOX_TIMEOUT_MAX_S, &b));
    CHECK(b == HALOX_TIMEOUT_MAX_S);
    setenv("HALOX_TIMEOUT_S", "7.5", 1);
    CHECK_OK(halox_timeout_resolve(0, &b));
    CHECK(b == 7.5);
    CHECK_OK(halox_timeout_resolve(3, &b)); /* a given bound beats the variable */
    CHECK(b == 3);
    unsetenv("HALOX_TIMEOUT_S");

    expect_bad_bound(1e20);
    expect_bad_bound(1e308);
    expect_bad_bound(HALOX_TIMEOUT_MAX_S * 1.0001);
    expect_bad_bound(-1);
    expect_bad_bound(-1e-9);
    expect_bad_bound(1.0 / 0.0);
    expect_bad_bound(0.0 / 0.0);

    const char *bad[] = {"inf", "nan", "abc", "-5", "0", "1e20", "5s", "", NULL};
    for (int i = 0; bad[i]; i++)
        if (bad[i][0]) /* an empty variable counts as unset */
            expect_bad_env_timeout(bad[i]);
    setenv("HALOX_TIMEOUT_S", "", 1);
    CHECK_OK(halox_timeout_resolve(0, &b));
    CHECK(b == 60.0);
    unsetenv("HALOX_TIMEOUT_S");
}

/* The endpoint of a threads rank refuses a bad bound of its own too. */
static void test_comm_create(void)
{
    halox_team_t *team = NULL;
    CHECK_OK(halox_team_create(1, 0, &team));
    if (!team)
        return;
    halox_comm_t *comm = NULL;
    halox_comm_args_t args = {.real = HALOX_FLOAT, .stride = 3, .team = team, .timeout_s = 1e20};
    CHECK_STATUS(halox_comm_create("threads", &args, &comm), HALOX_ERR_INVALID_ARG);
    CHECK(comm == NULL);
    args.timeout_s = 0;
    CHECK_OK(halox_comm_create("threads", &args, &comm));
    if (comm)
        halox_comm_destroy(comm);
    halox_team_destroy(team);
}

/* Rank 0 alone in a team of 2 waits the bound, then stops with a timeout naming rank 1. */
static void test_bounded_barrier(void)
{
    halox_team_t *team = NULL;
    CHECK_OK(halox_team_create(2, 0.3, &team));
    if (!team)
        return;
    halox_comm_t *comm = NULL;
    halox_comm_args_t args = {.real = HALOX_FLOAT, .stride = 3, .team = team, .rank = 0};
    double t0 = halox__now();
    /* endpoint creation is a team barrier: rank 1 never comes */
    halox_status_t st = halox_comm_create("threads", &args, &comm);
    double dt = halox__now() - t0;
    CHECK_STATUS(st, HALOX_ERR_TIMEOUT);
    CHECK_MSG(dt > 0.25 && dt < 10, "waited %.3f s for a bound of 0.3 s", dt);
    CHECK_MSG(strstr(halox_last_error(), "1") != NULL, "message '%s'", halox_last_error());
    if (comm)
        halox_comm_destroy(comm);
    halox_team_destroy(team);
}

static void test_env_numbers(void)
{
    double d = -1;
    int n = -1;
    unsetenv("HALOX_NVSHMEM_HEADROOM");
    CHECK_OK(halox_env_number("HALOX_NVSHMEM_HEADROOM", 1, 16, 1.25, &d));
    CHECK(d == 1.25);
    setenv("HALOX_NVSHMEM_HEADROOM", "2", 1);
    CHECK_OK(halox_env_number("HALOX_NVSHMEM_HEADROOM", 1, 16, 1.25, &d));
    CHECK(d == 2);
    const char *bad_num[] = {"0.5", "17", "inf", "nan", "2x", "x2", "1e999", NULL};
    for (int i = 0; bad_num[i]; i++) {
        setenv("HALOX_NVSHMEM_HEADROOM", bad_num[i], 1);
        CHECK_STATUS(halox_env_number("HALOX_NVSHMEM_HEADROOM", 1, 16, 1.25, &d),
                     HALOX_ERR_INVALID_ARG);
        CHECK(strstr(halox_last_error(), "HALOX_NVSHMEM_HEADROOM") != NULL);
        CHECK(d == 1.25);
    }
    unsetenv("HALOX_NVSHMEM_HEADROOM");

    setenv("HALOX_NVSHMEM_BLOCKS", "12", 1);
    CHECK_OK(halox_env_int("HALOX_NVSHMEM_BLOCKS", 0, 65536, 0, &n));
    CHECK(n == 12);
    const char *bad_int[] = {"1.5", "-1", "65537", "9999999999999", "twelve", NULL};
    for (int i = 0; bad_int[i]; i++) {
        setenv("HALOX_NVSHMEM_BLOCKS", bad_int[i], 1);
        CHECK_STATUS(halox_env_int("HALOX_NVSHMEM_BLOCKS", 0, 65536, 0, &n), HALOX_ERR_INVALID_ARG);
        CHECK(n == 0);
    }
    unsetenv("HALOX_NVSHMEM_BLOCKS");

    CHECK_OK(halox_env_flag("HALOX_NVSHMEM_PUT", 0, &n));
    CHECK(n == 0);
    setenv("HALOX_NVSHMEM_PUT", "1", 1);
    CHECK_OK(halox_env_flag("HALOX_NVSHMEM_PUT", 0, &n));
    CHECK(n == 1);
    const char *bad_flag[] = {"2", "yes", "true", "01", NULL};
    for (int i = 0; bad_flag[i]; i++) {
        setenv("HALOX_NVSHMEM_PUT", bad_flag[i], 1);
        CHECK_STATUS(halox_env_flag("HALOX_NVSHMEM_PUT", 0, &n), HALOX_ERR_INVALID_ARG);
        CHECK(strstr(halox_last_error(), bad_flag[i]) != NULL);
    }
    unsetenv("HALOX_NVSHMEM_PUT");
}

int main(void)
{
    test_timeouts();
    test_comm_create();
    test_bounded_barrier();
    test_env_numbers();
    TEST_DONE();
}
