/* gsort-query's table, CSV and JSON output (see gsq_out.h). Cells are
 * stored as text plus a kind, so each format renders the same rows. */
#include "config.h"
#include "gsq_out.h"
#include "gs_err.h"
#include "gs_db.h"
#include "gs_params.h"
#include "gs_grow.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { K_STR, K_INT, K_NUM, K_BOOL, K_NULL, K_JSON };

typedef struct cell {
    int kind;
    double num;        /* K_INT, K_NUM, K_BOOL */
    char *val;         /* CSV text */
    char *disp;        /* table text; NULL: val */
    int decimals;      /* K_NUM in the table */
} cell;

typedef struct row {
    char *group;
    cell *c;
    size_t nc;
} row;

struct gsq_table {
    const gsq_col *cols;
    size_t ncols;
    row *rows;
    size_t nrows, cap;
    int oom;
};

gsq_table *gsq_table_new(const gsq_col *cols, size_t ncols)
{
    gsq_table *t = calloc(1, sizeof *t);
    if (t) {
        t->cols = cols;
        t->ncols = ncols;
    }
    return t;
}

void gsq_table_free(gsq_table *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->nrows; i++) {
        for (size_t j = 0; j < t->rows[i].nc; j++) {
            free(t->rows[i].c[j].val);
            free(t->rows[i].c[j].disp);
        }
        free(t->rows[i].c);
        free(t->rows[i].group);
    }
    free(t->rows);
    free(t);
}

size_t gsq_table_rows(const gsq_table *t) { return t->nrows; }

static char *dup_or_oom(gsq_table *t, const char *s)
{
    if (!s)
        return NULL;
    char *d = strdup(s);
    if (!d)
        t->oom = 1;
    return d;
}

void gsq_row(gsq_table *t, const char *group)
{
    if (t->oom)
        return;
    if (gs_grow(&t->rows, &t->cap, t->nrows, sizeof *t->rows, 64)) {
        t->oom = 1;
        return;
    }
    row *r = &t->rows[t->nrows];
    r->c = calloc(t->ncols, sizeof *r->c);
    r->nc = 0;
    r->group = dup_or_oom(t, group);
    if (!r->c) {
        free(r->group);
        t->oom = 1;
        return;
    }
    t->nrows++;
}

static void add(gsq_table *t, int kind, double num, const char *val, const char *disp,
                int decimals)
{
    if (t->oom || !t->nrows)
        return;
    row *r = &t->rows[t->nrows - 1];
    if (r->nc == t->ncols)
        return;    /* a caller bug: more cells than columns; dropped */
    cell *c = &r->c[r->nc++];
    c->kind = kind;
    c->num = num;
    c->decimals = decimals;
    c->val = dup_or_oom(t, val ? val : "");
    c->disp = dup_or_oom(t, disp);
}

void gsq_str(gsq_table *t, const char *s) { add(t, K_STR, 0, s, NULL, 0); }
void gsq_strd(gsq_table *t, const char *s, const char *display) { add(t, K_STR, 0, s, display, 0); }

void gsq_int(gsq_table *t, int64_t v) { gsq_intd(t, v, NULL); }

void gsq_intd(gsq_table *t, int64_t v, const char *display)
{
    char b[32];
    snprintf(b, sizeof b, "%lld", (long long)v);
    add(t, K_INT, (double)v, b, display, 0);
}

/* The shortest %g text that reads back as v. */
static void shortest(double v, char *b, size_t len)
{
    for (int p = 1; p <= 17; p++) {
        snprintf(b, len, "%.*g", p, v);
        if (strtod(b, NULL) == v)
            return;
    }
}

void gsq_num(gsq_table *t, double v, int decimals)
{
    char b[64];
    shortest(v, b, sizeof b);
    add(t, K_NUM, v, b, NULL, decimals);
}

void gsq_bool(gsq_table *t, int v, const char *display)
{
    add(t, K_BOOL, v ? 1 : 0, v ? "true" : "false", display, 0);
}

void gsq_null(gsq_table *t, const char *display) { add(t, K_NULL, 0, "", display, 0); }

void gsq_json(gsq_table *t, const char *json, const char *display)
{
    add(t, K_JSON, 0, json, display, 0);
}

/* ---- helpers ---- */

const char *gsq_pow2(uint64_t n, char *buf, size_t len)
{
    if (n && (n & (n - 1)) == 0)
        snprintf(buf, len, "2^%d", gs_db_bucket(n));
    else
        snprintf(buf, len, "%llu", (unsigned long long)n);
    return buf;
}

const char *gsq_bytes(int64_t b, char *buf, size_t len)
{
    static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
    double v = (double)b;
    int u = 0;
    while (v >= 1024 && u < 4) {
        v /= 1024;
        u++;
    }
    if (u == 0)
        snprintf(buf, len, "%lld B", (long long)b);
    else
        snprintf(buf, len, "%.1f %s", v, unit[u]);
    return buf;
}

const char *gsq_params(const char *json, char *buf, size_t len)
{
    gs_params p;
    if (gs_params_from_json(json, &p, NULL) != 0 || gs_params_format(&p, buf, len) != 0)
        snprintf(buf, len, "%s", json);
    else if (!buf[0])
        snprintf(buf, len, "-");
    return buf;
}

double gsq_gkeys(uint64_t n, double ms)
{
    if (ms <= 0)
        return 0;
    /* Six significant digits: a derived figure, not a measurement. */
    char b[32];
    snprintf(b, sizeof b, "%.6g", (double)n / (ms * 1e6));
    return strtod(b, NULL);
}

/* ---- CSV ---- */

void gsq_csv_field(FILE *out, const char *s)
{
    if (!strpbrk(s, ",\"\r\n")) {
        fputs(s, out);
        return;
    }
    fputc('"', out);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', out);
        fputc(*s, out);
    }
    fputc('"', out);
}

static void print_csv(FILE *out, const gsq_table *t)
{
    /* RFC 4180: CRLF line ends. */
    for (size_t j = 0; j < t->ncols; j++) {
        if (j)
            fputc(',', out);
        gsq_csv_field(out, t->cols[j].key);
    }
    fputs("\r\n", out);
    for (size_t i = 0; i < t->nrows; i++) {
        for (size_t j = 0; j < t->ncols; j++) {
            if (j)
                fputc(',', out);
            gsq_csv_field(out, j < t->rows[i].nc ? t->rows[i].c[j].val : "");
        }
        fputs("\r\n", out);
    }
}

/* ---- JSON ---- */

static cJSON *cell_json(const cell *c)
{
    switch (c->kind) {
    case K_INT:
    case K_NUM:
        return cJSON_CreateNumber(c->num);
    case K_BOOL:
        return cJSON_CreateBool(c->num != 0);
    case K_NULL:
        return cJSON_CreateNull();
    case K_JSON: {
        cJSON *j = cJSON_Parse(c->val);
        return j ? j : cJSON_CreateString(c->val);
    }
    default:
        return cJSON_CreateString(c->val);
    }
}

static int print_json(FILE *out, const gsq_table *t)
{
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; a && i < t->nrows; i++) {
        cJSON *o = cJSON_CreateObject();
        if (!o || !cJSON_AddItemToArray(a, o)) {
            cJSON_Delete(o);
            cJSON_Delete(a);
            return GS_ENOMEM;
        }
        for (size_t j = 0; j < t->rows[i].nc; j++) {
            cJSON *v = cell_json(&t->rows[i].c[j]);
            if (!v || !cJSON_AddItemToObject(o, t->cols[j].key, v)) {
                cJSON_Delete(v);
                cJSON_Delete(a);
                return GS_ENOMEM;
            }
        }
    }
    char *s = a ? cJSON_Print(a) : NULL;
    cJSON_Delete(a);
    if (!s)
        return GS_ENOMEM;
    fputs(s, out);
    fputc('\n', out);
    cJSON_free(s);
    return 0;
}

/* ---- table ---- */

/* Display width: code points, not bytes (names may be UTF-8). */
static size_t dwidth(const char *s)
{
    size_t w = 0;
    for (; *s; s++)
        w += ((unsigned char)*s & 0xc0) != 0x80;
    return w;
}

static const char *cell_text(const cell *c, char *buf, size_t len)
{
    if (c->disp)
        return c->disp;
    if (c->kind == K_NUM) {
        int dec = c->decimals;
        if (dec < 0) {
            /* Three significant digits. */
            double a = fabs(c->num);
            dec = a > 0 ? 2 - (int)floor(log10(a)) : 0;
            dec = dec < 0 ? 0 : dec > 9 ? 9 : dec;
        }
        snprintf(buf, len, "%.*f", dec, c->num);
        return buf;
    }
    return c->val;
}

/* Print s in w columns, cut with "..." when longer, padded unless last. */
static void put_cell(FILE *out, const char *s, size_t w, int right, int last)
{
    size_t sw = dwidth(s);
    if (sw > w) {
        size_t keep = w > 3 ? w - 3 : 0, cp = 0;
        const char *p = s;
        while (*p) {
            if (((unsigned char)*p & 0xc0) != 0x80 && cp++ == keep)
                break;
            p++;
        }
        fwrite(s, 1, (size_t)(p - s), out);
        fputs(w > 3 ? "..." : "", out);
        return;
    }
    if (right)
        fprintf(out, "%*s", (int)(w - sw), "");
    fputs(s, out);
    if (!right && !last)
        fprintf(out, "%*s", (int)(w - sw), "");
}

static const char *col_title(const gsq_col *c) { return c->title ? c->title : c->key; }

/* One table line: the column titles (r NULL) or row r's cells, each in its
 * width w[j]. */
static void put_line(FILE *out, const gsq_table *t, const row *r, const size_t *w,
                     size_t indent, size_t lastcol)
{
    char nb[64];
    fprintf(out, "%*s", (int)indent, "");
    for (size_t j = 0, k = 0; j < t->ncols; j++) {
        const gsq_col *c = &t->cols[j];
        if (c->flags & GSQ_NOTABLE)
            continue;
        if (k++)
            fputs("  ", out);
        const char *s = !r ? col_title(c) : j < r->nc ? cell_text(&r->c[j], nb, sizeof nb) : "";
        put_cell(out, s, w[j], c->flags & GSQ_RIGHT, j == lastcol);
    }
    fputc('\n', out);
}

static void print_table(FILE *out, const gsq_table *t, int width, size_t *w)
{
    char nb[64];
    int groups = 0;
    for (size_t i = 0; i < t->nrows; i++)
        groups |= t->rows[i].group != NULL;
    size_t lastcol = 0, shown = 0;
    for (size_t j = 0; j < t->ncols; j++) {
        const gsq_col *c = &t->cols[j];
        if (c->flags & GSQ_NOTABLE)
            continue;
        w[j] = dwidth(col_title(c));
        for (size_t i = 0; i < t->nrows; i++)
            if (j < t->rows[i].nc) {
                size_t cw = dwidth(cell_text(&t->rows[i].c[j], nb, sizeof nb));
                if (cw > w[j])
                    w[j] = cw;
            }
        lastcol = j;
        shown++;
    }
    size_t indent = groups ? 2 : 0;
    if (width > 0) {
        size_t total = indent + (shown ? 2 * (shown - 1) : 0);
        for (size_t j = 0; j < t->ncols; j++)
            if (!(t->cols[j].flags & GSQ_NOTABLE))
                total += w[j];
        while (total > (size_t)width) {
            size_t best = t->ncols, bw = 0;
            for (size_t j = 0; j < t->ncols; j++) {
                const gsq_col *c = &t->cols[j];
                size_t minw = dwidth(col_title(c));
                if (minw < 8)
                    minw = 8;
                if ((c->flags & GSQ_SHRINK) && !(c->flags & GSQ_NOTABLE) && w[j] > minw &&
                    w[j] > bw) {
                    best = j;
                    bw = w[j];
                }
            }
            if (best == t->ncols)
                break;
            w[best]--;
            total--;
        }
    }
    const char *group = NULL;
    for (size_t i = 0; i <= t->nrows; i++) {
        int head = i == 0;
        if (i < t->nrows && groups) {
            const char *g = t->rows[i].group ? t->rows[i].group : "";
            if (!group || strcmp(g, group) != 0) {
                fprintf(out, "%s%s\n", group ? "\n" : "", g);
                group = g;
                head = 1;
            }
        }
        if (head && (i < t->nrows || i == 0))
            put_line(out, t, NULL, w, indent, lastcol);
        if (i == t->nrows)
            break;
        put_line(out, t, &t->rows[i], w, indent, lastcol);
    }
}

int gsq_print(FILE *out, const gsq_table *t, gsq_fmt fmt, int width, char *msg, size_t len)
{
    if (t->oom) {
        snprintf(msg, len, "out of memory");
        return GS_ENOMEM;
    }
    int rc = 0;
    if (fmt == GSQ_CSV) {
        print_csv(out, t);
    } else if (fmt == GSQ_JSON) {
        rc = print_json(out, t);
    } else {
        size_t *w = calloc(t->ncols ? t->ncols : 1, sizeof *w);
        if (!w)
            rc = GS_ENOMEM;
        else
            print_table(out, t, width, w);
        free(w);
    }
    if (rc == GS_ENOMEM)
        snprintf(msg, len, "out of memory");
    else if (fflush(out) != 0 || ferror(out)) {
        snprintf(msg, len, "writing the output: %s", strerror(errno));
        rc = GS_EIO;
    }
    return rc;
}
