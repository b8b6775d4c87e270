/* The client's sort (gs_client.h): the request built from the caller's
 * arrays, sent inline straight from its buffers with sendmsg, or as a
 * sealed memfd riding in the same sendmsg as the frame head (the shared
 * memory is made here too); the reply's payload read straight into the
 * caller's buffers once its declared size has been checked against what
 * the request asked for; and the reply's account of how it was served. */
#include "config.h"
#include "gs_client.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include "gs_client_int.h"

/* ---- shared memory ---- */

int gs_client_shm_alloc_named(gs_client_shm *shm, const char *name, size_t bytes,
                              gs_err *err)
{
    shm->fd = -1;
    shm->ptr = NULL;
    shm->size = 0;
    if (bytes > (size_t)INT64_MAX)
        return gs_err_set(err, GS_ETOOBIG, "a %zu-byte memfd is larger than a file can be",
                          bytes);
    int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0)
        return gs_err_set(err, GS_EIO, "memfd_create: %s", strerror(errno));
    if (ftruncate(fd, (off_t)bytes) < 0) {
        int e = errno;
        close(fd);
        return gs_err_set(err, GS_ENOMEM, "sizing a %zu-byte memfd: %s", bytes, strerror(e));
    }
    void *p = NULL;
    /* An empty memfd (n = 0) has nothing to map. */
    if (bytes) {
        p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (p == MAP_FAILED) {
            int e = errno;
            close(fd);
            return gs_err_set(err, GS_ENOMEM, "mapping a %zu-byte memfd: %s", bytes, strerror(e));
        }
    }
    /* The daemon maps it too: a shrink under its feet would SIGBUS it, so
     * it refuses a memfd without F_SEAL_SHRINK. */
    if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) < 0) {
        int e = errno;
        if (p)
            munmap(p, bytes);
        close(fd);
        return gs_err_set(err, GS_EIO, "sealing the memfd: %s", strerror(e));
    }
    shm->fd = fd;
    shm->ptr = p;
    shm->size = bytes;
    return 0;
}

int gs_client_shm_alloc(gs_client_shm *shm, size_t bytes, gs_err *err)
{
    return gs_client_shm_alloc_named(shm, "gsort", bytes, err);
}

void gs_client_shm_free(gs_client_shm *shm)
{
    if (!shm)
        return;
    if (shm->ptr)
        munmap(shm->ptr, shm->size);
    if (shm->fd >= 0)
        close(shm->fd);
    shm->fd = -1;
    shm->ptr = NULL;
    shm->size = 0;
}

/* ---- sort ---- */

/* Offset of [p, p + bytes) inside the shm; -1 when it is not inside. A
 * NULL pointer is accepted only for an empty array (n = 0). */
static int shm_offset(const gs_client_shm *shm, const void *p, size_t bytes, uint64_t *off)
{
    if (!p) {
        *off = 0;
        return bytes == 0 ? 0 : -1;
    }
    uintptr_t base = (uintptr_t)shm->ptr, a = (uintptr_t)p;
    if (!shm->ptr || a < base || a - base > shm->size || bytes > shm->size - (a - base))
        return -1;
    *off = (uint64_t)(a - base);
    return 0;
}

/* The sort reply's account of how it was served, in the client's terms
 * (parameters as "name=value,..."). */
static int parse_result(gs_client *c, const cJSON *h, gs_client_result *r, gs_err *err)
{
    memset(r, 0, sizeof *r);
    r->device = -1;
    gs_reply_sort rs;
    gs_jnum_doc doc = client_reply_doc(c, h);
    int rc = gs_reply_sort_parse(h, &doc, &rs, err);
    if (rc)
        return rc;
    r->device = rs.device;
    snprintf(r->device_name, sizeof r->device_name, "%s", rs.device_name);
    snprintf(r->algorithm, sizeof r->algorithm, "%s", rs.algorithm);
    gs_params_format(&rs.params, r->params, sizeof r->params);   /* whole items only */
    snprintf(r->plan, sizeof r->plan, "%s", rs.plan);
    snprintf(r->fallback, sizeof r->fallback, "%s", rs.fallback);
    r->chunks = rs.chunks;
    r->nparts = rs.nparts < 8 ? rs.nparts : 8;
    for (unsigned i = 0; i < r->nparts; i++) {
        r->parts[i].device = rs.parts[i].device;
        snprintf(r->parts[i].algorithm, sizeof r->parts[i].algorithm, "%s",
                 rs.parts[i].algorithm);
        r->parts[i].n = rs.parts[i].n;
        r->parts[i].chunks = rs.parts[i].chunks;
        r->parts[i].ms = rs.parts[i].ms;
        r->parts[i].predicted_ms = rs.parts[i].predicted_ms;
    }
    snprintf(r->split_declined, sizeof r->split_declined, "%s", rs.split_declined);
    r->merge_ms = rs.times_ms.merge;
    r->queue_ms = rs.times_ms.queue;
    r->receive_ms = rs.times_ms.receive;
    r->upload_ms = rs.times_ms.upload;
    r->sort_ms = rs.times_ms.sort;
    r->download_ms = rs.times_ms.download;
    r->total_ms = rs.times_ms.total;
    r->times = rs.times_ms;
    return 0;
}

int gs_client_sort_req(const gs_client_sort *s, gs_proto_req *rq, gs_err *err)
{
    memset(rq, 0, sizeof *rq);
    rq->op = GS_OP_SORT;
    rq->shape = s->shape;
    rq->shape.descending = s->shape.descending != 0;
    rq->shape.stable = s->shape.stable != 0;
    rq->n = s->n;
    if (s->narrow) {
        if (!gs_narrow_row(s->narrow))
            return gs_err_set(err, GS_EINVAL, "sort: narrow key type %d unknown", s->narrow);
        rq->narrow = s->narrow;
        rq->shape.dtype = GS_DT_U32;
    }
    if (s->lex && s->lex->nkeys) {
        rq->lex = *s->lex;
        int rc = gs_lex_layout(&rq->lex, rq->n, &rq->lex_bytes, err);
        if (rc)
            return rc;
        rq->shape.dtype = gs_lex_word_bytes(&rq->lex) == 4 ? GS_DT_U32 : GS_DT_U64;
        rq->shape.stable = 1;
        rq->shape.descending = 0;
    }
    rq->device = s->device;
    rq->split = s->split;
    if (s->algorithm) {
        if (strlen(s->algorithm) >= sizeof rq->algorithm)
            return gs_err_set(err, GS_EINVAL, "sort: algorithm name '%s' too long",
                              s->algorithm);
        memcpy(rq->algorithm, s->algorithm, strlen(s->algorithm) + 1);
    }
    if (s->params) {
        int rc = gs_params_parse(s->params, &rq->params, err);
        if (rc)
            return rc;
        rq->has_params = 1;
    }
    return 0;
}

int gs_client_sort_run(gs_client *c, const gs_client_sort *s, gs_client_result *res,
                       gs_err *err)
{
    int rc = client_check_usable(c, err);
    if (rc)
        return rc;
    if (!s || (int)s->shape.dtype < 0 || s->shape.dtype >= GS_DT_COUNT ||
        (int)s->shape.payload < 0 || s->shape.payload >= GS_PL_COUNT)
        return gs_err_set(err, GS_EINVAL, "sort: bad dtype or values kind");
    if (s->n > GS_PROTO_MAX_N)
        return gs_err_set(err, GS_ETOOBIG, "sort: n = %zu exceeds the protocol's %" PRIu64,
                          s->n, GS_PROTO_MAX_N);
    if (s->narrow && !gs_narrow_row(s->narrow))
        return gs_err_set(err, GS_EINVAL, "sort: narrow key type %d unknown", s->narrow);
    size_t ks = s->narrow ? gs_narrow_row(s->narrow)->bytes : gs_dtype_size(s->shape.dtype),
           vs = gs_payload_size(s->shape.payload);
    if (s->n && (s->n > SIZE_MAX / ks || (vs && s->n > SIZE_MAX / vs)))
        return gs_err_set(err, GS_ETOOBIG, "sort: %zu elements overflow the address space", s->n);
    size_t kb = s->n * ks, vb = s->n * vs;
    if (s->lex && s->lex->nkeys) {      /* the key arrays, laid out */
        gs_lex lx = *s->lex;
        uint64_t lb;
        if ((rc = gs_lex_layout(&lx, s->n, &lb, err)))
            return rc;
        if (lb > SIZE_MAX)
            return gs_err_set(err, GS_ETOOBIG, "lexsort: %zu rows overflow the address "
                              "space", s->n);
        kb = (size_t)lb;
    }
    if ((kb && !s->keys) || (vb && !s->values))
        return gs_err_set(err, GS_EINVAL, "sort: keys%s missing", vb ? " or values" : "");
    if (s->shape.segments && (!s->offsets || s->shape.segments > GS_PROTO_MAX_N))
        return gs_err_set(err, GS_EINVAL, "sort: %llu segments need their offsets (at most "
                          "2^53 segments)", (unsigned long long)s->shape.segments);
    size_t ob = s->shape.segments ? 8 * ((size_t)s->shape.segments + 1) : 0;

    gs_proto_req rq;
    if ((rc = gs_client_sort_req(s, &rq, err)))
        return rc;
    if (s->shm) {
        rq.memfd = 1;
        if (shm_offset(s->shm, s->keys, kb, &rq.keys_offset))
            return gs_err_set(err, GS_EINVAL, "sort: keys do not lie inside the shared memory");
        if (vb) {
            if (shm_offset(s->shm, s->values, vb, &rq.values_offset))
                return gs_err_set(err, GS_EINVAL,
                                  "sort: values do not lie inside the shared memory");
        } else {
            rq.values_offset = rq.keys_offset + kb;
        }
        if (s->shape.segments &&
            shm_offset(s->shm, s->offsets, ob, &rq.offsets_offset))
            return gs_err_set(err, GS_EINVAL, "sort: the segment offsets do not lie inside "
                              "the shared memory");
    }
    uint64_t id = c->next_id++;
    rq.id = cJSON_CreateNumber((double)id);
    if (!rq.id)
        return gs_err_set(err, GS_ENOMEM, "out of memory building a request");
    gs_err herr;
    gs_err_clear(&herr);
    cJSON *hdr = gs_proto_sort_header(&rq, &herr);
    cJSON_Delete(rq.id);
    rq.id = NULL;
    if (!hdr)
        return gs_err_set(err, herr.code ? herr.code : GS_ENOMEM, "%s",
                          herr.code ? herr.msg : "out of memory building a request");

    /* Inline: keys, then values the daemon must permute (idx values are
     * produced by it, not sent). */
    struct iovec pl[3];
    int npl = 0;
    if (!s->shm) {
        pl[npl++] = (struct iovec){ s->keys, kb };
        if (s->shape.payload == GS_PL_U32 || s->shape.payload == GS_PL_U64)
            pl[npl++] = (struct iovec){ s->values, vb };
        if (ob)     /* then the segment offsets */
            pl[npl++] = (struct iovec){ (void *)s->offsets, ob };
    }
    cJSON *h = NULL;
    gs_reply_head head;
    rc = client_exchange(c, hdr, pl, npl, s->shm ? s->shm->fd : -1, &h, &head, err);
    if (rc)
        return rc;
    uint64_t pb = head.payload_bytes;
    if (!head.ok) {
        /* An error carries no payload; one that claims to leaves us lost. */
        rc = pb ? client_set_broken(c, err, GS_ECORRUPT, "error reply declares a %" PRIu64
                                    "-byte payload", pb)
                : client_reply_error(c, &head, err);
        cJSON_Delete(h);
        return rc;
    }
    if (!cJSON_IsNumber(head.id) || head.id->valuedouble != (double)id) {
        cJSON_Delete(h);
        return client_set_broken(c, err, GS_ECORRUPT, "sort reply does not echo the request "
                                 "id");
    }
    uint64_t want = s->shm ? 0 : rq.out_bytes;
    if (pb != want) {
        cJSON_Delete(h);
        return client_set_broken(c, err, GS_EWRONG, "sort reply declares %" PRIu64 " payload "
                                 "bytes, the request expects %" PRIu64, pb, want);
    }
    if (pb) {
        /* top-k: each row's k, packed row after row, at the front of keys and values */
        size_t m = s->shape.topk ? (size_t)(s->shape.rows > 1 ? s->shape.rows : 1) *
                                   (size_t)s->shape.k : s->n;
        struct iovec in[2] = { { s->keys, m * ks }, { s->values, m * vs } };
        int lex = s->lex && s->lex->nkeys;  /* a lexsort answers indices only */
        rc = client_recv_all(c, lex ? in + 1 : in, lex || !vb ? 1 : 2, "a sort reply payload",
                             err);
        if (rc) {
            cJSON_Delete(h);
            return rc;
        }
    }
    /* The frame was whole, so the connection stays usable even when the
     * body is not what a sort reply should be. */
    gs_client_result local;
    rc = parse_result(c, h, res ? res : &local, err);
    cJSON_Delete(h);
    return rc;
}
