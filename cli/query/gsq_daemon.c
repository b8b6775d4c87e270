/* gsort-query info and stats (see gsq_daemon.h): one request over the
 * blocking client, then the reply's fields laid out for reading. Fields a
 * daemon does not send show as "?", so an older or newer gsortd still
 * prints. */
#include "config.h"
#include "gsq_daemon.h"
#include "gs_client.h"
#include "gs_paths.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* How long to wait for a reply: info and stats are answered at once. */
#define REPLY_TIMEOUT_S 10.0

int gsq_socket_path(const char *given, char *buf, size_t len, gs_err *err)
{
    if (!given)
        return gs_paths_client_socket(buf, len, NULL, 0, err);   /* libgsort's rule */
    if ((size_t)snprintf(buf, len, "%s", given) >= len)
        return gs_err_set(err, GS_ETOOBIG, "socket path too long: %s", given);
    return 0;
}

static const char *jstr(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : cJSON_IsNull(v) ? "none" : "?";
}

/* A JSON number as text: integers without a fraction. */
static const char *jnum_text(const cJSON *v, char *b, size_t len, int decimals)
{
    if (!cJSON_IsNumber(v))
        snprintf(b, len, "?");
    else if (decimals < 0 && v->valuedouble == floor(v->valuedouble) && fabs(v->valuedouble) < 1e15)
        snprintf(b, len, "%.0f", v->valuedouble);
    else
        snprintf(b, len, "%.*f", decimals < 0 ? 3 : decimals, v->valuedouble);
    return b;
}

static const char *jnum(const cJSON *o, const char *k, char *b, size_t len)
{
    return jnum_text(cJSON_GetObjectItemCaseSensitive(o, k), b, len, -1);
}

/* Numbers keep their value in CSV/JSON; absent ones are null. */
static void cell_num(gsq_table *t, const cJSON *o, const char *k, int decimals)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    if (!cJSON_IsNumber(v))
        gsq_null(t, "?");
    else if (decimals < 0)
        gsq_int(t, (int64_t)v->valuedouble);
    else
        gsq_num(t, v->valuedouble, decimals);
}

static void cell_bool(gsq_table *t, const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    if (!cJSON_IsBool(v))
        gsq_null(t, "?");
    else
        gsq_bool(t, cJSON_IsTrue(v), cJSON_IsTrue(v) ? "yes" : "no");
}

static const gsq_col dev_cols[] = {
    { "index", NULL, GSQ_RIGHT },
    { "name", NULL, GSQ_SHRINK },
    { "platform", NULL, GSQ_SHRINK },
    { "driver", NULL, GSQ_SHRINK },
    { "type", NULL, 0 },
    { "enabled", NULL, 0 },
    { "tuned", NULL, 0 },
    { "plan_entries", "plan", GSQ_RIGHT },
    { "queued", NULL, GSQ_RIGHT },
    { "lanes", NULL, GSQ_RIGHT },
    { "healthy", NULL, 0 },
};

static const gsq_col route_cols[] = {
    { "device", NULL, GSQ_RIGHT },
    { "algorithm", NULL, 0 },
    { "count", "sorts", GSQ_RIGHT },
    { "errors", NULL, GSQ_RIGHT },
    { "mean_ms", "mean ms", GSQ_RIGHT },
    { "max_ms", "max ms", GSQ_RIGHT },
    { "total_ms", "total ms", GSQ_RIGHT },
    { "queue_ms", "queue ms", GSQ_RIGHT },
    { "sort_ms", "sort ms", GSQ_RIGHT },
};

static gsq_table *devices_table(const cJSON *r)
{
    gsq_table *t = gsq_table_new(dev_cols, sizeof dev_cols / sizeof dev_cols[0]);
    const cJSON *d, *devs = cJSON_GetObjectItemCaseSensitive(r, "devices");
    if (!t)
        return NULL;
    cJSON_ArrayForEach(d, devs) {
        gsq_row(t, NULL);
        cell_num(t, d, "index", -1);
        gsq_str(t, jstr(d, "name"));
        gsq_str(t, jstr(d, "platform"));
        gsq_str(t, jstr(d, "driver"));
        gsq_str(t, jstr(d, "type"));
        cell_bool(t, d, "enabled");
        cell_bool(t, d, "tuned");
        cell_num(t, d, "plan_entries", -1);
        cell_num(t, d, "queued", -1);
        cell_num(t, d, "lanes", -1);
        cell_bool(t, d, "healthy");
    }
    return t;
}

static const gsq_col xo_cols[] = {
    { "key_bits", "keys", GSQ_RIGHT },
    { "values", NULL, 0 },
    { "stable", NULL, 0 },
    { "local_below", "local below", GSQ_RIGHT },
    { "device", "then", 0 },
};

/* The info op's crossover: below which size each shape is sorted as the
 * client could in its own process (one host thread), and what takes over. */
static gsq_table *crossover_table(const cJSON *r)
{
    gsq_table *t = gsq_table_new(xo_cols, sizeof xo_cols / sizeof xo_cols[0]);
    const cJSON *o, *xo = cJSON_GetObjectItemCaseSensitive(r, "crossover");
    if (!t)
        return NULL;
    cJSON_ArrayForEach(o, xo) {
        gsq_row(t, NULL);
        cell_num(t, o, "key_bits", -1);
        gsq_str(t, jstr(o, "values"));
        cell_bool(t, o, "stable");
        const cJSON *lb = cJSON_GetObjectItemCaseSensitive(o, "local_below");
        if (cJSON_IsNull(lb))
            gsq_null(t, "every size");
        else
            cell_num(t, o, "local_below", -1);
        const cJSON *dv = cJSON_GetObjectItemCaseSensitive(o, "device");
        char b[48];
        if (cJSON_IsNull(lb))
            gsq_null(t, "-");
        else if (cJSON_IsNumber(dv) && dv->valuedouble < 0)
            gsq_strd(t, "host", "host threads");
        else if (cJSON_IsNumber(dv)) {
            snprintf(b, sizeof b, "device %d", (int)dv->valuedouble);
            gsq_str(t, b);
        } else
            gsq_null(t, "?");
    }
    return t;
}

static gsq_table *routes_table(const cJSON *r)
{
    gsq_table *t = gsq_table_new(route_cols, sizeof route_cols / sizeof route_cols[0]);
    const cJSON *o, *routes = cJSON_GetObjectItemCaseSensitive(r, "routes");
    if (!t)
        return NULL;
    cJSON_ArrayForEach(o, routes) {
        gsq_row(t, NULL);
        const cJSON *dv = cJSON_GetObjectItemCaseSensitive(o, "device");
        if (cJSON_IsNumber(dv))
            gsq_intd(t, (int64_t)dv->valuedouble, dv->valuedouble < 0 ? "host" : NULL);
        else
            gsq_null(t, "?");
        gsq_str(t, jstr(o, "algorithm"));
        cell_num(t, o, "count", -1);
        cell_num(t, o, "errors", -1);
        cell_num(t, o, "mean_ms", 3);
        cell_num(t, o, "max_ms", 3);
        cell_num(t, o, "total_ms", 3);
        cell_num(t, o, "queue_ms", 3);
        cell_num(t, o, "sort_ms", 3);
    }
    return t;
}

/* "name value, name value" of an object's number members. */
static void counts_line(FILE *out, const cJSON *o)
{
    const cJSON *v;
    char b[64];
    int k = 0;
    cJSON_ArrayForEach(v, o)
        fprintf(out, "%s%s %s", k++ ? ", " : "", v->string, jnum_text(v, b, sizeof b, -1));
    fputs(k ? "\n" : "?\n", out);
}

static int print_table(FILE *out, gsq_table *t, gsq_fmt fmt, int width, const char *heading,
                       const char *none, gs_err *err)
{
    if (!t)
        return gs_err_set(err, GS_ENOMEM, "out of memory");
    int rc = 0;
    char msg[256];
    if (fmt == GSQ_TABLE && !gsq_table_rows(t)) {
        fprintf(out, "%s: %s\n", heading, none);
    } else {
        if (fmt == GSQ_TABLE)
            fprintf(out, "%s\n", heading);
        if (gsq_print(out, t, fmt, width, msg, sizeof msg))
            rc = gs_err_set(err, GS_EIO, "%s", msg);
    }
    gsq_table_free(t);
    return rc;
}

static int show_info(FILE *out, const cJSON *r, gsq_fmt fmt, int width, gs_err *err)
{
    if (fmt != GSQ_TABLE)
        return print_table(out, devices_table(r), fmt, width, "", "", err);
    char b[64], b2[64];
    fprintf(out, "gsortd %s (protocol %s), pid %s\n", jstr(r, "version"),
            jnum(r, "protocol", b, sizeof b), jnum(r, "pid", b2, sizeof b2));
    fprintf(out, "  %-11s %s\n", "socket", jstr(r, "socket"));
    const cJSON *ok = cJSON_GetObjectItemCaseSensitive(r, "db_ok");
    fprintf(out, "  %-11s %s%s\n", "database", jstr(r, "db"),
            cJSON_IsTrue(ok) ? " (open)" : cJSON_IsFalse(ok) ? " (not opened)" : "");
    fprintf(out, "  %-11s %s threads\n", "host sort",
            jnum(cJSON_GetObjectItemCaseSensitive(r, "host"), "threads", b, sizeof b));
    fprintf(out, "  %-11s ", "algorithms");
    const cJSON *v;
    int k = 0;
    cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(r, "algorithms"))
        fprintf(out, "%s%s", k++ ? ", " : "", cJSON_IsString(v) ? v->valuestring : "?");
    fputs(k ? "\n" : "?\n", out);
    k = 0;
    cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(r, "limits"))
        fprintf(out, "  %-11s %-18s %s\n", k++ ? "" : "limits", v->string,
                jnum_text(v, b, sizeof b, -1));
    fputc('\n', out);
    int rc = print_table(out, devices_table(r), fmt, width, "Devices",
                         "none (the daemon sorts with the host sort only)", err);
    if (rc || !cJSON_HasObjectItem(r, "crossover"))     /* a daemon before it */
        return rc;
    fprintf(out, "\nBelow \"local below\" keys the daemon sorts a shape on one host thread, "
            "as the client's own process can (libgsort does, unless GSORT_NO_LOCAL)\n");
    return print_table(out, crossover_table(r), fmt, width, "Crossover", "none", err);
}

static int show_stats(FILE *out, const cJSON *r, const char *socket, gsq_fmt fmt, int width,
                      gs_err *err)
{
    if (fmt != GSQ_TABLE)
        return print_table(out, routes_table(r), fmt, width, "", "", err);
    char b[64], b2[64], b3[64], b4[64];
    const cJSON *up = cJSON_GetObjectItemCaseSensitive(r, "uptime_s");
    fprintf(out, "gsortd at %s\n", socket);
    fprintf(out, "  %-10s %s s\n", "uptime", jnum_text(up, b, sizeof b, 1));
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(r, "clients");
    fprintf(out, "  %-10s %s open, %s accepted, %s rejected\n", "clients",
            jnum(c, "current", b, sizeof b), jnum(c, "total", b2, sizeof b2),
            jnum(c, "rejected", b3, sizeof b3));
    const cJSON *q = cJSON_GetObjectItemCaseSensitive(r, "requests");
    fprintf(out, "  %-10s %s answered: %s ok, %s errors", "requests", jnum(q, "total", b, sizeof b),
            jnum(q, "ok", b2, sizeof b2), jnum(q, "errors", b3, sizeof b3));
    fprintf(out, ", %s fallbacks\n", jnum(q, "fallbacks", b4, sizeof b4));
    fprintf(out, "  %-10s ", "by op");
    counts_line(out, cJSON_GetObjectItemCaseSensitive(q, "by_op"));
    const cJSON *by = cJSON_GetObjectItemCaseSensitive(r, "bytes");
    fprintf(out, "  %-10s %s in, %s out\n\n", "bytes", jnum(by, "in", b, sizeof b),
            jnum(by, "out", b2, sizeof b2));
    return print_table(out, routes_table(r), fmt, width,
                       "Routes (sorts served per device and algorithm; times in ms)",
                       "none yet (no sorts served)", err);
}

int gsq_daemon_show(FILE *out, const char *op, const char *socket, gsq_fmt fmt, int width,
                    gs_err *err)
{
    gs_client *c;
    int rc = gs_client_connect(&c, socket, err);
    if (rc)
        return gs_err_prefix(err, "no gsortd answers (start it, or name its socket with "
                                  "-S PATH or $GSORTD_SOCKET): ");
    gs_client_set_timeout(c, REPLY_TIMEOUT_S);
    cJSON *r = NULL;
    rc = gs_client_call(c, op, &r, err);
    gs_client_close(c);
    if (rc) {
        cJSON_Delete(r);
        return gs_err_prefix(err, "%s from gsortd at %s: ", op, socket);
    }
    if (fmt == GSQ_JSON) {
        char *s = cJSON_Print(r);
        if (!s)
            rc = gs_err_set(err, GS_ENOMEM, "out of memory");
        else {
            fprintf(out, "%s\n", s);
            cJSON_free(s);
        }
    } else if (!strcmp(op, "info")) {
        rc = show_info(out, r, fmt, width, err);
    } else {
        rc = show_stats(out, r, socket, fmt, width, err);
    }
    cJSON_Delete(r);
    if (!rc && (fflush(out) != 0 || ferror(out)))
        rc = gs_err_set(err, GS_EIO, "writing the output: %s", strerror(errno));
    return rc;
}
