/* The decision of halox-md --autotune (autotune_pick.h). On the GPUs, steps of the same system
 * differ by 5-15 % from run to run above 180k atoms (host rebuilds), often more than the
 * transports do: a measured candidate replaces the rule's choice only when it is faster by more
 * than the spread the rounds themselves show. */
#include "autotune_pick.h"

enum { MAX_ROUNDS = 16 };

static double median_of(double *v, int n)
{
    for (int i = 1; i < n; i++) /* insertion sort: n <= MAX_ROUNDS */
        for (int j = i; j > 0 && v[j] < v[j - 1]; j--) {
            double t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int autotune_pick(const double *ms, int n, int rounds, int rule, double *med, double *spread,
                  double *noise_p, int *fastest_p)
{
    int best = -1;
    double noise = AUTOTUNE_NOISE_MIN;
    if (rounds > MAX_ROUNDS)
        rounds = MAX_ROUNDS;
    for (int i = 0; i < n; i++) {
        double v[MAX_ROUNDS], lo = 0, hi = 0;
        int k = 0;
        for (int r = 0; r < rounds; r++) {
            const double x = ms[i * rounds + r];
            if (x > 0) {
                lo = k == 0 || x < lo ? x : lo;
                hi = k == 0 || x > hi ? x : hi;
                v[k++] = x;
            }
        }
        med[i] = k ? median_of(v, k) : 0;
        spread[i] = k ? (hi - lo) / med[i] : 0;
        if (!k)
            continue;
        noise = spread[i] > noise ? spread[i] : noise;
        if (best < 0 || med[i] < med[best])
            best = i;
    }
    *noise_p = noise;
    *fastest_p = best;
    if (best >= 0 && rule >= 0 && rule < n && med[rule] > 0 && med[rule] <= med[best] * (1 + noise))
        return rule;
    return best;
}
