/* gsort-query's output: one table of typed cells, printed as an aligned
 * text table (optionally split into headed groups and fitted to a terminal
 * width), as RFC 4180 CSV, or as a JSON array of objects. Each cell keeps
 * its value (CSV and JSON) and, where it differs, its table text ("2^20"
 * for n = 1048576, "u32" for key_bits 32). */
#ifndef GSQ_OUT_H
#define GSQ_OUT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef enum gsq_fmt { GSQ_TABLE = 0, GSQ_CSV, GSQ_JSON } gsq_fmt;

enum {
    GSQ_RIGHT = 1,     /* right-aligned in the table (numbers) */
    GSQ_SHRINK = 2,    /* may be cut ("...") to fit the terminal */
    GSQ_NOTABLE = 4,   /* CSV and JSON only */
};

typedef struct gsq_col {
    const char *key;   /* CSV header and JSON member name */
    const char *title; /* table header; NULL: key */
    int flags;
} gsq_col;

typedef struct gsq_table gsq_table;

/* `cols` must outlive the table. NULL when out of memory. */
gsq_table *gsq_table_new(const gsq_col *cols, size_t ncols);
void gsq_table_free(gsq_table *t);
size_t gsq_table_rows(const gsq_table *t);

/* Start a row. `group` (NULL: none) is a heading printed above the table
 * part whose rows share it. Then one cell per column, in order. */
void gsq_row(gsq_table *t, const char *group);
void gsq_str(gsq_table *t, const char *s);
void gsq_strd(gsq_table *t, const char *s, const char *display);
void gsq_int(gsq_table *t, int64_t v);
void gsq_intd(gsq_table *t, int64_t v, const char *display);
/* A number; the table shows it with `decimals` digits after the point
 * (< 0: three significant digits). */
void gsq_num(gsq_table *t, double v, int decimals);
void gsq_bool(gsq_table *t, int v, const char *display);
/* JSON null, empty in CSV; `display` in the table. */
void gsq_null(gsq_table *t, const char *display);
/* JSON text kept as JSON (a parameter object); `display` in the table. */
void gsq_json(gsq_table *t, const char *json, const char *display);

/* Print in `fmt`. `width` > 0: cut GSQ_SHRINK columns so table lines fit.
 * 0, or GS_ENOMEM / GS_EIO with the reason in msg (len bytes). */
int gsq_print(FILE *out, const gsq_table *t, gsq_fmt fmt, int width, char *msg, size_t len);

/* A value in CSV: quoted when it holds a comma, quote, CR or LF. */
void gsq_csv_field(FILE *out, const char *s);

/* Helpers for cells. */
const char *gsq_pow2(uint64_t n, char *buf, size_t len);           /* "2^20" or "1000" */
const char *gsq_bytes(int64_t b, char *buf, size_t len);           /* "7.8 GiB" */
/* '{"radix_bits":8}' -> "radix_bits=8"; "{}" -> "-"; other text as is. */
const char *gsq_params(const char *json, char *buf, size_t len);
/* Gkeys/s of n keys in ms milliseconds, to 6 digits (0 when ms <= 0). */
double gsq_gkeys(uint64_t n, double ms);

#endif
