/* Access control: who is at the other end of a new connection (the pid,
 * uid and gid the kernel recorded at connect(), SO_PEERCRED), whether
 * allow_uids / allow_gids let it be served, and how many connections and
 * how much of the memory budget each uid holds (max_clients_per_uid,
 * max_memory_per_uid; the budget itself is gs_admit.c's). A uid, the primary gid, or one of the
 * uid's supplementary groups from the user database must be listed; those
 * lookups can be slow (NSS may be LDAP or SSSD, and they run on the event
 * loop), so each uid's verdict is kept for PEER_MEMO_MS. The lists are
 * resolved to ids once, at start and at each reload; a reload forgets the
 * kept verdicts. The per-uid caps spare root and the daemon's own user:
 * either can stop the daemon anyway, so capping them protects no one, and
 * a daemon a user runs for their own processes would otherwise serve fewer
 * of them than max_clients. */
#include "config.h"
#include "gs_srv_int.h"

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gs_log.h"
#include "gs_time.h"

/* The peer's pid, uid and gid as the kernel recorded them at connect();
 * 1, or 0 when the kernel will not say (cred is then nobody's). */
static int peer_cred(int fd, struct ucred *cr, char *who, size_t wlen)
{
    socklen_t len = sizeof *cr;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, cr, &len) < 0 || len != sizeof *cr) {
        int e = errno;
        cr->pid = 0;
        cr->uid = (uid_t)-1;
        cr->gid = (gid_t)-1;
        snprintf(who, wlen, "fd %d, unidentified (SO_PEERCRED: %s)", fd, strerror(e));
        return 0;
    }
    snprintf(who, wlen, "fd %d, pid %ld, uid %u, gid %u", fd, (long)cr->pid,
             (unsigned)cr->uid, (unsigned)cr->gid);
    return 1;
}

static int id_listed(const unsigned *ids, size_t n, unsigned id)
{
    for (size_t i = 0; i < n; i++)
        if (ids[i] == id)
            return 1;
    return 0;
}

/* allow_uids / allow_gids: the uid, the primary gid the kernel reports, or
 * one of the supplementary groups the user database gives the uid's name
 * (getgrouplist: membership as of now, not as of the client's login). */
static int peer_allowed(srv_acl *a, const struct ucred *cr)
{
    if (!a->nuid && !a->ngid)
        return 1;
    if (id_listed(a->uid, a->nuid, (unsigned)cr->uid) ||
        id_listed(a->gid, a->ngid, (unsigned)cr->gid))
        return 1;
    if (!a->ngid)
        return 0;
    const double now = gs_now_ms();
    for (unsigned i = 0; i < PEER_MEMO_N; i++)
        if (a->memo[i].until_ms > now && a->memo[i].uid == (unsigned)cr->uid)
            return a->memo[i].allowed;
    int allowed = 0;
    char buf[16384];
    struct passwd pw, *res = NULL;
    if (getpwuid_r(cr->uid, &pw, buf, sizeof buf, &res) == 0 && res) {
        gid_t groups[256];
        int ng = (int)(sizeof groups / sizeof groups[0]);
        if (getgrouplist(res->pw_name, res->pw_gid, groups, &ng) < 0)
            ng = (int)(sizeof groups / sizeof groups[0]);   /* the first 256 are filled */
        for (int i = 0; i < ng && !allowed; i++)
            allowed = id_listed(a->gid, a->ngid, (unsigned)groups[i]);
    }
    GS_DEBUG("allow_gids: supplementary groups of uid %u looked up: %s (kept %.0f s)",
             (unsigned)cr->uid, allowed ? "listed" : "not listed", PEER_MEMO_MS / 1000);
    a->memo[a->memo_next++ % PEER_MEMO_N] =
        (struct peer_memo){ (unsigned)cr->uid, allowed, now + PEER_MEMO_MS };
    return allowed;
}

int srv_acl_load(srv *s, const gs_conf *cf, gs_err *err)
{
    unsigned u[GS_CONF_MAX_IDS], g[GS_CONF_MAX_IDS];
    size_t nu, ng;
    int rc = gs_conf_parse_ids(GS_CONF_KEY(allow_uids), cf->allow_uids, 0, u, &nu, NULL, 0, err);
    if (rc == 0)
        rc = gs_conf_parse_ids(GS_CONF_KEY(allow_gids), cf->allow_gids, 1, g, &ng, NULL, 0, err);
    if (rc < 0)
        return rc;
    srv_acl *a = &s->acl;
    memcpy(a->uid, u, sizeof u);
    memcpy(a->gid, g, sizeof g);
    a->nuid = nu;
    a->ngid = ng;
    memset(a->memo, 0, sizeof a->memo);   /* verdicts under the old lists */
    return 0;
}

int srv_acl_active(const srv *s)
{
    return s->acl.nuid || s->acl.ngid;
}

int srv_acl_admit(srv *s, int fd, struct ucred *cr, char *who, size_t wlen, char *msg,
                  size_t mlen)
{
    int have_cred = peer_cred(fd, cr, who, wlen);
    if (!srv_acl_active(s) || (have_cred && peer_allowed(&s->acl, cr)))
        return 1;
    if (have_cred)
        snprintf(msg, mlen, "permission denied: uid %u (gid %u) is not allowed by this "
                 "daemon's allow_uids/allow_gids", (unsigned)cr->uid, (unsigned)cr->gid);
    else
        snprintf(msg, mlen, "permission denied: the daemon cannot identify this client "
                 "(SO_PEERCRED) and allow_uids/allow_gids are set");
    return 0;
}

/* ---- connections per uid ---- */

void srv_acl_uids_init(srv *s)
{
    memset(&s->uids, 0, sizeof s->uids);
    pthread_mutex_init(&s->uids.mu, NULL);   /* default attributes: cannot fail on Linux */
}

void srv_acl_uids_free(srv *s)
{
    free(s->uids.v);
    s->uids.v = NULL;
    s->uids.n = s->uids.cap = 0;
    pthread_mutex_destroy(&s->uids.mu);
}

/* The uid's entry, or NULL. Under mu. As many entries as uids connected:
 * a linear search, as there are seldom more than a handful. */
static struct srv_uid *uid_find(srv_uids *u, unsigned uid)
{
    for (size_t i = 0; i < u->n; i++)
        if (u->v[i].uid == uid)
            return &u->v[i];
    return NULL;
}

/* The uid's entry, made when missing (NULL: out of memory). Under mu. */
static struct srv_uid *uid_get(srv_uids *u, unsigned uid)
{
    struct srv_uid *e = uid_find(u, uid);
    if (e)
        return e;
    if (u->n == u->cap) {
        size_t nc = u->cap ? u->cap * 2 : 16;
        struct srv_uid *v = realloc(u->v, nc * sizeof *v);
        if (!v)
            return NULL;
        u->v = v;
        u->cap = nc;
    }
    u->v[u->n] = (struct srv_uid){ uid, 0, 0 };
    return &u->v[u->n++];
}

/* A uid with no connection and no memory left takes no entry. Under mu. */
static void uid_tidy(srv_uids *u, struct srv_uid *e)
{
    if (e->n == 0 && e->mem == 0)
        *e = u->v[--u->n];
}

int srv_acl_uid_exempt(const srv *s, unsigned uid)
{
    return !s->uid_cap_all && (uid == 0 || uid == (unsigned)geteuid());
}

int srv_acl_uid_take(srv *s, const struct ucred *cr, unsigned cap, char *msg, size_t mlen)
{
    srv_uids *u = &s->uids;
    unsigned uid = (unsigned)cr->uid;
    int ok = 1;
    pthread_mutex_lock(&u->mu);
    struct srv_uid *e = uid_get(u, uid);
    if (!e) {
        snprintf(msg, mlen, "out of memory");
        ok = -1;
    } else if (cap && !srv_acl_uid_exempt(s, uid) && e->n >= cap) {
        snprintf(msg, mlen, "too many connections from uid %u (max_clients_per_uid = %u); "
                 "close one or try again later", uid, cap);
        ok = 0;
        uid_tidy(u, e);
    } else {
        e->n++;
    }
    pthread_mutex_unlock(&u->mu);
    return ok;
}

void srv_acl_uid_drop(srv *s, unsigned uid)
{
    srv_uids *u = &s->uids;
    pthread_mutex_lock(&u->mu);
    struct srv_uid *e = uid_find(u, uid);
    if (e && e->n) {
        e->n--;
        uid_tidy(u, e);
    }
    pthread_mutex_unlock(&u->mu);
}

/* ---- memory per uid ---- */

int srv_acl_uid_mem_take(srv *s, unsigned uid, uint64_t bytes, uint64_t cap)
{
    srv_uids *u = &s->uids;
    int ok = 0;
    pthread_mutex_lock(&u->mu);
    struct srv_uid *e = uid_get(u, uid);
    if (e && bytes <= cap && e->mem <= cap - bytes) {
        e->mem += bytes;
        ok = 1;
    } else if (e) {
        uid_tidy(u, e);
    }
    pthread_mutex_unlock(&u->mu);
    return ok;
}

void srv_acl_uid_mem_give(srv *s, unsigned uid, uint64_t bytes)
{
    srv_uids *u = &s->uids;
    pthread_mutex_lock(&u->mu);
    struct srv_uid *e = uid_find(u, uid);
    if (e) {
        e->mem = e->mem > bytes ? e->mem - bytes : 0;
        uid_tidy(u, e);
    }
    pthread_mutex_unlock(&u->mu);
}

uint64_t srv_acl_uid_mem(srv *s, unsigned uid)
{
    srv_uids *u = &s->uids;
    pthread_mutex_lock(&u->mu);
    struct srv_uid *e = uid_find(u, uid);
    uint64_t m = e ? e->mem : 0;
    pthread_mutex_unlock(&u->mu);
    return m;
}
