/* work_queue.c - items spread over every task of a Slurm step at each
 * task's own speed with cohort's work queue: the last task is made 4x
 * slower than the others, and rank 0 prints each task's share and the
 * makespan, against what a static split (each task 1/N of the items, as
 * DistributedSampler does) would have taken at these speeds.
 *
 *   cc -o work_queue work_queue.c $(pkg-config --cflags --libs cohort)
 *   srun -N2 --ntasks-per-node=4 --cohort=infer ./work_queue [ITEMS] [MS]
 *
 * ITEMS: 2000 by default; MS: milliseconds one item takes a normal task
 * (a sleep stands in for the work), 2 by default. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <cohort.h>
#include <cohort_work.h>

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* This task's share: leases, "processes" and commits until the queue is
 * done. Returns the items it committed, or -1. */
static long work(struct cohort_work *w, double ms_per_item)
{
    uint64_t ids[64];
    long k, mine = 0;
    while ((k = cohort_work_lease(w, ids, 64)) > 0) {
        usleep((useconds_t)(ms_per_item * 1000 * (double)k)); /* the work */
        int rc = cohort_work_commit(w, ids, (size_t)k);
        if (rc < 0)
            return -1;
        size_t stale = 0;
        if (rc == COHORT_WORK_STALE) /* another task committed these first */
            cohort_work_stale_ids(w, &stale);
        mine += k - (long)stale;
    }
    return k < 0 ? -1 : mine;
}

int main(int argc, char **argv)
{
    long items = argc > 1 ? atol(argv[1]) : 2000;
    double ms = argc > 2 ? atof(argv[2]) : 2;
    struct cohort *c;
    struct cohort_work *w;
    if (cohort_init(&c, NULL) != 0 || items <= 0 ||
        cohort_work_open(c, "example", (uint64_t)items, NULL, &w) != 0) {
        fprintf(stderr, "%s\n", items <= 0 ? "usage: work_queue [ITEMS] [MS]" : cohort_error(c));
        cohort_finalize(c);
        return 1;
    }
    int rank = cohort_rank(c), size = cohort_size(c);
    double speed = rank == size - 1 && size > 1 ? 0.25 : 1; /* the last task: 4x slower */
    double start = now_s();
    long mine = work(w, ms / speed);
    double mine_s = now_s() - start;
    if (mine < 0 || cohort_work_close(w) != 0) {
        fprintf(stderr, "rank %d: %s\n", rank, cohort_error(c));
        cohort_finalize(c);
        return 1;
    }
    double took = now_s() - start, got[3] = {(double)mine, mine_s, took};
    double *every = malloc(sizeof got * (size_t)size);
    if (!every || cohort_allgather(c, got, sizeof got, every) != 0) {
        fprintf(stderr, "rank %d: %s\n", rank, cohort_error(c));
        cohort_finalize(c);
        return 1;
    }
    if (rank == 0) {
        double makespan = 0, total_speed = size - 1 + (size > 1 ? 0.25 : 1);
        for (int r = 0; r < size; r++) {
            printf("rank %d: %.0f items (%.1f %%) in %.2f s%s\n", r, every[3 * r],
                   100 * every[3 * r] / (double)items, every[3 * r + 1],
                   r == size - 1 && size > 1 ? ", 4x slower" : "");
            makespan = every[3 * r + 2] > makespan ? every[3 * r + 2] : makespan;
        }
        double share = (double)((items + size - 1) / size);
        double slow = size > 1 ? 4 : 1;
        printf("makespan %.2f s; a static split would take %.2f s (the slow task's %.0f items); "
               "ideal %.2f s\n",
               makespan, share * ms * slow / 1000, share,
               (double)items * ms / 1000 / total_speed);
    }
    free(every);
    return cohort_finalize(c) != 0;
}
