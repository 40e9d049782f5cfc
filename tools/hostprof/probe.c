/* The probe of halox-hostprof's test (tests/tools/hostprof_check.sh): known ranges and calls. Three
 * cudaEventQuery calls in "probe: outer" (on a machine without a GPU they fail at once, which is
 * still a call), a 20 ms nanosleep in "probe: inner" (nested in outer, twice), one sched_yield
 * outside every range. */
#define _POSIX_C_SOURCE 200809L
#include <cuda_runtime_api.h>
#include <nvtx3/nvToolsExt.h>
#include <sched.h>
#include <time.h>

int main(void)
{
    nvtxRangePushA("probe: outer");
    for (int i = 0; i < 3; i++)
        (void)cudaEventQuery(NULL);
    for (int i = 0; i < 2; i++) {
        nvtxRangePushA("probe: inner");
        struct timespec ts = {0, 20000000};
        nanosleep(&ts, NULL);
        nvtxRangePop();
    }
    nvtxRangePop();
    sched_yield();
    return 0;
}
