/* host_math.h — math helpers the kernels' host implementations share (never device code).
 *
 * tandem_host_exp: exp(w) for w in [-87, 88] (so 2^n stays a normal float), about 1 ulp from
 * the correctly rounded value: Cody-Waite reduction w = n ln2 + r, |r| <= ln2/2, and the
 * degree-7 Taylor polynomial of e^r. Branch-free integer and float arithmetic only, so a loop
 * over an array of arguments compiles to vector code (glibc's scalar expf does not), and each
 * element's result is the same whatever the vector width. Callers clamp the argument.
 * Header only, static inline: no state, no allocation, any thread.
 */
#ifndef TANDEM_KERNELS_HOST_MATH_H
#define TANDEM_KERNELS_HOST_MATH_H

#include <math.h>
#include <stdint.h>
#include <string.h>

static inline float tandem_host_exp(float w) {
    float t = w * 1.44269504088896341f;
    int32_t n = (int32_t)(t + copysignf(0.5f, t)); /* nearest; |t| < 128 */
    float r = (w - (float)n * 0.693145751953125f) - (float)n * 1.42860682030941723e-6f;
    float p = 1.0f + r * (1.0f + r * (0.5f + r * (1.0f / 6 + r * (1.0f / 24 + r * (1.0f / 120 +
              r * (1.0f / 720 + r * (1.0f / 5040)))))));
    uint32_t bits = (uint32_t)(n + 127) << 23; /* 2^n */
    float scale;
    memcpy(&scale, &bits, sizeof scale);
    return p * scale;
}

#endif
