/* STUB */
#include "config.h"
#include "gs_sort.h"
