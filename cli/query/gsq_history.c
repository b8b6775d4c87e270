/* gsort-query history (see gsq_history.h): the plan entries of every
 * driver version of one device, keyed by request shape and size bucket. */
#include "config.h"
#include "gsq_history.h"
#include "gs_grow.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A plan entry's request shape and size: one table row. */
typedef struct hrow {
    int key_bits, stable, bucket;
    char payload[16];
} hrow;

/* One driver version's plan entry for a row. */
typedef struct hent {
    size_t drv;
    hrow key;
    char algorithm[32], params[512];
    double ms;
} hent;

typedef struct hist {
    gs_dbq_devlist d;      /* the driver versions, oldest first */
    hrow *rows;
    size_t nrows, rcap;
    hent *e;
    size_t ne, ecap;
    size_t cur;          /* driver being read */
} hist;

static int hrow_cmp(const void *a, const void *b)
{
    const hrow *x = a, *y = b;
    if (x->key_bits != y->key_bits)
        return x->key_bits - y->key_bits;
    int c = strcmp(x->payload, y->payload);
    if (c)
        return c;
    if (x->bucket != y->bucket)
        return x->bucket - y->bucket;
    return x->stable - y->stable;
}

static int hist_plan(void *ud, const gs_dbq_choice *ch)
{
    hist *h = ud;
    hrow key = { .key_bits = ch->key_bits, .stable = ch->stable, .bucket = ch->bucket };
    snprintf(key.payload, sizeof key.payload, "%s", ch->payload);
    size_t r = 0;
    while (r < h->nrows && hrow_cmp(&h->rows[r], &key) != 0)
        r++;
    if (r == h->nrows) {
        if (gs_grow(&h->rows, &h->rcap, h->nrows, sizeof *h->rows, 32))
            return GS_ENOMEM;
        h->rows[h->nrows++] = key;
    }
    if (gs_grow(&h->e, &h->ecap, h->ne, sizeof *h->e, 64))
        return GS_ENOMEM;
    hent *e = &h->e[h->ne++];
    e->drv = h->cur;
    e->key = key;
    e->ms = ch->median_ms;
    snprintf(e->algorithm, sizeof e->algorithm, "%s", ch->algorithm);
    snprintf(e->params, sizeof e->params, "%s", ch->params);
    return 0;
}

static const hent *hist_get(const hist *h, const hrow *r, size_t drv)
{
    for (size_t i = 0; i < h->ne; i++)
        if (h->e[i].drv == drv && hrow_cmp(&h->e[i].key, r) == 0)
            return &h->e[i];
    return NULL;
}

static const gsq_col hist_long_cols[] = {
    { "device_id", NULL, 0 },
    { "device", NULL, 0 },
    { "platform", NULL, 0 },
    { "driver", NULL, 0 },
    { "first_seen", NULL, 0 },
    { "key_bits", NULL, 0 },
    { "payload", NULL, 0 },
    { "stable", NULL, 0 },
    { "bucket", NULL, 0 },
    { "n", NULL, 0 },
    { "algorithm", NULL, 0 },
    { "params", NULL, 0 },
    { "median_ms", NULL, 0 },
    { "gkeys_s", NULL, 0 },
};

/* CSV and JSON: one row per (driver, plan entry). */
static int history_long(gsq_cmd_opts *c, const hist *h, gs_err *err)
{
    gsq_table *t = gsq_table_new(hist_long_cols, sizeof hist_long_cols / sizeof hist_long_cols[0]);
    if (!t)
        return gsq_cmd_oom(err);
    for (size_t v = 0; v < h->d.n; v++)
        for (size_t r = 0; r < h->nrows; r++) {
            const hent *e = hist_get(h, &h->rows[r], v);
            if (!e)
                continue;
            const gs_dbq_devcopy *d = &h->d.v[v];
            uint64_t n = (uint64_t)1 << h->rows[r].bucket;
            gsq_row(t, NULL);
            gsq_int(t, d->id);
            gsq_str(t, d->name);
            gsq_str(t, d->platform);
            gsq_str(t, d->driver);
            gsq_str(t, d->first_seen);
            gsq_int(t, h->rows[r].key_bits);
            gsq_str(t, h->rows[r].payload);
            gsq_bool(t, h->rows[r].stable, NULL);
            gsq_int(t, h->rows[r].bucket);
            gsq_int(t, (int64_t)n);
            gsq_str(t, e->algorithm);
            gsq_json(t, e->params, NULL);
            gsq_num(t, e->ms, 4);
            gsq_num(t, gsq_gkeys(n, e->ms), -1);
        }
    char msg[256];
    int rc = gsq_print(stdout, t, c->fmt, 0, msg, sizeof msg);
    gsq_table_free(t);
    return rc ? gs_err_set(err, rc, "%s", msg) : 0;
}

/* The table: one row per plan entry, one column per driver version, and
 * the newest driver's time against the one before it. */
static int history_table(gsq_cmd_opts *c, const hist *h, gs_err *err)
{
    size_t nd = h->d.n, nc = 4 + nd + (nd > 1);
    gsq_col *cols = calloc(nc, sizeof *cols);
    char (*titles)[300] = calloc(nd, sizeof *titles);
    gsq_table *t = NULL;
    int rc = 0;
    if (!cols || !titles) {
        rc = gsq_cmd_oom(err);
        goto out;
    }
    cols[0] = (gsq_col){ "key_bits", "keys", 0 };
    cols[1] = (gsq_col){ "payload", NULL, 0 };
    cols[2] = (gsq_col){ "n", NULL, GSQ_RIGHT };
    cols[3] = (gsq_col){ "stable", NULL, 0 };
    for (size_t v = 0; v < nd; v++) {
        snprintf(titles[v], sizeof titles[v], "driver %s", h->d.v[v].driver);
        cols[4 + v] = (gsq_col){ titles[v], NULL, GSQ_SHRINK };
    }
    if (nd > 1)
        cols[4 + nd] = (gsq_col){ "change", NULL, GSQ_RIGHT };
    if (!(t = gsq_table_new(cols, nc))) {
        rc = gsq_cmd_oom(err);
        goto out;
    }
    for (size_t r = 0; r < h->nrows; r++) {
        const hrow *w = &h->rows[r];
        uint64_t n = (uint64_t)1 << w->bucket;
        char nb[32], cell[600];
        gsq_row(t, NULL);
        gsq_intd(t, w->key_bits, gsq_cmd_keys(w->key_bits));
        gsq_str(t, w->payload);
        gsq_intd(t, (int64_t)n, gsq_pow2(n, nb, sizeof nb));
        gsq_bool(t, w->stable, w->stable ? "stable" : "any");
        for (size_t v = 0; v < nd; v++) {
            const hent *e = hist_get(h, w, v);
            if (!e) {
                gsq_null(t, "-");
                continue;
            }
            snprintf(cell, sizeof cell, "%s %.4f", e->algorithm, e->ms);
            gsq_str(t, cell);
        }
        if (nd > 1) {
            const hent *a = hist_get(h, w, nd - 2), *b = hist_get(h, w, nd - 1);
            if (a && b && a->ms > 0) {
                char pc[32];
                double ch = (b->ms / a->ms - 1) * 100;
                snprintf(pc, sizeof pc, fabs(ch) < 0.05 ? "0.0%%" : "%+.1f%%", ch);
                gsq_strd(t, pc, pc);
            } else {
                gsq_null(t, "-");
            }
        }
    }
    const gs_dbq_devcopy *last = &h->d.v[nd - 1];
    printf("History of %s (%s):\nthe plan under each driver version, oldest first "
           "(algorithm and ms end to end)\n", last->name, last->platform);
    if (nd > 1)
        printf("change: driver %s against driver %s (+ is slower)\n", last->driver,
               h->d.v[nd - 2].driver);
    putchar('\n');
    if (!gsq_table_rows(t)) {
        printf("No plan entries for any driver version of this device: run gsortd --tune-all.\n");
    } else {
        char msg[256];
        rc = gsq_print(stdout, t, GSQ_TABLE, c->width, msg, sizeof msg);
        if (rc)
            gs_err_set(err, rc, "%s", msg);
    }
out:
    gsq_table_free(t);
    free(cols);
    free(titles);
    return rc;
}

int gsq_history(gsq_cmd_opts *c, gs_db *db, gs_err *err)
{
    hist h = { 0 };
    int64_t id;
    int rc = gs_dbq_select(db, c->device, &id, err);
    if (!rc && (rc = gs_dbq_same_device(db, id, gs_dbq_devlist_add, &h.d, err)) == GS_ENOMEM)
        rc = gsq_cmd_oom(err);
    for (size_t v = 0; !rc && v < h.d.n; v++) {
        gs_dbq_filter f;
        gsq_cmd_filter(c, &f);
        f.device_id = h.d.v[v].id;
        h.cur = v;
        if ((rc = gs_dbq_plan(db, &f, hist_plan, &h, err)) == GS_ENOMEM)
            rc = gsq_cmd_oom(err);
    }
    if (!rc && h.nrows > 1)   /* no rows: h.rows is NULL, undefined for qsort */
        qsort(h.rows, h.nrows, sizeof *h.rows, hrow_cmp);
    if (!rc)
        rc = c->fmt == GSQ_TABLE ? history_table(c, &h, err) : history_long(c, &h, err);
    free(h.d.v);
    free(h.rows);
    free(h.e);
    return rc;
}
