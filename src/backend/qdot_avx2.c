/* The AVX2 + FMA + F16C form of the row dot products (qdot_x86.inc). */
#include "backend/qdot.h"

#if defined(__x86_64__) && defined(__GNUC__)
#define TGT __attribute__((target("avx2,fma,f16c")))
#define SFX(name) name##_avx2
#define TP_VNNI 0
#define TP_ZMM 0
#include "backend/qdot_x86.inc"

int tp_qdot_fill_avx2(tp_qdot_ops *ops)
{
    fill_avx2(ops);
    return 1;
}
#else
int tp_qdot_fill_avx2(tp_qdot_ops *ops)
{
    (void)ops;
    return 0;
}
#endif
