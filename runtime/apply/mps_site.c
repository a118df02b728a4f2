/* mps_site.c - a site's MPS daemon on this machine (see mps_site.h). */
#include "mps_site.h"

#include <sys/stat.h>

bool mps_site_daemon(void)
{
    struct stat dir, control;
    return lstat(MPS_SITE_DIR, &dir) == 0 && S_ISDIR(dir.st_mode) && dir.st_uid == 0 &&
           !(dir.st_mode & (S_IWGRP | S_IWOTH)) &&
           lstat(MPS_SITE_DIR "/control", &control) == 0 && control.st_uid == 0;
}
