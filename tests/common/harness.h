/* Tiny test harness: each test program is one CTest test with a timeout; CHECK failures print
 * where and why and make the program exit non-zero; HALOX_TEST_SKIP (77) tells CTest "skipped". */
#ifndef HALOX_TEST_HARNESS_H
#define HALOX_TEST_HARNESS_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "halox/atoms.h"
#include "halox/status.h"

#define HALOX_TEST_SKIP 77

/* atomic: tests that run ranks as threads CHECK from several threads */
static _Atomic int halox_test_failures = 0;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);               \
            halox_test_failures++;                                                                 \
        }                                                                                          \
    } while (0)

#define CHECK_MSG(cond, ...)                                                                       \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond);               \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
            halox_test_failures++;                                                                 \
        }                                                                                          \
    } while (0)

/* A failure seen on a rank thread: printed at once with the rank, counted in the rank's own
 * ctx->failures (ctx: any struct with `rank` and `failures`), which the test sums when the
 * threads are joined. */
#define RCHECK(ctx, cond, ...)                                                                     \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: rank %d: CHECK failed: %s: ", __FILE__, __LINE__, (ctx)->rank, \
                    #cond);                                                                        \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
            (ctx)->failures++;                                                                     \
        }                                                                                          \
    } while (0)

/* Expect a call to return exactly `expected`. */
#define CHECK_STATUS(call, expected)                                                               \
    do {                                                                                           \
        halox_status_t st_ = (call);                                                               \
        if (st_ != (expected)) {                                                                   \
            fprintf(stderr, "%s:%d: %s returned %d (%s), expected %d: %s\n", __FILE__, __LINE__,   \
                    #call, (int)st_, halox_status_string(st_), (int)(expected),                    \
                    halox_last_error());                                                           \
            halox_test_failures++;                                                                 \
        }                                                                                          \
    } while (0)

#define CHECK_OK(call) CHECK_STATUS(call, HALOX_OK)

#define CHECK_NEAR(a, b, tol)                                                                      \
    do {                                                                                           \
        double a_ = (a), b_ = (b);                                                                 \
        if (!(fabs(a_ - b_) <= (tol))) {                                                           \
            fprintf(stderr, "%s:%d: CHECK_NEAR failed: %s = %.17g, %s = %.17g, tol %g\n",          \
                    __FILE__, __LINE__, #a, a_, #b, b_, (double)(tol));                            \
            halox_test_failures++;                                                                 \
        }                                                                                          \
    } while (0)

/* A precision in words, for what a test prints. */
/* Whether the test runs in a sanitizer build (CMake sets HALOX_TEST_SANITIZED=1 there): tests whose
 * cost a sanitizer multiplies take smaller systems then; the main suite runs the full sizes. */
static inline int test_sanitized(void)
{
    const char *v = getenv("HALOX_TEST_SANITIZED");
    return v && v[0] == '1' && v[1] == '\0';
}

static inline const char *test_real_name(halox_real_t real)
{
    return real == HALOX_DOUBLE ? "double" : "float";
}

/* End of main(): report and exit. */
#define TEST_DONE()                                                                                \
    do {                                                                                           \
        if (halox_test_failures) {                                                                 \
            fprintf(stderr, "%d check(s) failed\n", halox_test_failures);                          \
            return 1;                                                                              \
        }                                                                                          \
        printf("all checks passed\n");                                                             \
        return 0;                                                                                  \
    } while (0)

#endif
