/* Packing and force adds shared by the reference and the CPU transports (pack.h). */
#include <string.h>

#include "core/pack.h"

void halox__pack_coords(halox_real_t real, int stride, void *dst, const void *x, const int *index,
                        int n, int dim, double shift)
{
    if (real == HALOX_FLOAT) {
        float *d = dst;
        const float *s = x;
        const float sh = (float)shift;
        for (int i = 0; i < n; i++) {
            const float *a = s + (size_t)index[i] * stride;
            float *o = d + (size_t)i * stride;
            for (int c = 0; c < stride; c++)
                o[c] = a[c];
            /* add only when shifting: x + 0 would turn -0.0 into +0.0 */
            if (shift != 0.0)
                o[dim] = a[dim] + sh;
        }
    } else {
        double *d = dst;
        const double *s = x;
        for (int i = 0; i < n; i++) {
            const double *a = s + (size_t)index[i] * stride;
            double *o = d + (size_t)i * stride;
            for (int c = 0; c < stride; c++)
                o[c] = a[c];
            if (shift != 0.0)
                o[dim] = a[dim] + shift;
        }
    }
}

void halox__add_forces(halox_real_t real, int stride, void *f, const int *index, int n,
                       const void *src)
{
    if (real == HALOX_FLOAT) {
        float *o = f;
        const float *s = src;
        for (int i = 0; i < n; i++) {
            float *a = o + (size_t)index[i] * stride;
            const float *b = s + (size_t)i * stride;
            a[0] += b[0];
            a[1] += b[1];
            a[2] += b[2];
        }
    } else {
        double *o = f;
        const double *s = src;
        for (int i = 0; i < n; i++) {
            double *a = o + (size_t)index[i] * stride;
            const double *b = s + (size_t)i * stride;
            a[0] += b[0];
            a[1] += b[1];
            a[2] += b[2];
        }
    }
}
