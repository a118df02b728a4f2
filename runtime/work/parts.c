/* parts.c - a published part's bytes, the output directory's names and
 * its offers' folder, made and checked (see parts.h). */
#include "parts.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <nettle/sha2.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base_text.h"

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 3; i >= 0; i--, v >>= 8)
        p[i] = (uint8_t)v;
}

static void put64(uint8_t *p, uint64_t v)
{
    put32(p, (uint32_t)(v >> 32));
    put32(p + 4, (uint32_t)v);
}

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint64_t get64(const uint8_t *p)
{
    return (uint64_t)get32(p) << 32 | get32(p + 4);
}

static void check(const uint8_t *p, size_t len, uint8_t out[PARTS_CHECK])
{
    struct sha256_ctx c;
    sha256_init(&c);
    sha256_update(&c, len, p);
    sha256_digest(&c, PARTS_CHECK, out);
}

size_t parts_head_len(uint32_t n_spans)
{
    return PARTS_FIXED + (size_t)n_spans * 16 + PARTS_CHECK;
}

void parts_head_put(uint8_t *h, uint32_t kind, const uint8_t token[PARTS_TOKEN_LEN],
                    const uint64_t *ids, size_t n, uint32_t n_spans, uint64_t data_len)
{
    memcpy(h, PARTS_MAGIC, 8);
    put32(h + 8, kind);
    put32(h + 12, n_spans);
    put64(h + 16, data_len);
    memcpy(h + 24, token, PARTS_TOKEN_LEN);
    uint8_t *s = h + PARTS_FIXED;
    for (size_t i = 0, k; i < n; i = k, s += 16) {
        for (k = i + 1; k < n && ids[k] == ids[k - 1] + 1; k++)
            ;
        put64(s, ids[i]);
        put64(s + 8, ids[k - 1] + 1);
    }
    check(h, (size_t)(s - h), s);
}

int parts_head_get(const uint8_t *p, size_t len, uint64_t n_items, struct parts_head *h,
                   struct cohort_err *err)
{
    uint8_t c[PARTS_CHECK];
    if (len < PARTS_FIXED || memcmp(p, PARTS_MAGIC, 8) != 0)
        return cohort_fail(err, "not a cohort output part");
    h->kind = get32(p + 8);
    h->n_spans = get32(p + 12);
    h->data_len = get64(p + 16);
    if (h->n_spans == 0 || h->n_spans > PARTS_SPANS_MAX)
        return cohort_fail(err, "a head with %" PRIu32 " runs of ids (1 to %u)", h->n_spans,
                           PARTS_SPANS_MAX);
    h->head_len = parts_head_len(h->n_spans);
    if (len < h->head_len)
        return 1;
    check(p, h->head_len - PARTS_CHECK, c);
    if (memcmp(c, p + h->head_len - PARTS_CHECK, PARTS_CHECK) != 0)
        return cohort_fail(err, "a head whose checksum is wrong");
    h->token = p + 24;
    h->spans = p + PARTS_FIXED;
    h->n_ids = 0;
    for (uint32_t i = 0; i < h->n_spans; i++) {
        uint64_t lo = get64(h->spans + 16 * i), hi = get64(h->spans + 16 * i + 8);
        if (lo >= hi || (i && lo <= get64(h->spans + 16 * i - 8)) || (n_items && hi > n_items))
            return cohort_fail(err, "ids [%" PRIu64 ", %" PRIu64 ") out of order or beyond "
                               "the queue", lo, hi);
        h->n_ids += hi - lo;
    }
    return 0;
}

void parts_tmp_name(const uint8_t token[PARTS_TOKEN_LEN], char out[PARTS_NAME_MAX])
{
    size_t at = strlen(PARTS_TMP_PREFIX);
    memcpy(out, PARTS_TMP_PREFIX, at);
    base_hex_encode(token, PARTS_TOKEN_LEN, out + at);
}

void parts_name(uint64_t part, char out[PARTS_NAME_MAX])
{
    snprintf(out, PARTS_NAME_MAX, PARTS_PREFIX "%012" PRIu64, part);
}

int parts_number(const char *name, uint64_t *part)
{
    size_t pl = strlen(PARTS_PREFIX);
    if (strncmp(name, PARTS_PREFIX, pl) != 0 || strlen(name) != pl + 12)
        return -1;
    const char *p = name + pl;
    uint64_t v;
    int width;
    if (base_parse_decimal(&p, NULL, 12, UINT64_MAX, &v, &width) < 0 || width != 12)
        return -1;
    *part = v;
    return 0;
}

int parts_tmp_token(const char *name, uint8_t token[PARTS_TOKEN_LEN])
{
    size_t pl = strlen(PARTS_TMP_PREFIX);
    if (strncmp(name, PARTS_TMP_PREFIX, pl) != 0 || strlen(name) != pl + 2 * PARTS_TOKEN_LEN)
        return -1;
    /* Lowercase only, as parts_tmp_name writes them. */
    if (strspn(name + pl, "0123456789abcdef") != 2 * PARTS_TOKEN_LEN)
        return -1;
    return base_hex_decode(name + pl, PARTS_TOKEN_LEN, token);
}

int parts_offers_open(int dir_fd, const char *dir, struct cohort_err *err)
{
    struct stat st, top;
    if (mkdirat(dir_fd, PARTS_OFFERS, 0700) < 0 && errno != EEXIST)
        return cohort_fail_code(err, COHORT_E_CONFIG, "output directory %s: its offers' folder "
                                PARTS_OFFERS " cannot be made: %s", dir, strerror(errno));
    int fd = openat(dir_fd, PARTS_OFFERS, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return cohort_fail_code(err, COHORT_E_CONFIG, "output directory %s: its offers' folder "
                                PARTS_OFFERS " cannot be opened (a folder, not a symbolic "
                                "link): %s: move it away", dir, strerror(errno));
    int e = fstat(fd, &st) < 0 || fstat(dir_fd, &top) < 0 ? errno : 0;
    if (!e && st.st_uid == geteuid() && (st.st_mode & 077) == 0 && st.st_dev == top.st_dev)
        return fd;
    close(fd);
    if (e)
        return cohort_fail_code(err, COHORT_E_CONFIG, "output directory %s: its offers' folder "
                                PARTS_OFFERS " cannot be read: %s", dir, strerror(e));
    if (st.st_uid == geteuid() && (st.st_mode & 077) == 0)
        return cohort_fail_code(err, COHORT_E_CONFIG, "output directory %s: its offers' folder "
                                PARTS_OFFERS " is on another filesystem (a mount point?): a "
                                "part is published as a hard link of its offer, so both must "
                                "be on one filesystem: unmount it", dir);
    return cohort_fail_code(err, COHORT_E_CONFIG, "output directory %s: its offers' folder "
                            PARTS_OFFERS " must be this user's alone (uid %u, mode 0700), not "
                            "uid %u, mode %04o: chmod 700 %s/" PARTS_OFFERS " if it is yours, "
                            "else move it away",
                            dir, (unsigned)geteuid(), (unsigned)st.st_uid,
                            (unsigned)(st.st_mode & 07777), dir);
}
