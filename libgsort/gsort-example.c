/* gsort-example: the libgsort example the README shows. Connects to gsortd
 * (the socket in argv[1], else the default one), sorts a million random
 * uint32_t keys in shared memory, argsorts a few floats, and prints what
 * the daemon said. Build: cc gsort-example.c $(pkg-config --cflags --libs gsort) */
#include <gsort.h>
#include <stdio.h>
#include <stdlib.h>

static int fail(gsort_conn *c, const gsort_error *err)
{
    fprintf(stderr, "gsort-example: %s (%s)\n", err->message, gsort_strerror(err->code));
    gsort_close(c);
    return 1;
}

int main(int argc, char **argv)
{
    gsort_conn *c = NULL;
    gsort_error err;
    gsort_result res;
    if (gsort_connect(&c, argc > 1 ? argv[1] : NULL, &err) < 0)
        return fail(c, &err);

    size_t n = 1000000, unsorted = 0;
    uint32_t *keys = gsort_alloc(n * sizeof *keys, &err);   /* the daemon sorts it in place */
    if (!keys)
        return fail(c, &err);
    for (size_t i = 0; i < n; i++)
        keys[i] = (uint32_t)rand();
    if (gsort_sort(c, GSORT_U32, keys, n, 0, &res, &err) < 0)
        return fail(c, &err);
    for (size_t i = 1; i < n; i++)
        unsorted += keys[i - 1] > keys[i];
    printf("sorted %zu u32 keys on %s with %s (%s plan, %s): %.1f ms, sort %.1f ms; "
           "%zu out of order\n", n, res.device < 0 ? "the host" : res.device_name,
           res.algorithm, res.plan, res.zero_copy ? "zero copy" : "inline", res.total_ms,
           res.sort_ms, unsorted);
    gsort_free(keys);

    float f[] = { 2.5f, -1.0f, 3.0f, 0.0f, -7.5f };
    uint64_t idx[5];
    if (gsort_argsort(c, GSORT_F32, f, 5, idx, GSORT_STABLE, &res, &err) < 0)
        return fail(c, &err);
    printf("argsort with %s:", res.algorithm);
    for (int i = 0; i < 5; i++)
        printf(" %g", f[idx[i]]);
    printf("\n");
    gsort_close(c);
    return unsorted != 0;
}
