/* layout.c - the layout of libcohort's public structs as the C compiler
 * lays them out, one line per member ("STRUCT MEMBER OFFSET SIZE") and
 * per struct ("STRUCT - 0 SIZEOF"), for the check of the Python package's
 * ctypes structs (tests/python/test_prototypes.py). */
#include <stddef.h>
#include <stdio.h>

#include "cohort.h"
#include "cohort_streams.h"
#include "cohort_work.h"

#define M(s, m) printf("%s %s %zu %zu\n", #s, #m, offsetof(struct s, m), sizeof(((struct s *)0)->m))
#define S(s) printf("%s - 0 %zu\n", #s, sizeof(struct s))

int main(void)
{
    S(cohort_opts), M(cohort_opts, size), M(cohort_opts, timeout_s);
    S(cohort_work_opts), M(cohort_work_opts, size), M(cohort_work_opts, journal);
    M(cohort_work_opts, lease_timeout_s), M(cohort_work_opts, max_attempts);
    M(cohort_work_opts, output);
    S(cohort_work_status), M(cohort_work_status, total), M(cohort_work_status, committed);
    M(cohort_work_status, leased), M(cohort_work_status, queued);
    M(cohort_work_status, set_aside);
    S(cohort_stream_event), M(cohort_stream_event, type), M(cohort_stream_event, key);
    M(cohort_stream_event, epoch);
    S(cohort_streams_opts), M(cohort_streams_opts, size), M(cohort_streams_opts, epsilon);
    M(cohort_streams_opts, lease_timeout_s), M(cohort_streams_opts, shed_after_s);
    S(cohort_streams_status), M(cohort_streams_status, streams);
    M(cohort_streams_status, moving), M(cohort_streams_status, unplaced);
    M(cohort_streams_status, moves), M(cohort_streams_status, workers);
    return 0;
}
