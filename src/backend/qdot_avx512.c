/* The AVX-512 form (F, BW, VL, VNNI; on 256-bit vectors, with vpdpwssd) of the row dot products (qdot_x86.inc). */
#include "backend/qdot.h"

#if defined(__x86_64__) && defined(__GNUC__)
#define TGT __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")))
#define SFX(name) name##_avx512
#define TP_VNNI 1
#define TP_ZMM 1
#include "backend/qdot_x86.inc"

int tp_qdot_fill_avx512(tp_qdot_ops *ops)
{
    fill_avx512(ops);
    return 1;
}
#else
int tp_qdot_fill_avx512(tp_qdot_ops *ops)
{
    (void)ops;
    return 0;
}
#endif
