// Does FFTW's advanced interface (fftwf_plan_many_dft_r2c) make the engine's 512-point real FFT
// cheaper per transform than one plan executed per stream? Issue 17 asked for batched transforms
// across streams; this measures what they could save before the engine is restructured for them.
//
//   gcc -O2 tools/benchmarks/fft_batch_bench.c -o /tmp/fft_batch_bench -lfftw3f -lm && /tmp/fft_batch_bench
//
// 1,024 windows of 512 samples (the engine's window at 1,024 streams), FFTW_MEASURE plans, 7 rounds;
// prints the median ns per transform of each layout and its ratio to one plan per stream:
// contiguous batches (howmany = B, one window after another) and interleaved batches (stride B:
// sample i of the B streams side by side, the struct-of-arrays layout that SIMD across streams needs).
#include <fftw3.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

enum { N = 512, STREAMS = 1024, REPEATS = 100, ROUNDS = 7, OUT = N / 2 + 2 };  // OUT: 16-byte aligned rows

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static int compare(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void fill(float *in) {
    for (long i = 0; i < (long)N * STREAMS; i++) in[i] = (float)(rand() % 2000 - 1000) / 1000.0f;
}

// Median over ROUNDS of ns per transform, executing `plan` on consecutive groups of `batch` windows.
static double measure(fftwf_plan plan, int batch, float *in, fftwf_complex *out) {
    double rounds[ROUNDS];
    for (int round = 0; round < ROUNDS; round++) {
        double start = now();
        for (int r = 0; r < REPEATS; r++)
            for (int s = 0; s < STREAMS; s += batch)
                fftwf_execute_dft_r2c(plan, in + (long)s * N, out + (long)s * OUT);
        rounds[round] = (now() - start) / ((double)REPEATS * STREAMS) * 1e9;
    }
    qsort(rounds, ROUNDS, sizeof rounds[0], compare);
    return rounds[ROUNDS / 2];
}

int main(void) {
    float *in = fftwf_alloc_real((size_t)N * STREAMS);
    fftwf_complex *out = fftwf_alloc_complex((size_t)OUT * STREAMS);
    int n = N;
    fftwf_plan one = fftwf_plan_dft_r2c_1d(N, in, out, FFTW_MEASURE);
    fill(in);
    double single = measure(one, 1, in, out);
    printf("one plan per stream: %.1f ns per transform\n", single);
    int batches[] = {4, 8, 16, 64};
    for (int b = 0; b < 4; b++) {
        int h = batches[b];
        fftwf_plan contiguous = fftwf_plan_many_dft_r2c(1, &n, h, in, NULL, 1, N, out, NULL, 1, OUT, FFTW_MEASURE);
        fftwf_plan interleaved = fftwf_plan_many_dft_r2c(1, &n, h, in, NULL, h, 1, out, NULL, h, 1, FFTW_MEASURE);
        fill(in);
        double c = measure(contiguous, h, in, out), i = measure(interleaved, h, in, out);
        printf("batches of %2d: contiguous %.1f ns (%.2f×), interleaved %.1f ns (%.2f×)\n", h, c, c / single, i, i / single);
        fftwf_destroy_plan(contiguous);
        fftwf_destroy_plan(interleaved);
    }
    fftwf_destroy_plan(one);
    fftwf_free(in);
    fftwf_free(out);
    return 0;
}
