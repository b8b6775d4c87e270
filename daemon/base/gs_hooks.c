/* The daemon's test hooks (gs_hooks.h): every GSORTD_TEST_* variable is
 * read here and nowhere else, once, into one struct the daemon's files
 * consult by name, so that what a test can force is listed in one place
 * and no production file parses the environment. */
#include "config.h"
#include "gs_hooks.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gs_ooc.h"

static gs_hooks g_hooks;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static int on(const char *name)
{
    const char *v = getenv(name);
    return v && v[0] == '1';
}

static void read_hooks(void)
{
    gs_hooks *h = &g_hooks;
    h->split_always = on("GSORTD_TEST_SPLIT");
    h->uid_cap_all = on("GSORTD_TEST_UID_CAP_ALL");
    h->pin_any_device = on("GSORTD_TEST_PIN_ANY");
    const char *v = getenv("GSORTD_TEST_PIN_ONCE");
    h->pin_once_off = v && !strcmp(v, "0");
    unsigned long smin, schunk;
    v = getenv("GSORTD_TEST_STAGE");
    if (v && sscanf(v, "%lu,%lu", &smin, &schunk) == 2 && smin && schunk) {
        h->stage_min = smin;
        h->stage_chunk = schunk;
    }
    h->ooc_route = -1;
    v = getenv("GSORTD_TEST_OOC");
    if (v && !strncmp(v, "host", 4)) {
        h->ooc_route = GS_OOC_HOST;
    } else if (v && !strncmp(v, "device", 6)) {
        h->ooc_route = GS_OOC_DEVICE;
        h->ooc_lanes = v[6] == ':' ? (unsigned)atoi(v + 7) : 0;
    }
    v = getenv("GSORTD_TEST_OOC_COPY");
    h->ooc_copy_plain = v && !strcmp(v, "plain");
    h->defaults_log2 = -1;
    v = getenv("GSORTD_TEST_DEFAULTS");
    if (v && !strncmp(v, "gpu", 3)) {
        h->defaults_gpu = 1;
        if (v[3] == ':')
            h->defaults_log2 = atoi(v + 4);
    }
    v = getenv("GSORTD_TEST_SIGNAL_DELAY_MS");
    if (v)
        h->signal_delay_ms = (unsigned)strtoul(v, NULL, 10);
    h->slow_dev = -1;
    unsigned sd, sms;
    v = getenv("GSORTD_TEST_SLOW_DEV");
    if (v && sscanf(v, "%u:%u", &sd, &sms) == 2 && sms) {
        h->slow_dev = (int)sd;
        h->slow_ms = sms;
    }
}

const gs_hooks *gs_hooks_get(void)
{
    pthread_once(&g_once, read_hooks);
    return &g_hooks;
}
