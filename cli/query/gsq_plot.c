/* The throughput plot (see gsq_plot.h): axis ranges and ticks, the SVG
 * drawing (axes, grid, ticks, labels, one polyline with markers per
 * algorithm, legend) and the gnuplot script for a PNG. */
#include "config.h"
#include "gsq_plot.h"
#include "gs_grow.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

int gsq_plot_add(gsq_plot *p, const char *algorithm, uint64_t n, double ms, gs_err *err)
{
    gsq_series *s = NULL;
    for (size_t i = 0; i < p->ns && !s; i++)
        if (!strcmp(p->s[i].name, algorithm))
            s = &p->s[i];
    if (!s) {
        if (gs_grow(&p->s, &p->cap, p->ns, sizeof *p->s, 8))
            return gs_err_set(err, GS_ENOMEM, "out of memory");
        s = &p->s[p->ns++];
        memset(s, 0, sizeof *s);
        snprintf(s->name, sizeof s->name, "%s", algorithm);
    }
    if (gs_grow(&s->pts, &s->cap, s->n, sizeof *s->pts, 16))
        return gs_err_set(err, GS_ENOMEM, "out of memory");
    s->pts[s->n++] = (gsq_point){ n, ms, ms > 0 ? (double)n / (ms * 1e6) : 0 };
    return 0;
}

void gsq_plot_free(gsq_plot *p)
{
    for (size_t i = 0; i < p->ns; i++)
        free(p->s[i].pts);
    free(p->s);
    p->s = NULL;
    p->ns = p->cap = 0;
}

/* ---- axes ---- */

typedef struct axes {
    int xlo, xhi, xstep;    /* log2 n */
    double ymax, ystep;     /* Gkeys/s, from 0 */
} axes;

/* 1, 2 or 5 times a power of ten, at least `raw`. */
static double nice_step(double raw)
{
    double p = pow(10, floor(log10(raw)));
    double m = raw / p;
    return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
}

static void axes_of(const gsq_plot *p, axes *a)
{
    double lo = INFINITY, hi = -INFINITY, ymax = 0;
    for (size_t i = 0; i < p->ns; i++)
        for (size_t k = 0; k < p->s[i].n; k++) {
            double x = log2((double)p->s[i].pts[k].n);
            lo = fmin(lo, x);
            hi = fmax(hi, x);
            ymax = fmax(ymax, p->s[i].pts[k].gkeys);
        }
    if (!isfinite(lo)) {
        lo = 10;
        hi = 20;
    }
    a->xlo = (int)floor(lo);
    a->xhi = (int)ceil(hi);
    if (a->xhi - a->xlo < 2) {
        a->xlo--;
        a->xhi++;
    }
    int span = a->xhi - a->xlo;
    a->xstep = span <= 12 ? 1 : span <= 24 ? 2 : 4;
    if (ymax <= 0)
        ymax = 1;
    a->ystep = nice_step(ymax / 6);
    a->ymax = ceil(ymax * 1.02 / a->ystep) * a->ystep;
}

/* ---- SVG ---- */

enum { W = 880, H = 540, ML = 78, MR = 170, MT = 64, MB = 62 };

static const char *const palette[] = {
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
};
#define NPAL (sizeof palette / sizeof palette[0])

static void xml_text(FILE *out, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", out); break;
        case '<': fputs("&lt;", out); break;
        case '>': fputs("&gt;", out); break;
        case '"': fputs("&quot;", out); break;
        case '\'': fputs("&apos;", out); break;
        default:
            /* Control characters are not allowed in XML 1.0. */
            if ((unsigned char)*s >= 0x20 || *s == '\t' || *s == '\n')
                fputc(*s, out);
        }
    }
}

static double px(const axes *a, uint64_t n)
{
    double x = log2((double)n);
    return ML + (x - a->xlo) / (a->xhi - a->xlo) * (W - ML - MR);
}

static double py(const axes *a, double g)
{
    return (H - MB) - g / a->ymax * (H - MT - MB);
}

/* A tick label: enough decimals for the step. */
static void ylabel(double v, double step, char *b, size_t len)
{
    int dec = step >= 1 ? 0 : (int)ceil(-log10(step) - 1e-9);
    snprintf(b, len, "%.*f", dec, v);
}

int gsq_plot_svg(const gsq_plot *p, FILE *out, gs_err *err)
{
    axes a;
    axes_of(p, &a);
    double x0 = ML, x1 = W - MR, y0 = H - MB, y1 = MT;
    fprintf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
                 "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%d\" "
                 "height=\"%d\" viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" "
                 "font-size=\"12\">\n", W, H, W, H);
    fputs("<title>", out);
    xml_text(out, p->title);
    fputs("</title>\n", out);
    fprintf(out, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"white\"/>\n", W, H);
    fprintf(out, "<text class=\"title\" x=\"%.1f\" y=\"24\" text-anchor=\"middle\" "
                 "font-size=\"15\" font-weight=\"bold\">", (x0 + x1) / 2);
    xml_text(out, p->title);
    fprintf(out, "</text>\n<text class=\"subtitle\" x=\"%.1f\" y=\"44\" text-anchor=\"middle\" "
                 "fill=\"#444\">", (x0 + x1) / 2);
    xml_text(out, p->subtitle);
    fputs("</text>\n", out);

    /* Grid and ticks. */
    fputs("<g class=\"x-axis\" stroke=\"#888\">\n", out);
    for (int x = a.xlo; x <= a.xhi; x += a.xstep) {
        double X = px(&a, (uint64_t)1 << x);
        fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e4e4e4\"/>\n",
                X, y0, X, y1);
        fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", X, y0, X, y0 + 5);
        fprintf(out, "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" "
                     "stroke=\"none\" fill=\"black\">2<tspan dy=\"-5\" font-size=\"9\">%d</tspan>"
                     "</text>\n", X, y0 + 20, x);
    }
    fprintf(out, "<text class=\"label\" x=\"%.1f\" y=\"%d\" text-anchor=\"middle\" stroke=\"none\" "
                 "fill=\"black\">n (keys per sort, log scale)</text>\n</g>\n", (x0 + x1) / 2, H - 16);
    fputs("<g class=\"y-axis\" stroke=\"#888\">\n", out);
    for (int k = 0;; k++) {
        double v = k * a.ystep;
        if (v > a.ymax * (1 + 1e-9))
            break;
        double Y = py(&a, v);
        char lb[32];
        ylabel(v, a.ystep, lb, sizeof lb);
        fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e4e4e4\"/>\n",
                x0, Y, x1, Y);
        fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", x0 - 5, Y, x0, Y);
        fprintf(out, "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" stroke=\"none\" "
                     "fill=\"black\">%s</text>\n", x0 - 8, Y + 4, lb);
    }
    fprintf(out, "<text class=\"label\" x=\"18\" y=\"%.1f\" text-anchor=\"middle\" stroke=\"none\" "
                 "fill=\"black\" transform=\"rotate(-90 18 %.1f)\">Gkeys/s</text>\n</g>\n",
            (y0 + y1) / 2, (y0 + y1) / 2);
    fprintf(out, "<rect class=\"frame\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                 "fill=\"none\" stroke=\"black\"/>\n", x0, y1, x1 - x0, y0 - y1);

    /* One group per algorithm: the line, then its markers. */
    for (size_t i = 0; i < p->ns; i++) {
        const gsq_series *s = &p->s[i];
        const char *col = palette[i % NPAL];
        fputs("<g class=\"series\" data-algorithm=\"", out);
        xml_text(out, s->name);
        fprintf(out, "\" stroke=\"%s\" fill=\"%s\">\n<polyline fill=\"none\" stroke-width=\"2\" "
                     "points=\"", col, col);
        for (size_t k = 0; k < s->n; k++)
            fprintf(out, "%s%.1f,%.1f", k ? " " : "", px(&a, s->pts[k].n), py(&a, s->pts[k].gkeys));
        fputs("\"/>\n", out);
        for (size_t k = 0; k < s->n; k++) {
            const gsq_point *q = &s->pts[k];
            fprintf(out, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" data-n=\"%llu\" "
                         "data-gkeys=\"%.6g\"><title>", px(&a, q->n), py(&a, q->gkeys),
                    (unsigned long long)q->n, q->gkeys);
            xml_text(out, s->name);
            fprintf(out, ": n=%llu, %.4f ms, %.4g Gkeys/s</title></circle>\n",
                    (unsigned long long)q->n, q->ms, q->gkeys);
        }
        fputs("</g>\n", out);
    }

    /* Legend, right of the plot. */
    fputs("<g class=\"legend\">\n", out);
    for (size_t i = 0; i < p->ns; i++) {
        double Y = y1 + 14 + 22.0 * (double)i, X = x1 + 18;
        const char *col = palette[i % NPAL];
        fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
                     "stroke-width=\"2\"/>\n<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"%s\"/>\n",
                X, Y, X + 28, Y, col, X + 14, Y, col);
        fprintf(out, "<text x=\"%.1f\" y=\"%.1f\">", X + 36, Y + 4);
        xml_text(out, p->s[i].name);
        fputs("</text>\n", out);
    }
    fputs("</g>\n</svg>\n", out);
    if (ferror(out))
        return gs_err_set(err, GS_EIO, "writing the SVG: %s", strerror(errno));
    return 0;
}

/* ---- files ---- */

int gsq_plot_path_ok(const char *path)
{
    size_t l = strlen(path);
    if (!strcmp(path, "-"))
        return 1;
    return l > 4 && (!strcasecmp(path + l - 4, ".svg") || !strcasecmp(path + l - 4, ".png"));
}

/* A temporary file beside `path` (same file system, so rename works),
 * created with the mode a new file would get. */
static int temp_beside(const char *path, char *tmp, size_t len, gs_err *err)
{
    const char *slash = strrchr(path, '/');
    int dl = slash ? (int)(slash - path + 1) : 0;
    if ((size_t)snprintf(tmp, len, "%.*s.%s.XXXXXX", dl, path, slash ? slash + 1 : path) >= len)
        return gs_err_set(err, GS_ETOOBIG, "output path %s is too long", path);
    int fd = mkstemp(tmp);
    if (fd < 0)
        return gs_err_set(err, GS_EIO, "cannot write %s: %s", path, strerror(errno));
    mode_t um = umask(0);
    umask(um);
    if (fchmod(fd, 0666 & ~um) != 0) {
        int e = errno;
        close(fd);
        unlink(tmp);
        return gs_err_set(err, GS_EIO, "cannot write %s: %s", path, strerror(e));
    }
    return fd;
}

static int finish(const char *tmp, const char *path, int rc, gs_err *err)
{
    if (rc) {
        unlink(tmp);
        return rc;
    }
    if (rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        return gs_err_set(err, GS_EIO, "cannot write %s: %s", path, strerror(e));
    }
    return 0;
}

static int write_svg(const gsq_plot *p, const char *path, gs_err *err)
{
    char tmp[4200];
    int fd = temp_beside(path, tmp, sizeof tmp, err);
    if (fd < 0)
        return fd;
    FILE *f = fdopen(fd, "w");
    if (!f) {
        close(fd);
        return finish(tmp, path, gs_err_set(err, GS_ENOMEM, "out of memory"), err);
    }
    int rc = gsq_plot_svg(p, f, err);
    if (fclose(f) != 0 && !rc)
        rc = gs_err_set(err, GS_EIO, "writing %s: %s", path, strerror(errno));
    return finish(tmp, path, rc, err);
}

/* gnuplot's executable on $PATH, or GS_ENOTFOUND. */
static int find_gnuplot(char *buf, size_t len)
{
    const char *path = getenv("PATH");
    if (!path || !*path)
        path = "/usr/local/bin:/usr/bin:/bin";
    while (*path) {
        const char *end = strchr(path, ':');
        size_t dl = end ? (size_t)(end - path) : strlen(path);
        if ((size_t)snprintf(buf, len, "%.*s/gnuplot", (int)dl, dl ? path : ".") < len &&
            access(buf, X_OK) == 0)
            return 0;
        path += dl + (end != NULL);
    }
    return GS_ENOTFOUND;
}

/* A gnuplot single-quoted string: only ' needs escaping (doubled). */
static void gp_sq(FILE *f, const char *s)
{
    fputc('\'', f);
    for (; *s; s++) {
        if (*s == '\'')
            fputc('\'', f);
        if ((unsigned char)*s >= 0x20)
            fputc(*s, f);
    }
    fputc('\'', f);
}

static void gnuplot_script(FILE *f, const gsq_plot *p, const char *out)
{
    axes a;
    axes_of(p, &a);
    fputs("if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {\n"
          "  set terminal pngcairo size 1100,675 font 'sans,11'\n"
          "} else {\n  set terminal png size 1100,675\n}\n", f);
    fputs("set output ", f);
    gp_sq(f, out);
    fputs("\nset title ", f);
    char t[1100];
    snprintf(t, sizeof t, "%s\n%s", p->title, p->subtitle);
    /* Double quotes: the line break between the two is an escape. */
    fputc('"', f);
    for (const char *s = t; *s; s++) {
        if (*s == '\n')
            fputs("\\n", f);
        else if (*s == '"' || *s == '\\')
            fprintf(f, "\\%c", *s);
        else if ((unsigned char)*s >= 0x20)
            fputc(*s, f);
    }
    fputs("\" noenhanced\n", f);
    fprintf(f, "set xlabel 'n (keys per sort, log scale)'\nset ylabel 'Gkeys/s'\n"
               "set logscale x 2\nset format x '2^{%%L}'\nset xtics %d\n"
               "set xrange [%.17g:%.17g]\nset yrange [0:%.17g]\nset grid\n"
               "set key outside right top\nset datafile separator ','\n",
            1 << a.xstep, ldexp(1, a.xlo), ldexp(1, a.xhi), a.ymax);
    fputs("plot ", f);
    for (size_t i = 0; i < p->ns; i++) {
        fprintf(f, "%s'-' using 1:2 with linespoints lw 2 pt 7 ps 0.9 lc rgb '%s' title ",
                i ? ", \\\n     " : "", palette[i % NPAL]);
        gp_sq(f, p->s[i].name);
        fputs(" noenhanced", f);
    }
    fputc('\n', f);
    for (size_t i = 0; i < p->ns; i++) {
        for (size_t k = 0; k < p->s[i].n; k++)
            fprintf(f, "%llu,%.17g\n", (unsigned long long)p->s[i].pts[k].n, p->s[i].pts[k].gkeys);
        fputs("e\n", f);
    }
}

static int write_png(const gsq_plot *p, const char *path, gs_err *err)
{
    char gp[4200];
    if (find_gnuplot(gp, sizeof gp) != 0)
        return gs_err_set(err, GS_ENOTFOUND,
                          "a PNG plot needs gnuplot, which is not on the PATH: install it "
                          "(Debian: apt-get install gnuplot-nox) or write an .svg plot");
    char tmp[4200];
    int fd = temp_beside(path, tmp, sizeof tmp, err);
    if (fd < 0)
        return fd;
    close(fd);
    int pfd[2];
    if (pipe(pfd) != 0)
        return finish(tmp, path, gs_err_set(err, GS_EIO, "pipe: %s", strerror(errno)), err);
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        close(pfd[0]);
        close(pfd[1]);
        return finish(tmp, path, gs_err_set(err, GS_EIO, "fork: %s", strerror(errno)), err);
    }
    if (pid == 0) {
        dup2(pfd[0], 0);
        close(pfd[0]);
        close(pfd[1]);
        /* gnuplot's messages go to our stderr, where the user sees them. */
        execl(gp, "gnuplot", (char *)NULL);
        _exit(127);
    }
    close(pfd[0]);
    /* A gnuplot that dies early shows in its exit status, not as SIGPIPE. */
    void (*old_pipe)(int) = signal(SIGPIPE, SIG_IGN);
    FILE *f = fdopen(pfd[1], "w");
    int rc = 0;
    if (!f) {
        close(pfd[1]);
        rc = gs_err_set(err, GS_ENOMEM, "out of memory");
    } else {
        gnuplot_script(f, p, tmp);
        fclose(f);
    }
    signal(SIGPIPE, old_pipe);
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    struct stat sb;
    if (!rc && !(WIFEXITED(status) && WEXITSTATUS(status) == 0))
        rc = gs_err_set(err, GS_EIO, "gnuplot (%s) failed (%s %d); its messages are above", gp,
                        WIFEXITED(status) ? "exit status" : "signal",
                        WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
    else if (!rc && (stat(tmp, &sb) != 0 || sb.st_size == 0))
        rc = gs_err_set(err, GS_EIO, "gnuplot (%s) wrote no PNG", gp);
    return finish(tmp, path, rc, err);
}

int gsq_plot_write(const gsq_plot *p, const char *path, gs_err *err)
{
    size_t l = strlen(path);
    if (!strcmp(path, "-")) {
        int rc = gsq_plot_svg(p, stdout, err);
        if (!rc && fflush(stdout) != 0)
            rc = gs_err_set(err, GS_EIO, "writing the SVG: %s", strerror(errno));
        return rc;
    }
    if (l > 4 && !strcasecmp(path + l - 4, ".svg"))
        return write_svg(p, path, err);
    if (l > 4 && !strcasecmp(path + l - 4, ".png"))
        return write_png(p, path, err);
    return gs_err_set(err, GS_EINVAL, "plot output %s: the name must end in .svg or .png", path);
}
