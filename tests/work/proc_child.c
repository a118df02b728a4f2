/* proc_child.c - a rank's child found by name in /proc (proc_child.h). */
#include "proc_child.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The processes named comm whose parent is parent: their count, the last
 * found in *last. */
static int each_child(pid_t parent, const char *comm, pid_t *last)
{
    char want[20];
    snprintf(want, sizeof want, "(%.15s)", comm);
    DIR *d = opendir("/proc");
    struct dirent *e;
    int n = 0;
    while (d && (e = readdir(d))) {
        char path[300], stat[512];
        snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        size_t got = fread(stat, 1, sizeof stat - 1, f);
        fclose(f);
        stat[got] = 0;
        char *close_paren = strrchr(stat, ')');
        int ppid;
        if (strstr(stat, want) && close_paren &&
            sscanf(close_paren + 2, "%*c %d", &ppid) == 1 && ppid == parent) {
            *last = atoi(e->d_name);
            n++;
        }
    }
    if (d)
        closedir(d);
    return n;
}

pid_t proc_child(pid_t parent, const char *comm)
{
    pid_t found = -1;
    each_child(parent, comm, &found);
    return found;
}

int proc_children(pid_t parent, const char *comm)
{
    pid_t last;
    return each_child(parent, comm, &last);
}
