/* journal_test.h - what the journal's unit tests share: a scratch
 * directory and paths in it, whole files read and written, and a journal
 * appended to through its API. Included by tests/unit/test_journal*.c
 * after tap.h. */
#ifndef COHORT_JOURNAL_TEST_H
#define COHORT_JOURNAL_TEST_H

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "journal_private.h"

static char jt_dir[64];

/* Makes the scratch directory, in memory where there is /dev/shm (the
 * tests sync thousands of journals): 0, or -1. */
TAP_UNUSED static int jt_setup(void)
{
    snprintf(jt_dir, sizeof jt_dir, "%s/test_journal.XXXXXX",
             access("/dev/shm", W_OK | X_OK) == 0 ? "/dev/shm" : "/tmp");
    return mkdtemp(jt_dir) && chmod(jt_dir, 0755) == 0 ? 0 : -1;
}

/* Removes it; a failure is a failed test. */
TAP_UNUSED static void jt_cleanup(void)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", jt_dir);
    if (system(cmd) != 0)
        ok(0, "cannot remove %s", jt_dir);
}

/* The path of name in the scratch directory (four at a time stay valid). */
TAP_UNUSED static const char *at(const char *name)
{
    static char p[4][256];
    static int k;
    k = (k + 1) % 4;
    snprintf(p[k], sizeof p[k], "%s/%s", jt_dir, name);
    return p[k];
}

/* The whole file, malloc'd (*len its bytes), or NULL. */
TAP_UNUSED static uint8_t *slurp(const char *path, size_t *len)
{
    struct stat st;
    int fd = open(path, O_RDONLY);
    uint8_t *b = fd >= 0 && fstat(fd, &st) == 0 ? malloc((size_t)st.st_size + 1) : NULL;
    *len = b ? (size_t)base_pread_all(fd, b, (size_t)st.st_size, 0) : 0;
    if (fd >= 0)
        close(fd);
    return b;
}

/* Replaces the file with len bytes (mode 0644); aborts on a failure. */
TAP_UNUSED static void spit(const char *path, const uint8_t *b, size_t len)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || write(fd, b, len) != (ssize_t)len)
        abort();
    close(fd);
}

TAP_UNUSED static uint64_t size_of(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (uint64_t)st.st_size : UINT64_MAX;
}

/* Opens, adds ids[0..n-1], syncs and closes: 0 or -1. */
TAP_UNUSED static int append(const char *path, const char *name, uint64_t n_items,
                             const uint64_t *ids, size_t n, struct cohort_err *err)
{
    struct journal *j;
    if (journal_open(path, name, n_items, NULL, NULL, &j, err) < 0)
        return -1;
    int rc = journal_add_committed(j, ids, n, err) < 0 || journal_sync(j, err) < 0 ? -1 : 0;
    journal_close(j);
    return rc;
}

#endif
