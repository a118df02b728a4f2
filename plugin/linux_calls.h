/* linux_calls.h - the numbers of the Linux system calls the plugin makes
 * through syscall(2) that older C libraries have no name for: glibc names
 * SYS_pidfd_getfd from 2.32 and SYS_close_range from 2.34, so a plugin
 * built on such a system takes the kernel headers' __NR_ number, else the
 * number of the system call table that every architecture shares from
 * Linux 5.1 on (alpha and MIPS add an offset to it, but their kernel
 * headers always give __NR_). One place defines them, for every file of
 * the plugin that calls them. */
#ifndef COHORT_LINUX_CALLS_H
#define COHORT_LINUX_CALLS_H

#include <sys/syscall.h>
#include <sys/wait.h>

#ifndef SYS_pidfd_send_signal
#ifdef __NR_pidfd_send_signal
#define SYS_pidfd_send_signal __NR_pidfd_send_signal
#else
#define SYS_pidfd_send_signal 424
#endif
#endif

#ifndef SYS_pidfd_open
#ifdef __NR_pidfd_open
#define SYS_pidfd_open __NR_pidfd_open
#else
#define SYS_pidfd_open 434
#endif
#endif

#ifndef SYS_close_range
#ifdef __NR_close_range
#define SYS_close_range __NR_close_range
#else
#define SYS_close_range 436
#endif
#endif

#ifndef SYS_pidfd_getfd
#ifdef __NR_pidfd_getfd
#define SYS_pidfd_getfd __NR_pidfd_getfd
#else
#define SYS_pidfd_getfd 438
#endif
#endif

/* waitid's P_PIDFD (Linux 5.4), which glibc names from 2.36 only (as an
 * enumerator, so that #ifndef cannot test for it). */
#define COHORT_P_PIDFD ((idtype_t)3)

#endif
