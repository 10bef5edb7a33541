/* The compiled row loops of sparsemax and α-entmax on the CPU (attnlib/normalizers/):
 * the threshold search of the forward map and the vector-Jacobian product of its backward.
 *
 * _entmax_loops.py, beside this file, compiles it once per machine with the system's C
 * compiler and loads it with ctypes. The algorithm is explained in normalizers/maps.py
 * ("threshold search"): Newton's method from below on the gaps z = x - max x. The first
 * pass reads a row from memory and writes its gaps; every later pass runs in cache.
 *
 * q = 1/(α-1) selects the power family: 1, 2 and 4 (α = 2, 1.5, 1.25) need no pow(), and
 * 0 stands for any other 1 < α ≤ 2. Each family is a compile-time constant of an inlined
 * copy of the loops, so that they are specialised and vectorised.
 *
 * The file includes itself (by name) once per dtype: REAL is the element type, NAME(f)
 * appends the dtype to a name. Built without -ffinite-math-only: -inf marks a masked key.
 */
#ifndef REAL

#include <float.h>
#include <math.h>
#include <stdint.h>

#define MAX_ITER 200
#define INLINE static inline __attribute__((always_inline))

#define REAL float
#define NAME(f) f##_f32
#define EPS FLT_EPSILON
#define POW powf
#define SQRT sqrtf
#include "_entmax_loops.c"
#undef REAL
#undef NAME
#undef EPS
#undef POW
#undef SQRT

#define REAL double
#define NAME(f) f##_f64
#define EPS DBL_EPSILON
#define POW pow
#define SQRT sqrt
#include "_entmax_loops.c"

#else

/* The powers (e^q, e^(q-1)) of a gap e >= 0; e^0 is read as [e > 0]. */
INLINE REAL NAME(powers)(int q, REAL e, REAL qm1, REAL *v)
{
    switch (q) {
    case 1:
        *v = e > 0 ? 1 : 0;
        return e;
    case 2:
        *v = e;
        return e * e;
    case 4: {
        REAL e2 = e * e;
        *v = e2 * e;
        return e2 * e2;
    }
    default:
        if (e > 0) {
            REAL b = POW(e, qm1);
            *v = b;
            return b * e;
        }
        *v = 0;
        return 0;
    }
}

/* N^(1-1/q) = N^(1-(α-1)) for the Newton step (in the dtype where no pow() is needed: a
 * float32 square root is quicker, and it is on the critical path of a short row). */
INLINE double NAME(root)(int q, REAL n, double am1)
{
    switch (q) {
    case 1:
        return 1.0;
    case 2:
        return SQRT(n);
    case 4: {
        REAL r = SQRT(n);
        return r * SQRT(r);
    }
    default:
        return pow((double)n, 1 - am1);
    }
}

/* The Jacobian's s = p^(2-α) (Eq. 14 of the sparse-continuous attention paper). */
INLINE REAL NAME(slope)(int q, REAL p, double am1)
{
    switch (q) {
    case 1:
        return p > 0 ? 1 : 0;
    case 2:
        return SQRT(p);
    case 4: {
        REAL r = SQRT(p);
        return r * SQRT(r);
    }
    default:
        return p > 0 ? (REAL)pow((double)p, 1 - am1) : 0;
    }
}

/* One Newton pass over a row: the sums of w = e^q and v = e^(q-1) at the threshold t, with
 * w kept in buf where it needs pow() (q = 0). The gaps are src - m, written to gaps in the
 * first pass (first = 1), and src itself in the later ones. */
INLINE void NAME(pass)(int q, int first, const REAL *restrict src, REAL m,
                       REAL *restrict gaps, int64_t cols, REAL c, REAL t, REAL qm1,
                       REAL *restrict buf, REAL *sum_w, REAL *sum_v)
{
    /* Summed in double: the vectorised sum's order (the machine's vector width, and
     * whether -inf keys pad the row) then leaves no trace in a float32 result. */
    double sw = 0, sv = 0;
    for (int64_t j = 0; j < cols; j++) {
        REAL z = src[j];
        if (first) {
            z -= m;
            gaps[j] = z;
        }
        REAL e = c * (z - t), v;
        REAL w = NAME(powers)(q, e > 0 ? e : 0, qm1, &v);
        if (q == 0)
            buf[j] = w;
        sw += w;
        sv += v;
    }
    *sum_w = (REAL)sw;
    *sum_v = (REAL)sv;
}

/* α-entmax of each row of x (rows × cols, contiguous) into p. top holds the row maxima,
 * am1 α - 1 per row; buf (cols entries) keeps the last pass's weights where they need
 * pow() (q = 0) and is not read otherwise. */
INLINE void NAME(forward)(int q, const REAL *x, const REAL *top, const double *am1,
                          REAL *p, REAL *buf, int64_t rows, int64_t cols)
{
    const int keep = q == 0;
    for (int64_t i = 0; i < rows; i++) {
        const REAL *xr = x + i * cols;
        REAL *pr = p + i * cols;
        const REAL m = top[i];
        const double a = am1[i], qd = 1 / a;
        const REAL c = (REAL)a, qm1 = (REAL)(qd - 1);
        double t = -qd; /* below the threshold: no weight exceeds one */
        const double tol = 8 * EPS * qd;
        REAL n = 1;
        for (int it = 0; it < MAX_ITER; it++) {
            REAL sum_w = 0, sum_v = 0;
            /* The first pass also writes the gaps to the row maximum into p, where the
             * later passes read them in cache: gaps that are exact (Sterbenz) for every
             * score that can carry weight, whatever the offset of the row. */
            if (it == 0)
                NAME(pass)(q, 1, xr, m, pr, cols, c, (REAL)t, qm1, buf, &sum_w, &sum_v);
            else
                NAME(pass)(q, 0, pr, 0, 0, cols, c, (REAL)t, qm1, buf, &sum_w, &sum_v);
            n = sum_w;
            /* (g - 1) / -g'(t), in units of x */
            const double step = ((double)n - NAME(root)(q, n, a)) / (a * (double)sum_v);
            if (step <= tol) /* t is the threshold */
                break;
            t += step;
        }
        const REAL tt = (REAL)t, scale = 1 / n;
        for (int64_t j = 0; j < cols; j++) {
            if (keep) {
                pr[j] = buf[j] * scale;
            } else {
                REAL e = c * (pr[j] - tt), v;
                pr[j] = NAME(powers)(q, e > 0 ? e : 0, qm1, &v) * scale;
            }
        }
    }
}

/* The vector-Jacobian product (Diag(s) - s sᵀ/1ᵀs) g of each row, s = p^(2-α). */
INLINE void NAME(backward)(int q, const REAL *p, const REAL *g, const double *am1,
                           REAL *out, int64_t rows, int64_t cols)
{
    for (int64_t i = 0; i < rows; i++) {
        const REAL *pr = p + i * cols, *gr = g + i * cols;
        REAL *o = out + i * cols;
        const double a = am1[i];
        double s_sum = 0, sg_sum = 0; /* in double, as the forward pass's sums */
        for (int64_t j = 0; j < cols; j++) {
            REAL s = NAME(slope)(q, pr[j], a);
            o[j] = s;
            s_sum += s;
            sg_sum += s * gr[j];
        }
        const REAL mean = (REAL)(sg_sum / s_sum);
        for (int64_t j = 0; j < cols; j++)
            o[j] *= gr[j] - mean;
    }
}

/* The entry points: one specialised copy of the loops per family. */
void NAME(entmax_forward)(int q, const REAL *x, const REAL *top, const double *am1,
                          REAL *p, REAL *buf, int64_t rows, int64_t cols)
{
    switch (q) {
    case 1:
        NAME(forward)(1, x, top, am1, p, buf, rows, cols);
        break;
    case 2:
        NAME(forward)(2, x, top, am1, p, buf, rows, cols);
        break;
    case 4:
        NAME(forward)(4, x, top, am1, p, buf, rows, cols);
        break;
    default:
        NAME(forward)(0, x, top, am1, p, buf, rows, cols);
    }
}

void NAME(entmax_backward)(int q, const REAL *p, const REAL *g, const double *am1,
                           REAL *out, int64_t rows, int64_t cols)
{
    switch (q) {
    case 1:
        NAME(backward)(1, p, g, am1, out, rows, cols);
        break;
    case 2:
        NAME(backward)(2, p, g, am1, out, rows, cols);
        break;
    case 4:
        NAME(backward)(4, p, g, am1, out, rows, cols);
        break;
    default:
        NAME(backward)(0, p, g, am1, out, rows, cols);
    }
}

#endif
