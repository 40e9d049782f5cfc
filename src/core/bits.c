/* Ranges by bit patterns (bits.h). */
#include <math.h>
#include <string.h>

#include "core/bits.h"

uint64_t halox__bits_ceil(halox_real_t real, double x)
{
    if (real != HALOX_FLOAT)
        return halox__dbits(&x);
    float f = (float)x; /* nearest: at most one step below */
    if ((double)f < x)
        f = nextafterf(f, INFINITY);
    return halox__fbits(&f);
}

uint64_t halox__bits_below(halox_real_t real, double lo, double rh)
{
    /* "v - lo < rh" holds up to a point and not above it (the rounding is monotonic): start
     * near that point and step to the first value where it fails */
    if (real != HALOX_FLOAT) {
        double t = lo + rh;
        while (t > 0 && !(nextafter(t, 0.0) - lo < rh))
            t = nextafter(t, 0.0);
        while (t - lo < rh)
            t = nextafter(t, INFINITY);
        return halox__dbits(&t);
    }
    float t = (float)(lo + rh);
    while (t > 0 && !((double)nextafterf(t, 0.0f) - lo < rh))
        t = nextafterf(t, 0.0f);
    while ((double)t - lo < rh)
        t = nextafterf(t, INFINITY);
    return halox__fbits(&t);
}
