/* halox-md --autotune's decision (tools/autotune_pick.c): medians of the rounds, the noise band,
 * the rule's choice kept inside it, candidates that never ran. Every expectation below is worked
 * out by hand from the numbers given. */
#include <math.h>
#include <stdio.h>

#include "../../tools/autotune_pick.h"
#include "harness.h"

int main(void)
{
    double med[4], spread[4], noise = 0;
    int fastest = -1;
    /* 3 candidates x 3 rounds: medians 10, 9, 12; spreads 0.2, 0.1/9, 0: noise 0.2 */
    const double a[] = {10, 12, 10, 9, 9.1, 9, 12, 12, 12};
    CHECK(autotune_pick(a, 3, 3, -1, med, spread, &noise, &fastest) == 1 && fastest == 1);
    CHECK(med[0] == 10 && med[1] == 9 && med[2] == 12);
    CHECK(fabs(spread[0] - 0.2) < 1e-12 && fabs(noise - 0.2) < 1e-12);
    /* the rule's choice (0) is 11 % slower than the fastest: inside the 20 % noise, kept */
    CHECK(autotune_pick(a, 3, 3, 0, med, spread, &noise, &fastest) == 0 && fastest == 1);
    /* rule 2 is 33 % slower: outside the noise, the fastest wins */
    CHECK(autotune_pick(a, 3, 3, 2, med, spread, &noise, &fastest) == 1);
    /* quiet rounds: the noise floor (2 %) decides; 10 vs 9.9 is a tie, 10 vs 9 is not */
    const double b[] = {10, 10, 10, 9.9, 9.9, 9.9, 9, 9, 9};
    CHECK(autotune_pick(b, 2, 3, 0, med, spread, &noise, &fastest) == 0 && fastest == 1);
    CHECK(fabs(noise - AUTOTUNE_NOISE_MIN) < 1e-15);
    CHECK(autotune_pick(b, 3, 3, 0, med, spread, &noise, &fastest) == 2 && fastest == 2);
    /* a candidate that never ran (refused) is skipped; one failed round leaves the median of
     * two (8 and 10: 9) */
    const double c[] = {-1, -1, -1, 8, -1, 10};
    CHECK(autotune_pick(c, 2, 3, 0, med, spread, &noise, &fastest) == 1 && fastest == 1);
    CHECK(med[0] == 0 && med[1] == 9);
    /* nothing ran */
    const double d[] = {-1, -1, 0, 0};
    CHECK(autotune_pick(d, 2, 2, 0, med, spread, &noise, &fastest) == -1 && fastest == -1);
    printf("autotune_pick: medians, noise band and the rule's choice as worked out by hand\n");
    TEST_DONE();
}
