/* The config file reader (gs_conf_load, see gs_conf.h and gsortd.conf(5)):
 * "key = value" lines, read byte by byte so that a NUL or an overlong line
 * is refused without reading it all; values quoted or not, '#' comments;
 * every key set through gs_conf_set, so the file means what the command
 * line means. All or nothing: the first bad line stops the load with
 * "PATH:LINE: ..." and leaves the configuration as it was. */
#include "config.h"
#include "gs_conf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define LINE_MAX_BYTES GS_CONF_LINE_MAX

enum { RL_LINE = 1, RL_EOF = 0, RL_LONG = -1, RL_IOERR = -2, RL_NUL = -3 };

/* One line without its "\n" or "\r\n" into buf (cap > LINE_MAX_BYTES).
 * Byte by byte so a NUL in the file is noticed, and a huge line is
 * refused without reading it all into memory. */
static int read_line(FILE *f, char *buf, size_t *len)
{
    size_t n = 0;
    int ch, any = 0;
    while ((ch = getc(f)) != EOF) {
        any = 1;
        if (ch == '\n')
            break;
        if (ch == '\0')
            return RL_NUL;
        /* One byte of slack for the '\r' of a CRLF line at the limit. */
        if (n >= LINE_MAX_BYTES + 1)
            return RL_LONG;
        buf[n++] = (char)ch;
    }
    if (ch == EOF && ferror(f))
        return RL_IOERR;
    if (!any)
        return RL_EOF;
    if (n && buf[n - 1] == '\r')
        n--;
    if (n > LINE_MAX_BYTES)
        return RL_LONG;
    buf[n] = '\0';
    *len = n;
    return RL_LINE;
}

static int is_blank(char ch) { return ch == ' ' || ch == '\t'; }

/* Split one line into key and value in place. Returns 0 with *key NULL for
 * a blank or comment line, 0 with key/value set, or GS_EINVAL with a
 * message (no location; the caller adds it). */
static int split_line(char *line, char **key_out, char **val_out, gs_err *err)
{
    *key_out = NULL;
    char *p = line;
    while (is_blank(*p))
        p++;
    if (*p == '\0' || *p == '#')
        return 0;
    char *key = p;
    while (*p && !is_blank(*p) && *p != '=')
        p++;
    char *kend = p;
    while (is_blank(*p))
        p++;
    if (*p != '=') {
        *kend = '\0';
        return gs_err_set(err, GS_EINVAL, "expected 'key = value' but found no '=' after '%s'", key);
    }
    if (kend == key)
        return gs_err_set(err, GS_EINVAL, "expected 'key = value' but the key is missing");
    *kend = '\0';
    p++;
    while (is_blank(*p))
        p++;
    char *val = p;
    if (*p == '"') {
        /* Quoted: keeps blanks and '#'; \" and \\ are the only escapes. */
        char *w = val;
        p++;
        for (;;) {
            if (*p == '\0')
                return gs_err_set(err, GS_EINVAL, "%s: the quoted value has no closing '\"'", key);
            if (*p == '"')
                break;
            if (*p == '\\') {
                if (p[1] != '"' && p[1] != '\\')
                    return gs_err_set(err, GS_EINVAL,
                                      "%s: unknown escape '\\%c' in a quoted value "
                                      "(only \\\" and \\\\ are recognised)", key,
                                      p[1] ? p[1] : ' ');
                p++;
            }
            *w++ = *p++;
        }
        p++;
        while (is_blank(*p))
            p++;
        if (*p && *p != '#')
            return gs_err_set(err, GS_EINVAL, "%s: unexpected text after the closing quote: '%s'",
                              key, p);
        *w = '\0';
    } else {
        /* Unquoted: a '#' at the start of the value or after a blank begins
         * a comment; a '#' inside a word ("a#b") is kept. */
        char *end = p;
        while (*end && !(*end == '#' && (end == val || is_blank(end[-1]))))
            end++;
        while (end > val && is_blank(end[-1]))
            end--;
        if (end == val)
            return gs_err_set(err, GS_EINVAL,
                              "%s: missing value (write \"\" for an empty one)", key);
        *end = '\0';
    }
    *key_out = key;
    *val_out = val;
    return 0;
}

int gs_conf_load(gs_conf *c, const char *path, gs_err *err)
{
    if (!path || !path[0])
        return gs_err_set(err, GS_EINVAL, "config file: empty path");
    FILE *f = fopen(path, "re");
    if (!f) {
        int e = errno;
        return gs_err_set(err, e == ENOENT ? GS_ENOTFOUND : GS_EIO, "config file %s: %s",
                          path, strerror(e));
    }
    /* fopen succeeds on a directory; reading it would fail with a less
     * clear message, so say it here. */
    struct stat st;
    int e = fstat(fileno(f), &st) != 0 ? errno : S_ISDIR(st.st_mode) ? EISDIR : 0;
    if (e) {
        fclose(f);
        return gs_err_set(err, GS_EIO, "config file %s: %s", path, strerror(e));
    }
    gs_conf *tmp = malloc(sizeof *tmp);
    char *line = malloc(LINE_MAX_BYTES + 2);
    int rc = 0;
    if (!tmp || !line) {
        rc = gs_err_set(err, GS_ENOMEM, "config file %s: out of memory", path);
        goto out;
    }
    *tmp = *c;
    for (unsigned lineno = 1;; lineno++) {
        size_t len;
        int r = read_line(f, line, &len);
        if (r == RL_EOF)
            break;
        if (r == RL_IOERR) {
            rc = gs_err_set(err, GS_EIO, "config file %s: %s", path, strerror(errno));
            goto out;
        }
        if (r == RL_LONG) {
            rc = gs_err_set(err, GS_EINVAL, "%s:%u: line is longer than %d bytes", path, lineno,
                            LINE_MAX_BYTES);
            goto out;
        }
        if (r == RL_NUL) {
            rc = gs_err_set(err, GS_EINVAL, "%s:%u: line contains a NUL byte", path, lineno);
            goto out;
        }
        char *p = line;
        /* Editors on some systems start a UTF-8 file with a byte-order mark. */
        if (lineno == 1 && strncmp(p, "\xEF\xBB\xBF", 3) == 0)
            p += 3;
        char *key, *val;
        rc = split_line(p, &key, &val, err);
        if (rc == 0 && key)
            rc = gs_conf_set(tmp, key, val, err);
        if (rc != 0) {
            gs_err_prefix(err, "%s:%u: ", path, lineno);
            rc = GS_EINVAL;
            if (err)
                err->code = GS_EINVAL;
            goto out;
        }
    }
    *c = *tmp;
out:
    free(line);
    free(tmp);
    fclose(f);
    return rc;
}

