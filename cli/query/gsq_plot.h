/* gsort-query's plot of throughput (Gkeys/s) against n on a log2 axis, one
 * series per algorithm: drawn as a standalone SVG by this code, or as a PNG
 * by gnuplot fed the same points on its standard input. Files are written
 * next to their destination and renamed into place, so a failed plot never
 * leaves half a file. */
#ifndef GSQ_PLOT_H
#define GSQ_PLOT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "gs_err.h"

typedef struct gsq_point {
    uint64_t n;
    double ms;
    double gkeys;
} gsq_point;

typedef struct gsq_series {
    char name[32];
    gsq_point *pts;    /* ascending n */
    size_t n, cap;
} gsq_series;

typedef struct gsq_plot {
    char title[512];
    char subtitle[512];
    gsq_series *s;
    size_t ns, cap;
} gsq_plot;

/* Append a point to `algorithm`'s series (created on first use). Points
 * must come in ascending n per algorithm. */
int gsq_plot_add(gsq_plot *p, const char *algorithm, uint64_t n, double ms, gs_err *err);
void gsq_plot_free(gsq_plot *p);

/* The whole SVG document. */
int gsq_plot_svg(const gsq_plot *p, FILE *out, gs_err *err);
/* Write the plot to `path`: ".svg" by gsq_plot_svg, ".png" through gnuplot
 * (GS_ENOTFOUND, saying to install it or use .svg, when it is not on the
 * PATH); "-" writes the SVG to standard output. */
int gsq_plot_write(const gsq_plot *p, const char *path, gs_err *err);
/* 1 for a name gsq_plot_write understands (.svg, .png, "-"), else 0. */
int gsq_plot_path_ok(const char *path);

#endif
