/* redis_queue.c - the Redis side of the work queue's throughput benchmark
 * (bench/work-bench.sh): the "reliable queue" pattern of Redis's own
 * documentation, for comparison with cohort_work_lease/commit of one item.
 * It owns the filling of the queue, the client processes and their timing;
 * the script owns the server (started on a private port and Unix socket).
 *
 *   redis_queue ADDRESS CLIENTS ITEMS
 *
 * ADDRESS: HOST:PORT, or the path of a Unix socket. Empties the lists
 * "queue" and "processing", fills "queue" with the ids 0..ITEMS-1 (RPUSH of
 * 1000 ids a command, pipelined; not timed) and one "stop" per client, then
 * forks CLIENTS processes. Each connects, says it is ready, and once all
 * are released at one instant loops: BLMOVE queue processing LEFT RIGHT 0
 * (the item moves to "processing" while worked on), then LREM processing 1
 * ITEM (done), one item at a time, until it moves a "stop". Prints
 * "elapsed_ns T items N" (from the release to the last client's report)
 * and exits 0 when the clients took ITEMS items in all and both lists are
 * empty. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#define BATCH 1000    /* ids per RPUSH */
#define PIPELINED 64  /* RPUSH commands in flight */
#define MAX_CLIENTS 1024

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static redisContext *connect_to(const char *addr)
{
    redisContext *r;
    const char *colon = strrchr(addr, ':');
    if (addr[0] == '/' || !colon) {
        r = redisConnectUnix(addr);
    } else {
        char host[256];
        snprintf(host, sizeof host, "%.*s", (int)(colon - addr), addr);
        r = redisConnect(host, atoi(colon + 1));
    }
    if (!r || r->err) {
        fprintf(stderr, "redis_queue: cannot connect to %s: %s\n", addr,
                r ? r->errstr : "out of memory");
        return NULL;
    }
    return r;
}

/* Runs argv; 0 when the reply is not an error (its integer in *n). */
static int command(redisContext *r, int argc, const char **argv, long long *n)
{
    redisReply *rep = redisCommandArgv(r, argc, argv, NULL);
    int ok = rep && rep->type != REDIS_REPLY_ERROR;
    if (!ok)
        fprintf(stderr, "redis_queue: %s: %s\n", argv[0], rep ? rep->str : r->errstr);
    if (ok && n)
        *n = rep->type == REDIS_REPLY_INTEGER ? rep->integer : -1;
    freeReplyObject(rep);
    return ok ? 0 : -1;
}

/* Waits for the reply of one pipelined command. */
static int reply(redisContext *r)
{
    void *rep = NULL;
    int ok = redisGetReply(r, &rep) == REDIS_OK &&
             ((redisReply *)rep)->type != REDIS_REPLY_ERROR;
    if (!ok)
        fprintf(stderr, "redis_queue: RPUSH: %s\n", rep ? ((redisReply *)rep)->str : r->errstr);
    freeReplyObject(rep);
    return ok ? 0 : -1;
}

/* Appends one RPUSH of ids lo..hi-1 and of stops "stop"s. */
static void append_push(redisContext *r, long long lo, long long hi, int stops)
{
    static char buf[BATCH][24];
    static const char *argv[BATCH + 2 + MAX_CLIENTS];
    int argc = 2;
    argv[0] = "RPUSH";
    argv[1] = "queue";
    for (long long id = lo; id < hi; id++, argc++) {
        snprintf(buf[id - lo], sizeof buf[id - lo], "%lld", id);
        argv[argc] = buf[id - lo];
    }
    for (int i = 0; i < stops; i++)
        argv[argc++] = "stop";
    redisAppendCommandArgv(r, argc, argv, NULL);
}

/* Empties both lists and fills the queue: ITEMS ids, then one stop per client. */
static int fill(redisContext *r, long long items, int clients)
{
    const char *del[] = {"DEL", "queue", "processing"};
    if (command(r, 3, del, NULL) < 0)
        return -1;
    long long sent = 0, answered = 0;
    for (long long lo = 0; lo < items;) {
        long long hi = lo + BATCH < items ? lo + BATCH : items;
        append_push(r, lo, hi, hi == items ? clients : 0);
        lo = hi;
        if (++sent - answered >= PIPELINED) {
            if (reply(r) < 0)
                return -1;
            answered++;
        }
    }
    for (; answered < sent; answered++)
        if (reply(r) < 0)
            return -1;
    const char *len[] = {"LLEN", "queue"};
    long long n = -1;
    if (command(r, 2, len, &n) < 0 || n != items + clients) {
        fprintf(stderr, "redis_queue: the queue holds %lld items, not %lld\n", n, items + clients);
        return -1;
    }
    return 0;
}

/* A client: BLMOVE then LREM, one item at a time, until a "stop". Writes
 * its count of items to out once done. */
static int client(const char *addr, int ready, int go, int out)
{
    redisContext *r = connect_to(addr);
    char c = 'r';
    if (!r || write(ready, &c, 1) != 1)
        return 1;
    while (read(go, &c, 1) < 0 && errno == EINTR)
        ; /* end of file: everyone goes */
    const char *move[] = {"BLMOVE", "queue", "processing", "LEFT", "RIGHT", "0"};
    const char *rem[] = {"LREM", "processing", "1", NULL};
    long long count = 0;
    for (;;) {
        redisReply *rep = redisCommandArgv(r, 6, move, NULL);
        if (!rep || rep->type != REDIS_REPLY_STRING) {
            fprintf(stderr, "redis_queue: BLMOVE: %s\n",
                    rep && rep->type == REDIS_REPLY_ERROR ? rep->str : r->errstr);
            return 1;
        }
        int stop = strcmp(rep->str, "stop") == 0;
        rem[3] = rep->str;
        long long removed;
        int rc = command(r, 4, rem, &removed);
        freeReplyObject(rep);
        if (rc < 0 || removed != 1)
            return 1;
        if (stop)
            break;
        count++;
    }
    redisFree(r);
    return write(out, &count, sizeof count) == (ssize_t)sizeof count ? 0 : 1;
}

/* Releases the clients at once and times them: 0 or -1. */
static int release(int ready, int go, int out, int clients, long long *items_done,
                   long long *elapsed)
{
    char c;
    for (int i = 0; i < clients; i++)
        if (read(ready, &c, 1) != 1)
            return -1; /* a client failed to connect */
    long long t0 = now_ns(), count;
    close(go);
    *items_done = 0;
    for (int i = 0; i < clients; i++) {
        if (read(out, &count, sizeof count) != (ssize_t)sizeof count)
            return -1;
        *items_done += count;
    }
    *elapsed = now_ns() - t0;
    return 0;
}

/* Starts the clients, releases them, waits for them: 0 or -1. */
static int run(const char *addr, int clients, long long *items_done, long long *elapsed)
{
    int ready[2], go[2], out[2];
    pid_t pids[MAX_CLIENTS];
    if (pipe(ready) || pipe(go) || pipe(out))
        return -1;
    int started = 0, rc = 0;
    for (; started < clients && rc == 0; started++) {
        pid_t p = fork();
        if (p == 0) {
            close(go[1]);
            close(ready[0]);
            close(out[0]);
            int bad = client(addr, ready[1], go[0], out[1]);
            _exit(bad);
        }
        pids[started] = p;
        rc = p < 0 ? -1 : 0;
    }
    close(ready[1]);
    close(go[0]);
    close(out[1]);
    if (rc == 0)
        rc = release(ready[0], go[1], out[0], clients, items_done, elapsed);
    for (int i = 0; rc < 0 && i < started; i++)
        if (pids[i] > 0)
            kill(pids[i], SIGKILL);
    int status;
    while (wait(&status) > 0)
        rc |= !WIFEXITED(status) || WEXITSTATUS(status) != 0 ? -1 : 0;
    return rc;
}

int main(int argc, char **argv)
{
    if (argc != 4 || atoi(argv[2]) < 1 || atoi(argv[2]) > MAX_CLIENTS || atoll(argv[3]) < 1) {
        fprintf(stderr, "usage: redis_queue HOST:PORT|SOCKET CLIENTS ITEMS\n");
        return 2;
    }
    int clients = atoi(argv[2]);
    long long items = atoll(argv[3]), done, elapsed;
    signal(SIGPIPE, SIG_IGN);
    redisContext *r = connect_to(argv[1]);
    if (!r || fill(r, items, clients) < 0)
        return 1;
    if (run(argv[1], clients, &done, &elapsed) < 0) {
        fprintf(stderr, "redis_queue: a client failed\n");
        return 1;
    }
    const char *lq[] = {"LLEN", "queue"}, *lp[] = {"LLEN", "processing"};
    long long q = -1, p = -1;
    if (command(r, 2, lq, &q) < 0 || command(r, 2, lp, &p) < 0 || q || p || done != items) {
        fprintf(stderr, "redis_queue: %lld of %lld items taken; %lld left queued, %lld "
                        "processing\n", done, items, q, p);
        return 1;
    }
    redisFree(r);
    printf("elapsed_ns %lld items %lld\n", elapsed, items);
    return 0;
}
