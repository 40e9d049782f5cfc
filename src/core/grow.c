/* Arrays that grow by doubling (grow.h). */
#include <stdlib.h>

#include "core/error.h"
#include "core/grow.h"

halox_status_t halox__grow(void **p, int *cap, int n, size_t elem)
{
    if (n <= *cap)
        return HALOX_OK;
    long long want = *cap > 0 ? *cap : 16;
    while (want < n)
        want *= 2;
    if (want > 0x7fffffff)
        want = 0x7fffffff;
    void *q = realloc(*p, (size_t)want * elem);
    if (!q)
        return halox__error(HALOX_ERR_NO_MEMORY, "could not allocate %lld elements of %zu bytes",
                            want, elem);
    *p = q;
    *cap = (int)want;
    return HALOX_OK;
}
