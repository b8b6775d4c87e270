/* Order-preserving key encoding in OpenCL C, the device twin of
 * src/gs_keys.h (same formulas, kept in step by tests/test_radix.c comparing
 * device results with the host reference): an encoded key's plain unsigned
 * order is the requested order. `kind` is 0 for unsigned, 1 for signed
 * integers, 2 for IEEE floats; `desc` is 1 for descending (the complement
 * of the ascending code, so equal keys still keep input order). Every NaN
 * encodes to the single top value and decodes to the canonical quiet NaN;
 * the host restores non-canonical NaN payloads afterwards. Functions are
 * branch-light because they sit inside the radix kernels' load/store loops. */

#define GS_KIND_UNSIGNED 0u
#define GS_KIND_SIGNED 1u
#define GS_KIND_FLOAT 2u

uint gs_enc32(uint b, uint kind, uint desc)
{
    uint e = b;
    if (kind == GS_KIND_SIGNED) {
        e = b ^ 0x80000000u;
    } else if (kind == GS_KIND_FLOAT) {
        /* negative: flip all bits; positive: set the sign bit; NaN: top */
        uint m = (uint)((int)b >> 31) | 0x80000000u;
        e = ((b & 0x7fffffffu) > 0x7f800000u) ? 0xffffffffu : (b ^ m);
    }
    return desc ? ~e : e;
}

uint gs_dec32(uint e, uint kind, uint desc)
{
    if (desc)
        e = ~e;
    if (kind == GS_KIND_SIGNED)
        return e ^ 0x80000000u;
    if (kind == GS_KIND_FLOAT) {
        if (e == 0xffffffffu)
            return 0x7fc00000u;
        /* top bit set: was positive (clear it); else was negative (flip all) */
        uint m = (e & 0x80000000u) ? 0x80000000u : 0xffffffffu;
        return e ^ m;
    }
    return e;
}

ulong gs_enc64(ulong b, uint kind, uint desc)
{
    ulong e = b;
    if (kind == GS_KIND_SIGNED) {
        e = b ^ 0x8000000000000000ul;
    } else if (kind == GS_KIND_FLOAT) {
        ulong m = (ulong)((long)b >> 63) | 0x8000000000000000ul;
        e = ((b & 0x7ffffffffffffffful) > 0x7ff0000000000000ul) ? 0xfffffffffffffffful : (b ^ m);
    }
    return desc ? ~e : e;
}

ulong gs_dec64(ulong e, uint kind, uint desc)
{
    if (desc)
        e = ~e;
    if (kind == GS_KIND_SIGNED)
        return e ^ 0x8000000000000000ul;
    if (kind == GS_KIND_FLOAT) {
        if (e == 0xfffffffffffffffful)
            return 0x7ff8000000000000ul;
        ulong m = (e & 0x8000000000000000ul) ? 0x8000000000000000ul : 0xfffffffffffffffful;
        return e ^ m;
    }
    return e;
}
