/* proc_child.h - for the multi-process tests (work_check, streams_check):
 * a child process of a rank found by its name in /proc (the coordinator
 * rank 0 started, the relay a node's first rank started). */
#ifndef COHORT_TEST_PROC_CHILD_H
#define COHORT_TEST_PROC_CHILD_H

#include <sys/types.h>

/* The process named comm (its first 15 bytes, as /proc/PID/stat holds
 * it) whose parent is parent; -1 when there is none. */
pid_t proc_child(pid_t parent, const char *comm);

/* How many processes named comm have parent as theirs. */
int proc_children(pid_t parent, const char *comm);

#endif
