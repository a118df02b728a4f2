/* proc_child.c - a rank's child found by name in /proc (proc_child.h). */
#include "proc_child.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

pid_t proc_child(pid_t parent, const char *comm)
{
    char want[20];
    snprintf(want, sizeof want, "(%.15s)", comm);
    DIR *d = opendir("/proc");
    struct dirent *e;
    pid_t found = -1;
    while (d && (e = readdir(d))) {
        char path[300], stat[512];
        snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        size_t n = fread(stat, 1, sizeof stat - 1, f);
        fclose(f);
        stat[n] = 0;
        char *close_paren = strrchr(stat, ')');
        int ppid;
        if (strstr(stat, want) && close_paren &&
            sscanf(close_paren + 2, "%*c %d", &ppid) == 1 && ppid == parent)
            found = atoi(e->d_name);
    }
    if (d)
        closedir(d);
    return found;
}
