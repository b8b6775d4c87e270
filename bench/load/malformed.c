/* The malformed requests of bench/load/malformed.h: each built by hand (raw
 * frames where the framing itself is wrong, gs_client_send where only the
 * header is) and its answer read and compared with the documented one. */
#include "config.h"
#include "malformed.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "gs_err.h"
#include "gs_proto.h"

const malformed_kind malformed_kinds[MALFORMED_COUNT] = {
    { "bad_json", "GS_EINVAL", 1, "header is not JSON" },
    { "bad_dtype", "GS_EINVAL", 0, "dtype u24, payload skipped" },
    { "bad_version", "GS_EUNSUPPORTED", 0, "\"v\":2" },
    { "bad_bytes", "GS_EINVAL", 0, "payload_bytes != n x key size" },
    { "unsealed", "GS_EINVAL", 0, "memfd without F_SEAL_SHRINK" },
    { "big_header", "GS_ETOOBIG", 1, "header length 1 MiB > max_header_bytes" },
    { "cut_header", NULL, 0, "hang up mid-header" },
    { "cut_payload", NULL, 0, "hang up mid-payload" },
};

static int raw_write(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len) {
        ssize_t w = send(fd, p, len, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return -1;
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

/* {"v":1,"op":"sort","dtype":D,"n":N,"payload_bytes":B} */
static cJSON *sort_hdr(int v, const char *dtype, double n, double pbytes, int memfd)
{
    cJSON *h = cJSON_CreateObject();
    cJSON_AddNumberToObject(h, "v", v);
    cJSON_AddStringToObject(h, "op", "sort");
    cJSON_AddStringToObject(h, "dtype", dtype);
    cJSON_AddNumberToObject(h, "n", n);
    if (memfd)
        cJSON_AddTrueToObject(h, "memfd");
    else
        cJSON_AddNumberToObject(h, "payload_bytes", pbytes);
    return h;
}

malformed_outcome malformed_send(gs_client *c, int k, int *again, char *why, size_t wl)
{
    const malformed_kind *mk = &malformed_kinds[k];
    int fd = gs_client_fd(c), rc = 0, sent = -1;
    uint32_t junk[1024] = { 0 };
    gs_err err;
    gs_err_clear(&err);
    *again = 0;
    why[0] = '\0';
    switch (k) {
    case MALFORMED_BAD_JSON: {
        static const char txt[] = "{\"v\":1,\"op\":\"sort\",";   /* cut short: not JSON */
        uint8_t frame[4 + sizeof txt];
        gs_proto_put_len(frame, (uint32_t)(sizeof txt - 1));
        memcpy(frame + 4, txt, sizeof txt - 1);
        sent = raw_write(fd, frame, 4 + sizeof txt - 1);
        break;
    }
    case MALFORMED_BAD_DTYPE: {
        cJSON *h = sort_hdr(1, "u24", 3, 6, 0);
        sent = gs_client_send(c, h, junk, 6, -1, &err);
        cJSON_Delete(h);
        break;
    }
    case MALFORMED_BAD_VERSION: {
        cJSON *h = sort_hdr(2, "u32", 4, 16, 0);
        sent = gs_client_send(c, h, junk, 16, -1, &err);
        cJSON_Delete(h);
        break;
    }
    case MALFORMED_BAD_BYTES: {
        cJSON *h = sort_hdr(1, "u32", 100, 12, 0);   /* 100 keys need 400 bytes */
        sent = gs_client_send(c, h, junk, 12, -1, &err);
        cJSON_Delete(h);
        break;
    }
    case MALFORMED_UNSEALED: {
        int mf = memfd_create("gsort-load-unsealed", MFD_CLOEXEC);
        if (mf < 0 || ftruncate(mf, 4096) < 0) {
            snprintf(why, wl, "memfd_create: %s", strerror(errno));
            if (mf >= 0)
                close(mf);
            return MALFORMED_LOCAL;
        }
        cJSON *h = sort_hdr(1, "u32", 1024, 0, 1);
        sent = gs_client_send(c, h, NULL, 0, mf, &err);
        cJSON_Delete(h);
        close(mf);
        break;
    }
    case MALFORMED_BIG_HEADER: {
        uint8_t len[4];
        gs_proto_put_len(len, 1u << 20);
        sent = raw_write(fd, len, 4);
        break;
    }
    case MALFORMED_CUT_HEADER: {
        static const char txt[] = "{\"v\":1,\"op\":\"sort\",\"dtype\":\"u32\",\"n\":8,"
                                  "\"payload_bytes\":32}";
        uint8_t frame[4 + 20];
        gs_proto_put_len(frame, (uint32_t)(sizeof txt - 1));
        memcpy(frame + 4, txt, 20);                   /* 20 of its bytes, then hang up */
        sent = raw_write(fd, frame, sizeof frame);
        break;
    }
    case MALFORMED_CUT_PAYLOAD: {
        cJSON *h = sort_hdr(1, "u32", 1024, 4096, 0);
        sent = gs_client_send(c, h, junk, 1000, -1, &err);   /* 1000 of 4096 bytes */
        cJSON_Delete(h);
        break;
    }
    }
    if (sent != 0) {
        snprintf(why, wl, "sending malformed request %s failed: %s", mk->name,
                 err.msg[0] ? err.msg : strerror(errno));
        *again = 1;
        return MALFORMED_NOT_SENT;
    }
    if (!mk->code) {
        /* a hang-up: nothing comes back; the daemon must drop this
         * connection and keep serving (the next request, on a new one) */
        *again = 1;
        return MALFORMED_AS_DOCUMENTED;
    }
    cJSON *h = NULL;
    rc = gs_client_recv(c, &h, NULL, 0, NULL, &err);
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(h, "error");
    const cJSON *code = cJSON_GetObjectItemCaseSensitive(e, "code");
    int closes = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(h, "close"));
    malformed_outcome out = MALFORMED_AS_DOCUMENTED;
    if (!(rc == 0 && h && !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(h, "ok")) &&
          cJSON_IsString(code) && !strcmp(code->valuestring, mk->code) && closes == mk->closes)) {
        char *txt = h ? cJSON_PrintUnformatted(h) : NULL;
        snprintf(why, wl, "malformed request %s (%s): wanted %s%s, got %s", mk->name, mk->what,
                 mk->code, mk->closes ? " and close" : "", txt ? txt : rc ? err.msg : "no reply");
        free(txt);
        out = MALFORMED_WRONG_ANSWER;
        closes = 1;   /* the stream state is unknown: start over */
    }
    cJSON_Delete(h);
    *again = closes;
    return out;
}
