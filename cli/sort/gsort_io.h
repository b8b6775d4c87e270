/* The gsort command's file handling: arrays in memory the daemon can map
 * (gsort_alloc) or plain heap memory, whole binary inputs read straight
 * into such an array, a chunked collector for input of unknown length, and
 * an output that replaces its file only once everything was written (a
 * temporary file beside it, renamed over it). */
#ifndef GSORT_IO_H
#define GSORT_IO_H

#include <stddef.h>
#include <stdint.h>

#include "gs_err.h"

/* ---- arrays ---- */

typedef struct gsc_buf {
    void *ptr;
    size_t size;         /* bytes asked for */
    int shared;          /* 1: from gsort_alloc, 0: malloc */
} gsc_buf;

/* Allocate `bytes` (0 gives a NULL ptr and success). With want_shared the
 * memory comes from gsort_alloc, so the daemon sorts it with no copy; when
 * that fails it comes from malloc (still correct, one copy each way). */
int gsc_buf_alloc(gsc_buf *b, size_t bytes, int want_shared, gs_err *err);
void gsc_buf_free(gsc_buf *b);

/* ---- growing input ---- */

/* Bytes of unknown total length kept in a list of chunks, then gathered
 * into one gsc_buf. Gathering frees each chunk as soon as it is copied, and
 * pages of the new buffer are only touched as they are filled, so the peak
 * stays near one copy of the data. */
typedef struct gsc_chunk gsc_chunk;
typedef struct gsc_chunks {
    gsc_chunk *head, *tail;
    size_t total;        /* bytes held */
    size_t next_cap;     /* capacity of the next chunk */
} gsc_chunks;

void gsc_chunks_init(gsc_chunks *c);
/* Room for at least `min` more bytes at the end: returns a pointer to it
 * and its length in *avail (>= min), or NULL (GS_ENOMEM in err). */
void *gsc_chunks_room(gsc_chunks *c, size_t min, size_t *avail, gs_err *err);
/* `len` bytes were written into the room last returned. */
void gsc_chunks_commit(gsc_chunks *c, size_t len);
/* Move everything into `out` (total + extra bytes, allocated as
 * gsc_buf_alloc does); the chunks are freed on success and on failure. */
int gsc_chunks_gather(gsc_chunks *c, size_t extra, int want_shared, gsc_buf *out,
                      gs_err *err);
void gsc_chunks_free(gsc_chunks *c);

/* ---- input files ---- */

/* An input: a path, or "-" for standard input. display is what messages
 * call it ("standard input" for "-"). */
typedef struct gsc_input {
    const char *path;
    const char *display;
    int fd;
} gsc_input;

int gsc_input_open(gsc_input *in, const char *path, gs_err *err);
void gsc_input_close(gsc_input *in);
/* read(2) up to len bytes, retrying EINTR; 0 at end of input. Returns the
 * count or GS_EIO naming the input. */
long gsc_input_read(gsc_input *in, void *buf, size_t len, gs_err *err);

/* Read the whole of every input (npaths >= 1; "-" is standard input), as
 * binary elements of `esize` bytes, into one array `out` followed by
 * `extra(count)` spare bytes (count: the elements read; extra may be
 * NULL). A file whose size is no multiple of esize is GS_EINVAL naming it
 * and both sizes. Regular files are read straight into the array; pipes
 * and terminals through gsc_chunks. */
typedef size_t (*gsc_extra_fn)(size_t count);
int gsc_read_binary(const char *const *paths, size_t npaths, size_t esize, const char *tname,
                    gsc_extra_fn extra, int want_shared, gsc_buf *out, size_t *count,
                    gs_err *err);

/* ---- output ---- */

/* Where the result goes: standard output, a file replaced through a
 * temporary sibling and rename(2), or (for an existing non-regular file
 * such as a FIFO or /dev/null) the file itself, opened when first written. */
typedef struct gsc_output {
    const char *display;     /* for messages */
    char target[4096];       /* the file renamed over ("" for stdout/direct) */
    char tmp[4096];          /* the temporary file, "" when none */
    const char *direct;      /* a non-regular file written in place */
    int fd;
    int mode;                /* permissions the result gets */
    int broken_pipe;         /* a write failed with EPIPE: the reader went away */
} gsc_output;

/* Prepare the output: NULL or "-" is standard output. For a file, create
 * the temporary now, so an unwritable directory fails before any work.
 * SIGINT, SIGTERM and SIGHUP remove the temporary on the way out. */
int gsc_output_open(gsc_output *o, const char *path, gs_err *err);
/* Write all of buf (retrying short writes and EINTR); GS_EIO naming the
 * output ("Broken pipe", and broken_pipe set, when the reader went away
 * and SIGPIPE is ignored). */
int gsc_output_write(gsc_output *o, const void *buf, size_t len, gs_err *err);
/* Finish: for a file, close the temporary (a late write error shows up
 * here), give it the permissions of the file it replaces (or 0666 less
 * the umask) and rename it over the target. */
int gsc_output_commit(gsc_output *o, gs_err *err);
/* Give up: remove the temporary; the target is left as it was. */
void gsc_output_abort(gsc_output *o);

#endif
