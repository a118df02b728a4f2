/* replay_main.c - runs the fuzz target over the checked-in corpus, as a TAP
 * test, so `make check` exercises it without libFuzzer. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "../unit/tap.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(void)
{
    DIR *d = opendir(CORPUS);
    struct dirent *e;
    unsigned n = 0;
    if (!d) {
        ok(0, "corpus %s opens", CORPUS);
        return tap_done();
    }
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", CORPUS, e->d_name);
        FILE *f = fopen(path, "rb");
        if (!f)
            continue;
        uint8_t buf[65536];
        size_t len = fread(buf, 1, sizeof buf, f);
        fclose(f);
        LLVMFuzzerTestOneInput(buf, len);
        n++;
    }
    closedir(d);
    ok(n > 0, "replayed %u corpus inputs without a crash", n);
    return tap_done();
}
