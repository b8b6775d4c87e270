/* STUB: shellsort (issue 4, being written). Refuses every request. */
#include "config.h"
#include "gs_algos.h"
static int stub_check(const gs_dev *dev, const gs_sort_req *req, const gs_params *p, gs_err *err)
{
    (void)dev; (void)req; (void)p;
    return gs_err_set(err, GS_EUNSUPPORTED, "shellsort: not implemented yet");
}
const gs_algo gs_algo_shellsort = { .name = "shellsort", .summary = "not implemented yet", .stable = 0, .uses_device = 1, .check = stub_check };
