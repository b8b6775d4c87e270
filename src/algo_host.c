/* STUB */
#include "config.h"
#include "gs_algos.h"
