/* STUB: shellsort kernels (issue 4). */
