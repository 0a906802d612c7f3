/*
 * The usage example at the top of the session section of uform.h, compiled and run. The body
 * between the markers is generated from the header by CMake (session_example.inc), so the
 * example cannot go stale; the checks after it verify what it printed is right.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "uform/uform.h"

static int example(float *out) {
#include "session_example.inc"
    memcpy(out, ys, sizeof ys);
    return status == UFORM_SESSION_OK ? 0 : 1;
}

int main(void) {
    float ys[8] = {0};
    if (example(ys) != 0) return 1;
    // Row 0: logits x[0] · w[j] = {1, 2, 3, 6}; softmax of those.
    double logits[4] = {1, 2, 3, 6}, sum = 0, worst = 0;
    for (int j = 0; j < 4; ++j) sum += exp(logits[j]);
    for (int j = 0; j < 4; ++j) {
        double expected = exp(logits[j]) / sum, error = fabs(ys[j] - expected);
        if (error > worst) worst = error;
    }
    printf("largest difference from the double softmax: %.3g\n", worst);
    if (worst > 1e-6) {
        fprintf(stderr, "example gave %g %g %g %g\n", ys[0], ys[1], ys[2], ys[3]);
        return 1;
    }
    printf("1 passed, 0 failed\n");
    return 0;
}
