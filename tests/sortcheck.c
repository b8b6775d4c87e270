/* STUB */
#include "config.h"
#include "sortcheck.h"
