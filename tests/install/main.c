/* Consumer of an installed halox: uses only the public headers and the installed library. */
#include <stdio.h>

#include <halox/features.h>
#include <halox/halox.h>
#include <halox/status.h>

int main(void)
{
    const char *const *names = halox_transport_names();
    int n = 0;

    printf("halox %s: HALOX_OK = \"%s\"\n", HALOX_VERSION_STRING, halox_status_string(HALOX_OK));
    printf("transports:");
    for (const char *const *p = names; p && *p; p++, n++) {
        printf(" %s", *p);
    }
    printf("\n");
    if (n == 0) {
        fprintf(stderr, "no transports compiled in\n");
        return 1;
    }
    return 0;
}
