/* journal_format.c - the journal's bytes (see journal.h): big-endian
 * integers, the checks, the header (and the line for one that is bad or of
 * another format), frame heads; and opening the file, which must be the
 * journal its user named and writable by its owner alone. */
#include "journal_private.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <nettle/sha2.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define JMAGIC "COHORTJ2"
#define JVERSION '2'

const uint8_t jframe_mark[4] = {'C', 'J', 'F', 'R'};

void jput32(uint8_t *p, uint32_t v)
{
    for (int i = 3; i >= 0; i--, v >>= 8)
        p[i] = (uint8_t)v;
}

void jput64(uint8_t *p, uint64_t v)
{
    for (int i = 7; i >= 0; i--, v >>= 8)
        p[i] = (uint8_t)v;
}

uint32_t jget32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

uint64_t jget64(const uint8_t *p)
{
    return (uint64_t)jget32(p) << 32 | jget32(p + 4);
}

void jcheck(const uint8_t *p, size_t len, uint8_t out[JCHECK_LEN])
{
    struct sha256_ctx c;
    sha256_init(&c);
    sha256_update(&c, len, p);
    sha256_digest(&c, JCHECK_LEN, out);
}

/* ---- the header ---- */

void jhdr_encode(uint8_t h[JHDR_LEN], const char *name, uint64_t n_items)
{
    size_t nl = strlen(name);
    memset(h, 0, JHDR_LEN);
    memcpy(h, JMAGIC, 8);
    jput64(h + 8, n_items);
    jput32(h + 16, (uint32_t)nl);
    memcpy(h + 20, name, nl);
    jcheck(h, JHDR_LEN - JCHECK_LEN, h + JHDR_LEN - JCHECK_LEN);
}

static int bad_header(struct cohort_err *err, const char *path, const char *why)
{
    return cohort_fail_code(err, COHORT_E_CONFIG,
                            "journal %s has a bad header at byte 0 (%s): give this queue "
                            "another journal, or if this is its damaged journal, move it "
                            "away to start the queue afresh",
                            path, why);
}

int jhdr_decode(const uint8_t *h, size_t len, const char *path, struct jhdr *out,
                struct cohort_err *err)
{
    uint8_t c[JCHECK_LEN];
    if (len < 8 || memcmp(h, JMAGIC, 7) != 0)
        return bad_header(err, path, "not a cohort journal");
    if (h[7] != JVERSION && h[7] >= '1' && h[7] <= '9')
        return cohort_fail_code(err, COHORT_E_CONFIG,
                                "journal %s is of format %c, and this cohort reads format %c "
                                "only: finish its queue with the cohort that wrote it, or move "
                                "it away to start the queue afresh",
                                path, h[7], JVERSION);
    if (h[7] != JVERSION)
        return bad_header(err, path, "not a cohort journal");
    if (len < JHDR_LEN)
        return bad_header(err, path, "cut short");
    jcheck(h, JHDR_LEN - JCHECK_LEN, c);
    if (memcmp(c, h + JHDR_LEN - JCHECK_LEN, JCHECK_LEN) != 0)
        return bad_header(err, path, "a wrong checksum");
    uint32_t nl = jget32(h + 16);
    out->n_items = jget64(h + 8);
    if (nl > JOURNAL_NAME_MAX || memchr(h + 20, 0, nl) || out->n_items > JOURNAL_MAX_ITEMS)
        return bad_header(err, path, "a bad queue name or size");
    memcpy(out->name, h + 20, nl);
    out->name[nl] = 0;
    out->key = jget64(h + JHDR_LEN - JCHECK_LEN);
    return 0;
}

/* ---- frame heads ---- */

/* A step of the head's check: bijective in h for each w, so a change of
 * any one word always changes the result. Cheap, since the search for a
 * later frame checks a head wherever the mark appears. */
static uint64_t mix(uint64_t h, uint64_t w)
{
    h ^= w;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdu;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53u;
    return h ^ h >> 33;
}

static uint64_t head_check(const uint8_t *h, uint64_t key)
{
    return mix(mix(mix(key, jget64(h)), jget64(h + 8)), jget64(h + 16));
}

void jframe_seal(uint8_t *h, uint64_t key, uint64_t seq, uint32_t len)
{
    memcpy(h, jframe_mark, sizeof jframe_mark);
    jput32(h + 4, len);
    jput64(h + 8, seq);
    jcheck(h + JFRAME_HEAD, len, h + 16);
    jput64(h + 24, head_check(h, key));
}

int jframe_head(const uint8_t *h, uint64_t key, struct jframe *f)
{
    f->len = jget32(h + 4);
    if (memcmp(h, jframe_mark, sizeof jframe_mark) != 0 || f->len < JREC_HEAD + JASIDE_LEN ||
        f->len > JFRAME_MAX || jget64(h + 24) != head_check(h, key))
        return 0;
    f->seq = jget64(h + 8);
    memcpy(f->check, h + 16, JCHECK_LEN);
    return 1;
}

/* ---- the file ---- */

static int open_fail(const char *path, struct cohort_err *err)
{
    struct stat st;
    if (errno == ELOOP && lstat(path, &st) == 0 && S_ISLNK(st.st_mode))
        return cohort_fail_code(err, COHORT_E_AUTH,
                                "journal %s is a symbolic link, which cohort does not follow (it "
                                "could lead to another journal): give the path of the journal "
                                "file itself",
                                path);
    return cohort_fail_code(err, COHORT_E_CONFIG, "cannot open journal %s: %s", path,
                            strerror(errno));
}

/* Checks the file open as fd: regular, one link, writable by its owner
 * alone, and (own) that owner this user. */
static int vet(int fd, const char *path, int own, struct cohort_err *err)
{
    struct stat st;
    if (fstat(fd, &st) < 0)
        return cohort_fail_code(err, COHORT_E_CONFIG, "cannot open journal %s: %s", path,
                                strerror(errno));
    if (!S_ISREG(st.st_mode))
        return cohort_fail_code(err, COHORT_E_CONFIG, "journal %s is not a regular file", path);
    if (own && st.st_uid != geteuid()) /* planted by another user, it could claim items done */
        return cohort_fail_code(err, COHORT_E_AUTH,
                                "journal %s belongs to uid %u, not to this user (uid %u): give a "
                                "path only you can write",
                                path, (unsigned)st.st_uid, (unsigned)geteuid());
    if (st.st_nlink > 1)
        return cohort_fail_code(err, COHORT_E_AUTH,
                                "journal %s has %ju hard links (another name for the same file, "
                                "which someone else could have made): give a journal with one "
                                "link; remove the other or copy the journal to a new file",
                                path, (uintmax_t)st.st_nlink);
    if (st.st_mode & (S_IWGRP | S_IWOTH))
        return cohort_fail_code(err, COHORT_E_AUTH,
                                "journal %s can be written by its group or by others (mode "
                                "%04o), who could claim its items done: chmod go-w it, or give "
                                "a path only you can write",
                                path, (unsigned)(st.st_mode & 07777));
    return 0;
}

int jfile_open(const char *path, int writer, int *created, struct cohort_err *err)
{
    int flags = O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW; /* O_NONBLOCK: a FIFO does not hang */
    int fd = writer ? open(path, flags | O_RDWR | O_CREAT | O_EXCL, 0644) : -1;
    *created = fd >= 0;
    if (fd < 0 && (!writer || errno == EEXIST))
        fd = open(path, flags | (writer ? O_RDWR : O_RDONLY));
    if (fd < 0)
        return open_fail(path, err);
    if (vet(fd, path, writer, err) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}
