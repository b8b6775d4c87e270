/* SHA-256 against the FIPS 180-2/NIST example vectors, plus lengths around
 * the 55/56/64-byte padding boundaries (expected digests from Python's
 * hashlib) and a check that feeding data in odd-sized pieces gives the same
 * digest as one call. No OpenCL needed. */
#include "config.h"
#include "gs_sha256.h"
#include "tap.h"

#include <string.h>

static const char *hex_of(const void *data, size_t len, char hex[GS_SHA256_HEX_LEN])
{
    uint8_t d[GS_SHA256_LEN];
    gs_sha256(data, len, d);
    return gs_sha256_hex(d, hex);
}

static void vector(const char *name, const void *data, size_t len, const char *want)
{
    char hex[GS_SHA256_HEX_LEN];
    hex_of(data, len, hex);
    if (!tap_ok(strcmp(hex, want) == 0, "sha256(%s)", name))
        tap_diag("got %s, want %s", hex, want);
}

int main(void)
{
    vector("\"\"", "", 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    vector("\"abc\"", "abc", 3, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    const char *m448 = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    vector("448-bit message", m448, strlen(m448),
           "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    const char *m896 = "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmno"
                       "ijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu";
    vector("896-bit message", m896, strlen(m896),
           "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");

    static char million[1000000];
    memset(million, 'a', sizeof million);
    const char *want_m = "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0";
    vector("one million 'a'", million, sizeof million, want_m);

    static const struct { size_t n; const char *want; } edges[] = {
        { 55, "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318" },
        { 56, "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a" },
        { 63, "7d3e74a05d7db15bce4ad9ec0658ea98e3f06eeecf16b4c6fff2da457ddc2f34" },
        { 64, "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb" },
        { 65, "635361c48bb9eab14198e76ea8ab7f1a41685d6ad62aa9146d301d4f17eb0ae0" },
        { 119, "31eba51c313a5c08226adf18d4a359cfdfd8d2e816b13f4af952f7ea6584dcfb" },
        { 120, "2f3d335432c70b580af0e8e1b3674a7c020d683aa5f73aaaedfdc55af904c21c" },
    };
    for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++) {
        char name[64];
        snprintf(name, sizeof name, "%zu x 'a' (padding boundary)", edges[i].n);
        vector(name, million, edges[i].n, edges[i].want);
    }

    /* Streaming in pieces of 1..97 bytes crosses every block offset. */
    gs_sha256_ctx c;
    gs_sha256_init(&c);
    size_t at = 0, step = 1;
    while (at < sizeof million) {
        size_t take = step < sizeof million - at ? step : sizeof million - at;
        gs_sha256_update(&c, million + at, take);
        at += take;
        step = step % 97 + 1;
    }
    uint8_t d[GS_SHA256_LEN];
    char hex[GS_SHA256_HEX_LEN];
    gs_sha256_final(&c, d);
    tap_ok(strcmp(gs_sha256_hex(d, hex), want_m) == 0,
           "incremental update in 1..97-byte pieces matches the one-shot digest");
    return tap_done();
}
