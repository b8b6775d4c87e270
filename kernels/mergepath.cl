/* STUB: mergepath kernels (issue 4). */
