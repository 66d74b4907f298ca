// Deterministic log and exp built from + - * / and exact frexp/ldexp only, so every platform
// (glibc with or without FMA paths, musl in WASM) produces the same bits. The platform libm must
// not be used for simulated quantities: glibc picks FMA code paths at run time (toolchain.md §6).
#pragma once

namespace gpuscale {

// Natural logarithm; det_log(0) = -inf, negative or NaN input gives NaN. Error < 2 ulp.
double det_log(double x);
// e^x; overflows to +inf above ~709.78, underflows to 0 below ~-745. Error < 2 ulp.
double det_exp(double x);
// x^y for x > 0 as det_exp(y * det_log(x)).
double det_pow(double x, double y);

}  // namespace gpuscale
