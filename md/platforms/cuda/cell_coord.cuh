/* Cells of a regular grid over xyz-interleaved coordinates, clamped to the grid (a coordinate
 * beyond it falls in the border cell): the engine's cluster sort and the per-atom binning of the
 * pair bench place atoms by the same rule. */
#ifndef HALOX_MD_CUDA_CELL_COORD_CUH
#define HALOX_MD_CUDA_CELL_COORD_CUH

#include <cuda_runtime.h>
#include <stddef.h>

__device__ static inline int md__cell_coord(float x, float lo, float inv_w, int m)
{
    int c = (int)floorf((x - lo) * inv_w);
    return c < 0 ? 0 : (c >= m ? m - 1 : c);
}

/* c[d]: the cell of atom i along d */
__device__ static inline void md__cell_of(const float *__restrict__ x, int i, const float lo[3],
                                          const float inv_w[3], const int m[3], int c[3])
{
    for (int d = 0; d < 3; d++)
        c[d] = md__cell_coord(x[3 * (size_t)i + d], lo[d], inv_w[d], m[d]);
}

#endif
