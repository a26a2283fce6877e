/* STREAM-style triad a[i] = b[i] + s * c[i] on fp64 arrays, the reference for refenv's CPU probe.
 *
 * Written for refenv after McCalpin's STREAM method: arrays first touched by the threads that use
 * them, one untimed pass, then NTIMES timed passes; 24 bytes per element counted (two reads, one
 * write), as STREAM and the probe both count. Prints one JSON object.
 *
 * Build: gcc -O3 -fopenmp stream_triad.c -o stream_triad
 * Run:   OMP_NUM_THREADS=2 ./stream_triad N NTIMES
 *
 * Built with -shared -fPIC -DSTREAM_TRIAD_LIB it is a library whose `stream_triad` runs one pass over
 * arrays the caller owns, so the probe's benchmark can alternate C and torch passes on the same arrays.
 */
#include <omp.h>

/* One triad pass a = b + scalar * c over n elements, on OMP_NUM_THREADS threads. */
void stream_triad(double *a, const double *b, const double *c, double scalar, long n) {
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; i++) a[i] = b[i] + scalar * c[i];
}

#ifndef STREAM_TRIAD_LIB
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static int cmp_double(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* A standard-normal-ish value from a per-index hash (sum of uniforms): random, never zeros. */
static double noise(uint64_t i) {
    uint64_t z = i * 0x9E3779B97F4A7C15ull;
    double sum = 0.0;
    for (int k = 0; k < 4; k++) {
        z ^= z >> 31; z *= 0xBF58476D1CE4E5B9ull; z ^= z >> 27;
        sum += (double)(z >> 11) / 9007199254740992.0;
    }
    return (sum - 2.0) * 1.7320508075688772;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s N NTIMES\n", argv[0]);
        return 2;
    }
    long n = atol(argv[1]);
    int ntimes = atoi(argv[2]);
    if (n <= 0 || ntimes <= 0) {
        fprintf(stderr, "N and NTIMES must be positive\n");
        return 2;
    }
    double *a = malloc(sizeof(double) * n), *b = malloc(sizeof(double) * n), *c = malloc(sizeof(double) * n);
    double *times = malloc(sizeof(double) * ntimes);
    if (!a || !b || !c || !times) {
        fprintf(stderr, "cannot allocate 3 x %ld doubles\n", n);
        return 1;
    }
    const double scalar = 3.0;
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; i++) {
        a[i] = 0.0;
        b[i] = noise((uint64_t)i);
        c[i] = noise((uint64_t)(i + n));
    }
    for (int t = -1; t < ntimes; t++) {
        double t0 = omp_get_wtime();
        stream_triad(a, b, c, scalar, n);
        double dt = omp_get_wtime() - t0;
        if (t >= 0) times[t] = dt;
    }
    double check = 0.0;
    for (long i = 0; i < n; i += 4096) check += a[i];
    double bytes = 24.0 * (double)n;
    printf("{\"n\": %ld, \"threads\": %d, \"bytes_per_call\": %.0f, \"seconds_samples\": [", n,
           omp_get_max_threads(), bytes);
    for (int t = 0; t < ntimes; t++) printf("%s%.9f", t ? ", " : "", times[t]);
    qsort(times, ntimes, sizeof(double), cmp_double);
    double median = ntimes % 2 ? times[ntimes / 2] : 0.5 * (times[ntimes / 2 - 1] + times[ntimes / 2]);
    printf("], \"gbps_median\": %.3f, \"gbps_best\": %.3f, \"checksum\": %.6g}\n", bytes / median / 1e9,
           bytes / times[0] / 1e9, check);
    free(a); free(b); free(c); free(times);
    return 0;
}
#endif
