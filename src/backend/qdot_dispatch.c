/* The choice of instruction-set form for the mat-mul kernels (backend/qdot.h, kernels.h). */
#include <pthread.h>
#include <stdatomic.h>
#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#endif

#include "backend/qdot.h"
#include "common/error.h"
#include "tensorplan/kernels.h"

static tp_qdot_ops g_ops[TP_ISA_COUNT];
static int g_have[TP_ISA_COUNT];
static int g_best;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static atomic_int g_chosen = -1; /* -1: the best form */

#if defined(__x86_64__) && defined(__GNUC__)
/* F16C (CPUID leaf 1, ECX bit 29): not every compiler's __builtin_cpu_supports names it. */
static int has_f16c(void)
{
    unsigned a, b, c, d;
    return __get_cpuid(1, &a, &b, &c, &d) && (c >> 29 & 1u);
}
#endif

/* __builtin_cpu_supports checks that the system saves the vector registers too. */
static int cpu_has(int isa)
{
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    int avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && has_f16c();
    if (isa == TP_ISA_AVX2)
        return avx2;
    if (isa == TP_ISA_AVX512)
        return avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
               __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni");
#endif
    return isa == TP_ISA_PORTABLE;
}

static void init_forms(void)
{
    tp_qdot_fill_portable(&g_ops[TP_ISA_PORTABLE]);
    g_have[TP_ISA_PORTABLE] = 1;
    g_have[TP_ISA_AVX2] = cpu_has(TP_ISA_AVX2) && tp_qdot_fill_avx2(&g_ops[TP_ISA_AVX2]);
    g_have[TP_ISA_AVX512] = cpu_has(TP_ISA_AVX512) && tp_qdot_fill_avx512(&g_ops[TP_ISA_AVX512]);
    for (int i = 0; i < TP_ISA_COUNT; i++)
        if (g_have[i])
            g_best = i;
}

const tp_qdot_ops *tp_qdot_ops_for(int isa)
{
    pthread_once(&g_once, init_forms);
    return isa >= 0 && isa < TP_ISA_COUNT && g_have[isa] ? &g_ops[isa] : NULL;
}

const tp_qdot_ops *tp_qdot_ops_current(void)
{
    return tp_qdot_ops_for(tp_kernels_isa());
}

int tp_kernels_isa_supported(int isa)
{
    return tp_qdot_ops_for(isa) != NULL;
}

tp_status tp_kernels_set_isa(int isa)
{
    if (isa < 0 || isa >= TP_ISA_COUNT) {
        atomic_store(&g_chosen, -1);
        return TP_OK;
    }
    if (!tp_kernels_isa_supported(isa))
        return tp_fail(TP_ERR_INVALID, "kernels: the %s form is not supported here",
                       tp_kernels_isa_name(isa));
    atomic_store(&g_chosen, isa);
    return TP_OK;
}

int tp_kernels_isa(void)
{
    pthread_once(&g_once, init_forms);
    int c = atomic_load(&g_chosen);
    return c >= 0 ? c : g_best;
}

const char *tp_kernels_isa_name(int isa)
{
    static const char *const names[TP_ISA_COUNT] = {"portable", "avx2", "avx512"};
    return isa >= 0 && isa < TP_ISA_COUNT ? names[isa] : NULL;
}
