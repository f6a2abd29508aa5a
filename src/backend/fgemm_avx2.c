/* The AVX2 + FMA + F16C form (256-bit vectors) of the packed float product (fgemm_x86.inc). */
#include "backend/fgemm.h"

#if defined(__x86_64__) && defined(__GNUC__)
#define TGT __attribute__((target("avx2,fma,f16c")))
#define SFX(name) name##_avx2
#define TP_ZMM 0
#include "backend/fgemm_x86.inc"

const tp_fgemm_form *tp_fgemm_form_avx2(void)
{
    return &form_avx2;
}
#else
const tp_fgemm_form *tp_fgemm_form_avx2(void)
{
    return NULL;
}
#endif
