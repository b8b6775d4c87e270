/* STUB */
#include "config.h"
#include "gs_paths.h"
