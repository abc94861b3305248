#ifndef LIMELIGHT_COPENBLAS_SHIM_H
#define LIMELIGHT_COPENBLAS_SHIM_H
// Debian's libopenblas-dev installs its CBLAS header as cblas-openblas.h in the
// multiarch include folder; plain cblas.h is an alternatives link that may point
// at another BLAS, which would lack openblas_set_num_threads.
#if __has_include(<cblas-openblas.h>)
#include <cblas-openblas.h>
#else
#include <cblas.h>
#endif
#endif
