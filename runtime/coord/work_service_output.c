/* work_service_output.c - the work coordinator's side of published results
 * (cohort_work_commit_output). It opens and checks the output directory and
 * its offers' folder (parts.h). It checks a worker's offered part (a file
 * of this user's, as long as it says, never read), records it in the
 * journal with its commit and, once the journal is synced, links it under
 * its part's name. At start it finishes the publications the journal holds
 * (after a crash between the sync and the link) and clears away what no
 * publication names. The coordinator links and deletes files; it never
 * reads or copies results.
 *
 * Offers live in the offers' folder, .offers (this user's, 0700), never in
 * the directory itself, which may be open to readers (0755): no other user
 * can reach an offer, so none can hard-link it (with
 * fs.protected_hardlinks=0 anyone may link a file it cannot read) and make
 * its commit fail for two links. Offers an older cohort left in the
 * directory are moved into the folder at start.
 *
 * Durability: the worker syncs its offer's bytes; the offers' folder is
 * synced before the journal records the round's offers (their names
 * survive a power loss once the record does), the directory after their
 * links. Publishing a part hard-links the offered file to its part's name
 * (the folder is on the directory's filesystem), then unlinks the offered
 * name. A link never replaces a file, so an existing part is never
 * overwritten, on any filesystem; a crash between the two leaves both
 * names, which the next start tells apart. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base_sys.h"
#include "work_service_private.h"
#include "journal.h"
#include "parts.h"

_Static_assert(PARTS_TOKEN_LEN == JOURNAL_TOKEN_LEN &&
                   PARTS_TOKEN_LEN == sizeof((struct work_service_pending *)0)->token,
               "one token length");

/* Fails with err naming the output directory, what is wrong and errno e
 * (none when 0). Returns -1. */
static int out_fail(struct work_service *co, struct cohort_err *err, const char *what, int e)
{
    return cohort_fail_code(err, COHORT_E_CONFIG, "output directory %s: %s%s%s",
                            co->cfg->output, what, e ? ": " : "", e ? strerror(e) : "");
}

/* Opens the directory (made 0700 when missing; not through a symbolic
 * link) and checks that it is this user's and not writable by group or
 * others, since whoever can write it can plant or remove parts. Then it
 * takes the directory's lock, so that one coordinator at a time publishes
 * there, and opens its offers' folder (made when missing). Returns 0, or
 * -1 with err. */
static int open_dir(struct work_service *co, struct cohort_err *err)
{
    struct stat st;
    if (mkdir(co->cfg->output, 0700) < 0 && errno != EEXIST)
        return out_fail(co, err, "cannot be made (its parent must exist)", errno);
    co->out_fd = open(co->cfg->output, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (co->out_fd < 0)
        return out_fail(co, err, "cannot be opened (a directory, not a symbolic link)", errno);
    if (fstat(co->out_fd, &st) < 0)
        return out_fail(co, err, "cannot be read", errno);
    if (st.st_uid != geteuid() || (st.st_mode & 022))
        return out_fail(co, err, "belongs to another user or is writable by its group or "
                        "others: give the queue a directory of your own (chmod go-w)", 0);
    co->lock_fd = openat(co->out_fd, ".lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
    if (co->lock_fd < 0 || fcntl(co->lock_fd, F_SETLK, &fl) < 0) {
        int e = errno;
        if (co->lock_fd >= 0 && fcntl(co->lock_fd, F_GETLK, &fl) == 0 && fl.l_type != F_UNLCK) {
            char what[200];
            snprintf(what, sizeof what, "in use by another queue's coordinator (pid %ld): give "
                     "each queue a directory of its own", (long)fl.l_pid);
            return out_fail(co, err, what, 0);
        }
        return out_fail(co, err, "cannot be locked", e);
    }
    co->offers_fd = parts_offers_open(co->out_fd, co->cfg->output, err);
    return co->offers_fd < 0 ? -1 : 0;
}

int work_service_output_replayed(struct work_service *co, const struct journal_event *ev,
                                 struct cohort_err *err)
{
    if (ev->part > PARTS_NUMBER_MAX)
        return cohort_fail(err, "the journal publishes part %llu, beyond %llu",
                           (unsigned long long)ev->part, (unsigned long long)PARTS_NUMBER_MAX);
    if (work_service_output_offered(co, ev->part, ev->token) < 0)
        return cohort_fail(err, "out of memory");
    if (ev->part >= co->next_part)
        co->next_part = ev->part + 1;
    return 0;
}

/* Links part p's offered file to its name and unlinks the offered one.
 * Returns 0, or -1 with err. */
static int publish(struct work_service *co, const struct work_service_pending *p,
                   struct cohort_err *err)
{
    char tmp[PARTS_NAME_MAX], part[PARTS_NAME_MAX], what[320];
    parts_tmp_name(p->token, tmp);
    parts_name(p->part, part);
    if (linkat(co->offers_fd, tmp, co->out_fd, part, 0) == 0) {
        if (unlinkat(co->offers_fd, tmp, 0) < 0 && errno != ENOENT)
            return out_fail(co, err, "cannot remove an offered part", errno);
        return 0;
    }
    int e = errno;
    snprintf(what, sizeof what, "cannot publish %s from " PARTS_OFFERS "/%s (the journal "
             "records it%s)", part, tmp,
             e == ENOENT ? "; the offered file is gone: removed by someone?" : "");
    return out_fail(co, err, what, e);
}

/* A listing holds what the directory holds, listed once at start: the
 * offers' tokens (in the offers' folder) and the parts' numbers, sorted. */
struct listing {
    uint8_t (*tok)[PARTS_TOKEN_LEN];
    bool *used;
    uint64_t *part;
    size_t n_tok, n_part, cap_tok, cap_part;
};

static int cmp_tok(const void *a, const void *b)
{
    return memcmp(a, b, PARTS_TOKEN_LEN);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Adds the offers' tokens of folder dir_fd to l (and, with parts, the
 * parts' numbers). Returns 0, -1 when it cannot be listed (errno), or -2
 * when out of memory. */
static int scan(int dir_fd, struct listing *l, bool parts)
{
    int fd = dup(dir_fd);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        errno = e;
        return -1;
    }
    struct dirent *de;
    uint8_t t[PARTS_TOKEN_LEN];
    uint64_t n;
    int rc = 0;
    while (rc == 0 && (de = readdir(d))) {
        if (parts_tmp_token(de->d_name, t) == 0) {
            rc = base_grow((void **)&l->tok, &l->cap_tok, l->n_tok + 1, sizeof *l->tok);
            if (rc == 0)
                memcpy(l->tok[l->n_tok++], t, PARTS_TOKEN_LEN);
        } else if (parts && parts_number(de->d_name, &n) == 0) {
            rc = base_grow((void **)&l->part, &l->cap_part, l->n_part + 1, sizeof *l->part);
            if (rc == 0)
                l->part[l->n_part++] = n;
        }
    }
    closedir(d);
    return rc < 0 ? -2 : 0;
}

/* Returns whether name a in folder a_fd and name b in folder b_fd are one
 * file. */
static bool same_file(int a_fd, const char *a, int b_fd, const char *b)
{
    struct stat x, y;
    return fstatat(a_fd, a, &x, AT_SYMLINK_NOFOLLOW) == 0 &&
           fstatat(b_fd, b, &y, AT_SYMLINK_NOFOLLOW) == 0 && x.st_dev == y.st_dev &&
           x.st_ino == y.st_ino;
}

/* Moves the offers an older cohort left in the directory itself (l's
 * tokens) into the offers' folder: it links each there, syncs the folder,
 * then removes each old name. A crash in between leaves two names of one
 * file, which the next start moves again. Returns 0, or -1 with err. */
static int move_old_offers(struct work_service *co, const struct listing *l, struct cohort_err *err)
{
    char name[PARTS_NAME_MAX];
    for (size_t i = 0; i < l->n_tok; i++) {
        parts_tmp_name(l->tok[i], name);
        int e = linkat(co->out_fd, name, co->offers_fd, name, 0) < 0 ? errno : 0;
        if (e && !(e == EEXIST && same_file(co->out_fd, name, co->offers_fd, name)))
            return out_fail(co, err, "cannot move an offer of an older cohort into "
                            PARTS_OFFERS, e);
    }
    if (l->n_tok && fsync(co->offers_fd) < 0)
        return out_fail(co, err, "cannot be synced", errno);
    for (size_t i = 0; i < l->n_tok; i++) {
        parts_tmp_name(l->tok[i], name);
        if (unlinkat(co->out_fd, name, 0) < 0 && errno != ENOENT)
            return out_fail(co, err, "cannot remove an offer of an older cohort", errno);
    }
    return 0;
}

/* Lists the parts of the directory into l (moving its old offers), then
 * the offers of its folder, sorted. Returns 0, or -1 with err. */
static int list_dir(struct work_service *co, struct listing *l, struct cohort_err *err)
{
    int rc = scan(co->out_fd, l, true);
    if (rc == 0 && move_old_offers(co, l, err) < 0)
        return -1;
    l->n_tok = 0;
    if (rc == 0)
        rc = scan(co->offers_fd, l, false);
    if (rc == -1)
        return out_fail(co, err, "cannot be listed", errno);
    if (rc < 0 || !(l->used = calloc(l->n_tok + 1, sizeof *l->used)))
        return cohort_fail(err, "out of memory listing output directory %s", co->cfg->output);
    if (l->n_tok) /* qsort never gets a null array, even for none. */
        qsort(l->tok, l->n_tok, sizeof *l->tok, cmp_tok);
    if (l->n_part)
        qsort(l->part, l->n_part, sizeof *l->part, cmp_u64);
    return 0;
}

/* Finishes a recorded publication at start. An offer not linked (a crash
 * after the sync) is linked now. When both the offer and the part are
 * there (a crash between the two), the offer's name is removed once it is
 * the part's file. A part linked alone is done. When neither is there,
 * someone lost them, and the start is refused. Returns 0, or -1 with err. */
static int finish(struct work_service *co, struct listing *l, const struct work_service_pending *p,
                  struct cohort_err *err)
{
    char tmp[PARTS_NAME_MAX], part[PARTS_NAME_MAX], what[400];
    const uint8_t(*t)[PARTS_TOKEN_LEN] =
        l->n_tok ? bsearch(p->token, l->tok, l->n_tok, sizeof *l->tok, cmp_tok) : NULL;
    bool linked = l->n_part &&
                  bsearch(&p->part, l->part, l->n_part, sizeof *l->part, cmp_u64) != NULL;
    parts_tmp_name(p->token, tmp);
    parts_name(p->part, part);
    if (t)
        l->used[t - l->tok] = true;
    if (t && !linked)
        return publish(co, p, err);
    if (t && same_file(co->offers_fd, tmp, co->out_fd, part))
        return unlinkat(co->offers_fd, tmp, 0) < 0 ? out_fail(co, err, "cannot remove an offer",
                                                              errno) : 0;
    if (linked && !t)
        return 0;
    snprintf(what, sizeof what, "%s, which the journal of queue '%s' records as published "
             "from " PARTS_OFFERS "/%s, %s: move the directory and the journal away to start "
             "the queue afresh",
             part, co->cfg->name, tmp, t ? "is another file" : "is missing, and so is the offer");
    return out_fail(co, err, what, 0);
}

/* Clears the directory at start, after the recorded publications. Offers
 * that no record names were never committed (their writer died, or the
 * commit was not synced), so they are removed. A part numbered beyond the
 * journal's is another queue's or an old run's, so the start is refused.
 * Returns 0, or -1 with err. */
static int clear(struct work_service *co, const struct listing *l, struct cohort_err *err)
{
    char name[PARTS_NAME_MAX];
    for (size_t i = 0; i < l->n_tok; i++) {
        parts_tmp_name(l->tok[i], name);
        if (!l->used[i] && unlinkat(co->offers_fd, name, 0) < 0 && errno != ENOENT)
            return out_fail(co, err, "cannot remove an offer never committed", errno);
    }
    if (l->n_part && l->part[l->n_part - 1] >= co->next_part) {
        char what[400];
        parts_name(l->part[l->n_part - 1], name);
        snprintf(what, sizeof what, "holds %s, which the journal of queue '%s' never "
                 "published: give the queue an empty directory of its own", name, co->cfg->name);
        return out_fail(co, err, what, 0);
    }
    return 0;
}

int work_service_output_open(struct work_service *co, struct cohort_err *err)
{
    co->out_fd = co->lock_fd = co->offers_fd = -1;
    if (!co->cfg->output[0] && co->n_pend)
        return cohort_fail_code(err, COHORT_E_CONFIG,
                                "journal %s records results published in an output directory: "
                                "open queue '%s' with that directory as its output",
                                co->cfg->journal, co->cfg->name);
    if (!co->cfg->output[0])
        return 0;
    struct listing l = {0};
    int rc = open_dir(co, err) < 0 || list_dir(co, &l, err) < 0 ? -1 : 0;
    for (size_t i = 0; rc == 0 && i < co->n_pend; i++)
        rc = finish(co, &l, &co->pend[i], err);
    if (rc == 0)
        rc = clear(co, &l, err);
    free(l.tok);
    free(l.used);
    free(l.part);
    co->n_pend = 0;
    if (rc == 0 && (fsync(co->offers_fd) < 0 || fsync(co->out_fd) < 0))
        rc = out_fail(co, err, "cannot be synced", errno);
    return rc;
}

/* Checks that the offered file of token is this user's regular file, with
 * one link, of size bytes. Returns 0, or -1 with why. */
static int offered(struct work_service *co, const uint8_t *token, uint64_t size, char *why,
                   size_t len)
{
    char tmp[PARTS_NAME_MAX];
    struct stat st;
    parts_tmp_name(token, tmp);
    if (fstatat(co->offers_fd, tmp, &st, AT_SYMLINK_NOFOLLOW) < 0)
        snprintf(why, len, "the coordinator (on %s) finds no file %s in %s/" PARTS_OFFERS
                 " (%s): the output directory must be on a filesystem every node of the step "
                 "sees", co->host, tmp, co->cfg->output, strerror(errno));
    else if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() || st.st_nlink != 1)
        snprintf(why, len, "%s in %s/" PARTS_OFFERS " is not a file of this user's with one "
                 "link", tmp, co->cfg->output);
    else if ((uint64_t)st.st_size != size)
        snprintf(why, len, "%s in %s/" PARTS_OFFERS " holds %lld bytes, not the %" PRIu64
                 " offered", tmp, co->cfg->output, (long long)st.st_size, size);
    else
        return 0;
    return -1;
}

void work_service_output_discard(struct work_service *co, const uint8_t *token)
{
    char tmp[PARTS_NAME_MAX];
    parts_tmp_name(token, tmp);
    if (co->offers_fd >= 0)
        (void)unlinkat(co->offers_fd, tmp, 0);
}

int work_service_output_offer(struct work_service *co, const uint8_t *token, uint64_t data_len,
                              size_t n, char *why, size_t len)
{
    if (co->out_fd < 0) {
        snprintf(why, len, "queue '%s' was opened without an output directory",
                 co->cfg->name);
        return -1;
    }
    size_t spans = work_span_count(co->ids, n);
    if (spans > PARTS_SPANS_MAX || data_len > UINT64_MAX / 2) {
        snprintf(why, len, "a part of %zu runs of ids (at most %u) or of %" PRIu64 " bytes",
                 spans, PARTS_SPANS_MAX, data_len);
        return -1;
    }
    return offered(co, token, parts_head_len((uint32_t)spans) + data_len, why, len);
}

int work_service_output_offered(struct work_service *co, uint64_t part, const uint8_t *token)
{
    if (base_grow((void **)&co->pend, &co->cap_pend, co->n_pend + 1, sizeof *co->pend) < 0)
        return -1;
    struct work_service_pending *p = &co->pend[co->n_pend++];
    p->part = part;
    memcpy(p->token, token, PARTS_TOKEN_LEN);
    return 0;
}

int work_service_output_durable(struct work_service *co, struct cohort_err *err)
{
    if (co->n_pend && fsync(co->offers_fd) < 0)
        return out_fail(co, err, "cannot be synced", errno);
    return 0;
}

int work_service_output_publish(struct work_service *co, struct cohort_err *err)
{
    for (size_t i = 0; i < co->n_pend; i++)
        if (publish(co, &co->pend[i], err) < 0)
            return -1;
    co->published += co->n_pend;
    if (co->n_pend && fsync(co->out_fd) < 0)
        return out_fail(co, err, "cannot be synced", errno);
    co->n_pend = 0;
    return 0;
}

void work_service_output_close(struct work_service *co)
{
    if (co->lock_fd >= 0)
        close(co->lock_fd);
    if (co->offers_fd >= 0)
        close(co->offers_fd);
    if (co->out_fd >= 0)
        close(co->out_fd);
    co->out_fd = co->lock_fd = co->offers_fd = -1;
    free(co->pend);
    co->pend = NULL;
}
