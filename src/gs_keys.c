/* STUB */
#include "config.h"
#include "gs_keys.h"
