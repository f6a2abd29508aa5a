/* The AVX-512 form (512-bit vectors) of the packed float product (fgemm_x86.inc). */
#include "backend/fgemm.h"

#if defined(__x86_64__) && defined(__GNUC__)
#define TGT __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl")))
#define SFX(name) name##_avx512
#define TP_ZMM 1
#include "backend/fgemm_x86.inc"

const tp_fgemm_form *tp_fgemm_form_avx512(void)
{
    return &form_avx512;
}
#else
const tp_fgemm_form *tp_fgemm_form_avx512(void)
{
    return NULL;
}
#endif
