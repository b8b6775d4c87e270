/* STUB */
#include "config.h"
#include "gs_sha256.h"
