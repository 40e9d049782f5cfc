/* CPU lists (src/core/cpulist.c): parsing the kernel's local_cpulist format, sharing a GPU's
 * cores among its ranks, and printing lists back. */
#include <stdio.h>
#include <string.h>

#include "core/cpulist.h"
#include "harness.h"

static void parse_cases(void)
{
    int c[64];
    CHECK(halox__cpulist_parse("0-3,8,10-11\n", c, 64) == 7);
    CHECK(c[0] == 0 && c[3] == 3 && c[4] == 8 && c[5] == 10 && c[6] == 11);
    CHECK(halox__cpulist_parse("5", c, 64) == 1 && c[0] == 5);
    CHECK(halox__cpulist_parse("", c, 64) == 0);
    CHECK(halox__cpulist_parse("3-1", c, 64) == -1);   /* descending range */
    CHECK(halox__cpulist_parse("0-3;4", c, 64) == -1); /* bad separator */
    CHECK(halox__cpulist_parse("x", c, 64) == -1);
    CHECK(halox__cpulist_parse("0-99", c, 64) == -1); /* more than max */
    CHECK(halox__cpulist_parse(NULL, c, 64) == -1);
}

static void share_cases(void)
{
    /* 16 cores among 3 ranks: 6, 5, 5, contiguous, covering everything once */
    int lo, hi, next = 0, sizes[3];
    for (int r = 0; r < 3; r++) {
        halox__cpulist_share(16, r, 3, &lo, &hi);
        CHECK(lo == next);
        sizes[r] = hi - lo;
        next = hi;
    }
    CHECK(next == 16 && sizes[0] == 6 && sizes[1] == 5 && sizes[2] == 5);
    /* more ranks than cores: one core each, round robin */
    halox__cpulist_share(2, 3, 5, &lo, &hi);
    CHECK(lo == 1 && hi == 2);
    /* one rank takes all */
    halox__cpulist_share(8, 0, 1, &lo, &hi);
    CHECK(lo == 0 && hi == 8);
    halox__cpulist_share(8, 2, 2, &lo, &hi); /* index out of range: nothing */
    CHECK(lo == 0 && hi == 0);
}

static void format_cases(void)
{
    int c[] = {0, 1, 2, 3, 8, 10, 11};
    char buf[64];
    CHECK(halox__cpulist_format(c, 7, buf, sizeof buf) == 0);
    CHECK_MSG(strcmp(buf, "0-3,8,10-11") == 0, "got '%s'", buf);
    CHECK(halox__cpulist_format(c, 7, buf, 5) == -1);
    int back[16];
    CHECK(halox__cpulist_parse("0-3,8,10-11", back, 16) == 7 && !memcmp(back, c, sizeof c));
}

int main(void)
{
    parse_cases();
    share_cases();
    format_cases();
    TEST_DONE();
}
