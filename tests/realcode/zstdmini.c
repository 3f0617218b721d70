/* A small zstd command: compress or decompress a file with the library's one-shot and streaming APIs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "zstd.h"

static unsigned char *slurp(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *buf = malloc(n > 0 ? (size_t)n : 1);
    *size = fread(buf, 1, (size_t)n, f);
    fclose(f);
    return buf;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: zstdmini c|d LEVEL FILE\n");
        return 2;
    }
    size_t size = 0;
    unsigned char *in = slurp(argv[3], &size);
    if (!in) { perror("open"); return 1; }
    if (argv[1][0] == 'c') {
        size_t cap = ZSTD_compressBound(size);
        void *out = malloc(cap);
        ZSTD_CCtx *cctx = ZSTD_createCCtx();
        ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, atoi(argv[2]));
        ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1);
        size_t n = ZSTD_compress2(cctx, out, cap, in, size);
        if (ZSTD_isError(n)) { fprintf(stderr, "%s\n", ZSTD_getErrorName(n)); return 1; }
        fwrite(out, 1, n, stdout);
        ZSTD_freeCCtx(cctx);
    } else {
        ZSTD_DStream *ds = ZSTD_createDStream();
        ZSTD_inBuffer ib = {in, size, 0};
        unsigned char out[1 << 16];
        while (ib.pos < ib.size) {
            ZSTD_outBuffer ob = {out, sizeof out, 0};
            size_t r = ZSTD_decompressStream(ds, &ob, &ib);
            if (ZSTD_isError(r)) { fprintf(stderr, "%s\n", ZSTD_getErrorName(r)); return 1; }
            fwrite(out, 1, ob.pos, stdout);
        }
        ZSTD_freeDStream(ds);
    }
    free(in);
    return 0;
}
