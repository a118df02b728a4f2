/* mps_site.h - whether a site's MPS daemon serves this machine: its default
 * control pipe exists in a directory only root controls (one any user could
 * make would let that user switch off every step's MPS, and catch the
 * steps' CUDA clients). */
#ifndef COHORT_MPS_SITE_H
#define COHORT_MPS_SITE_H

#include <stdbool.h>

#define MPS_SITE_DIR "/tmp/nvidia-mps"

/* /tmp/nvidia-mps/control exists, it and its directory owned by root, the
 * directory writable by no one else. */
bool mps_site_daemon(void);

#endif
