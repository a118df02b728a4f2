/* fuzz_hostlist.c - libFuzzer target for the hostlist parser: any input must
 * parse or fail cleanly, and every host of a parsed list must be producible
 * and findable. Also linked with replay_main.c for `make check`. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hostlist.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    struct hostlist *hl;
    struct cohort_err err;
    if (hostlist_parse(text, &hl, &err) == 0) {
        char host[HOSTLIST_MAX_NAME + 1];
        uint64_t n = hostlist_count(hl);
        for (uint64_t i = 0; i < n && i < 64; i++) {
            if (hostlist_nth(hl, i, host, sizeof host) < 0)
                abort();
            if (hostlist_find(hl, host) < 0 || (uint64_t)hostlist_find(hl, host) > i)
                abort();
        }
        if (n && hostlist_nth(hl, n - 1, host, sizeof host) < 0)
            abort();
        hostlist_free(hl);
    } else if (err.msg[0] == '\0') {
        abort(); /* every rejection names what was wrong */
    }
    free(text);
    return 0;
}
